// Which process runs the language server, and whether it is usable. Pure: the adapter
// (server.ts) supplies the settings, the Python extension's answer and a PATH lookup.

export type ServerSource = "baton.server.path" | "baton.interpreter" | "Python extension" | "PATH";

export interface ServerCommand {
  command: string;
  args: string[];
  source: ServerSource;
  /** The interpreter, when the server is Python code (pip-installed or bundled). */
  python?: string;
  /** Runs the server bundled in the extension (bundled/libs), nothing installed. */
  bundled?: boolean;
}

export interface DiscoveryInput {
  serverPath?: string | null;
  interpreter?: string | null;
  /** The Python extension's active environment executable, when that extension is installed. */
  pythonExtension?: string | null;
  workspaceFolder?: string;
  home?: string;
  env?: Record<string, string | undefined>;
  /** Absolute path of an executable on PATH, or undefined. */
  which: (name: string) => string | undefined;
  /** The bundled server's bootstrap (bundled/tool/baton_bootstrap.py), when this build of the
   * extension carries one (a platform-specific .vsix); undefined in a build without it. */
  bundle?: string;
}

/** `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`, as in VS Code's own
 * settings, so a checked-in `.vscode/settings.json` can point at the project's venv. */
export function expandPath(value: string, input: Pick<DiscoveryInput, "workspaceFolder" | "home" | "env">): string {
  let out = value.trim();
  if (input.home && (out === "~" || out.startsWith("~/"))) {
    out = input.home + out.slice(1);
  }
  out = out.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, key: string, name?: string) => {
    if (key === "workspaceFolder") return input.workspaceFolder ?? whole;
    if (key === "userHome") return input.home ?? whole;
    return (name && input.env?.[name]) ?? "";
  });
  return out;
}

function nonEmpty(value: string | null | undefined): value is string {
  return typeof value === "string" && value.trim() !== "";
}

/** The bundled server run by `python`: isolated (`-I`: no user site-packages, no PYTHONPATH,
 * no cwd on sys.path), so only the standard library and bundled/libs are importable. */
export function bundledCommand(python: string, bundle: string, source: ServerSource): ServerCommand {
  return { command: python, args: ["-I", bundle, "-m", "baton_lsp", "lsp"], source, python, bundled: true };
}

/** The server command in the documented order: `baton.server.path`; `baton.interpreter` as
 * `python -m baton_lsp` (a pip-installed server wins there, see `fallbackToBundle`); then the
 * bundled server with the Python extension's environment, else `python3`/`python` on PATH.
 * Undefined when no Python is found. */
export function discoverServer(input: DiscoveryInput): ServerCommand | undefined {
  return discoverServers(input)[0];
}

/** Every candidate in that order: one for an explicit setting; else the Python extension's
 * environment, `python3` and `python` on PATH (each once), so that when one cannot run the
 * bundled server (too old, gone) the next is tried (see `tryNext`). */
export function discoverServers(input: DiscoveryInput): ServerCommand[] {
  if (nonEmpty(input.serverPath)) {
    return [{ command: expandPath(input.serverPath, input), args: ["lsp"], source: "baton.server.path" }];
  }
  if (nonEmpty(input.interpreter)) {
    const p = expandPath(input.interpreter, input);
    return [{ command: p, args: ["-m", "baton_lsp", "lsp"], source: "baton.interpreter", python: p }];
  }
  const python = (p: string, source: ServerSource): ServerCommand => input.bundle
    ? bundledCommand(p, input.bundle, source)
    : { command: p, args: ["-m", "baton_lsp", "lsp"], source, python: p };
  const found: ServerCommand[] = [];
  const add = (p: string | null | undefined, source: ServerSource): void => {
    if (nonEmpty(p) && !found.some((c) => c.command === p)) found.push(python(p, source));
  };
  add(input.pythonExtension, "Python extension");
  add(input.which("python3"), "PATH");
  add(input.which("python"), "PATH");
  return found;
}

/** Whether a failed automatic candidate gives way to the next one: a Python that is gone or
 * that the bundle cannot serve. An explicit setting never does (its failure is reported). */
export function tryNext(cmd: ServerCommand, diagnosis: Diagnosis): boolean {
  return Boolean(cmd.bundled) && cmd.source !== "baton.interpreter" && !diagnosis.ok
    && (diagnosis.reason === "missing" || diagnosis.reason === "unsupported");
}

/** `baton.interpreter` without baton_lsp: the bundled server with that interpreter, instead of
 * an error (nothing to pip-install). Undefined when there is nothing to fall back to. */
export function fallbackToBundle(cmd: ServerCommand, diagnosis: Diagnosis, bundle: string | undefined): ServerCommand | undefined {
  if (!bundle || cmd.bundled || !cmd.python || diagnosis.ok || diagnosis.reason !== "not-installed") return undefined;
  return bundledCommand(cmd.python, bundle, cmd.source);
}

/** The server's argv with the log level (the server reads it from its command line only). */
export function withLogLevel(cmd: ServerCommand, level: string | null | undefined): string[] {
  const ok = typeof level === "string" && /^(debug|info|warning|error)$/i.test(level);
  return ok ? [...cmd.args, "--log-level", level.toUpperCase()] : cmd.args;
}

/** argv that prints the server's version without starting it. */
export function probeArgs(cmd: ServerCommand): string[] {
  if (cmd.bundled) return [...cmd.args.slice(0, cmd.args.indexOf("baton_lsp") + 1), "--version"];
  return cmd.python
    ? ["-c", "import baton_lsp; print(baton_lsp.__version__)"]
    : ["--version"];
}

/** The bootstrap's exit status for an interpreter it cannot serve (too old, not CPython, or a
 * minor version this .vsix has no compiled libraries for): bundled/tool/baton_bootstrap.py. */
export const EXIT_UNSUPPORTED_PYTHON = 3;

export interface ProbeResult {
  /** Spawn error code (ENOENT, EACCES, ETIMEDOUT…), when the process did not run. */
  error?: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export type Diagnosis =
  | { ok: true; version: string }
  | { ok: false; reason: "missing" | "not-installed" | "unsupported" | "version" | "broken"; message: string };

/** `0.1.0` from `0.1.0` or `baton 0.1.0`. */
export function parseVersion(stdout: string): string | undefined {
  const m = /(\d+\.\d+\.\d+(?:[.-]?[A-Za-z0-9.+-]*)?)/.exec(stdout.trim().split(/\r?\n/).pop() ?? "");
  return m?.[1];
}

/** Same major.minor: the protocol (commands, settings) only changes with a minor release. */
export function versionCompatible(server: string, client: string): boolean {
  const mm = (v: string) => v.split(".").slice(0, 2).join(".");
  return mm(server) === mm(client);
}

/** Windows' App Execution Alias `python3.exe`/`python.exe` under `…\\Microsoft\\WindowsApps\\`
 * when no Store Python is installed: it prints that Python was not found and exits 9009. It
 * counts as no Python at all (the next candidate is tried), not as a broken one. A Store
 * Python that is installed sits behind the same path and runs normally. */
export function isStoreStub(command: string, probe: ProbeResult): boolean {
  return /[\\/]Microsoft[\\/]WindowsApps[\\/][^\\/]*$/i.test(command)
    && (probe.exitCode === 9009 || /Microsoft Store|App Execution Alias/i.test(probe.stderr));
}

export function diagnose(cmd: ServerCommand, probe: ProbeResult, clientVersion: string): Diagnosis {
  const what = cmd.bundled ? `bundled server with the Python interpreter ${cmd.command}`
    : cmd.python ? `Python interpreter ${cmd.command}` : `baton executable ${cmd.command}`;
  const from = `(from ${cmd.source})`;
  if (probe.error) {
    const exe = cmd.python ? `Python interpreter ${cmd.command}` : what;
    return {
      ok: false, reason: "missing",
      message: probe.error === "ENOENT"
        ? `Baton: the ${exe} ${from} does not exist.`
        : `Baton: could not run the ${exe} ${from}: ${probe.error}.`,
    };
  }
  if (probe.exitCode !== 0) {
    const tail = probe.stderr.trim().split(/\r?\n/).slice(-1)[0] ?? "";
    if (isStoreStub(cmd.command, probe)) {
      return { ok: false, reason: "missing",
        message: `Baton: ${cmd.command} ${from} is Windows' placeholder that offers Python from the Microsoft Store, not an interpreter.` };
    }
    if (cmd.bundled && probe.exitCode === EXIT_UNSUPPORTED_PYTHON) {
      return { ok: false, reason: "unsupported", message: `${tail.startsWith("Baton:") ? tail : `Baton: ${tail}`} ${from}` };
    }
    return /No module named '?baton_lsp'?/.test(probe.stderr)
      ? { ok: false, reason: "not-installed", message: `Baton: baton-lsp is not installed for the ${what} ${from}.` }
      : { ok: false, reason: "broken", message: `Baton: the ${what} ${from} failed (exit ${probe.exitCode}): ${tail}` };
  }
  const version = parseVersion(probe.stdout);
  if (!version) {
    return { ok: false, reason: "broken",
      message: `Baton: the ${what} ${from} printed no version: ${probe.stdout.trim() || "nothing"}` };
  }
  if (!versionCompatible(version, clientVersion)) {
    return { ok: false, reason: "version",
      message: `Baton: the ${what} ${from} has baton-lsp ${version}; this extension needs ${clientVersion.split(".").slice(0, 2).join(".")}.x.` };
  }
  return { ok: true, version };
}

/** Absolute path of `name` on `pathVar`, with an injected executable test so it stays pure.
 * On Windows pass `;` and the PATHEXT extensions (`claude` is `claude.cmd` there). */
export function findOnPath(name: string, pathVar: string | undefined, isExecutable: (p: string) => boolean,
  sep = ":", extensions: string[] = [""]): string | undefined {
  const slash = sep === ";" ? "\\" : "/";
  for (const dir of (pathVar ?? "").split(sep)) {
    if (!dir) continue;
    for (const ext of extensions) {
      const candidate = `${dir.replace(/[\\/]+$/, "")}${slash}${name}${ext}`;
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}
