// Which process runs the language server, and whether it is usable. Pure: the adapter
// (server.ts) supplies the settings, the Python extension's answer and a PATH lookup.

export type ServerSource = "baton.server.path" | "baton.interpreter" | "Python extension" | "PATH";

export interface ServerCommand {
  command: string;
  args: string[];
  source: ServerSource;
  /** The interpreter, when the server runs as `python -m baton_lsp` (pip can install into it). */
  python?: string;
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

/** The server command in the documented order: `baton.server.path`, `baton.interpreter`, the
 * Python extension's environment, `python3` on PATH. Undefined when none is available. */
export function discoverServer(input: DiscoveryInput): ServerCommand | undefined {
  if (nonEmpty(input.serverPath)) {
    return { command: expandPath(input.serverPath, input), args: ["lsp"], source: "baton.server.path" };
  }
  const python = (p: string, source: ServerSource): ServerCommand => ({
    command: p, args: ["-m", "baton_lsp", "lsp"], source, python: p,
  });
  if (nonEmpty(input.interpreter)) return python(expandPath(input.interpreter, input), "baton.interpreter");
  if (nonEmpty(input.pythonExtension)) return python(input.pythonExtension, "Python extension");
  const onPath = input.which("python3") ?? input.which("python");
  return onPath ? python(onPath, "PATH") : undefined;
}

/** The server's argv with the log level (the server reads it from its command line only). */
export function withLogLevel(cmd: ServerCommand, level: string | null | undefined): string[] {
  const ok = typeof level === "string" && /^(debug|info|warning|error)$/i.test(level);
  return ok ? [...cmd.args, "--log-level", level.toUpperCase()] : cmd.args;
}

/** argv that prints the server's version without starting it. */
export function probeArgs(cmd: ServerCommand): string[] {
  return cmd.python
    ? ["-c", "import baton_lsp; print(baton_lsp.__version__)"]
    : ["--version"];
}

export interface ProbeResult {
  /** Spawn error code (ENOENT, EACCES, ETIMEDOUT…), when the process did not run. */
  error?: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export type Diagnosis =
  | { ok: true; version: string }
  | { ok: false; reason: "missing" | "not-installed" | "version" | "broken"; message: string; canInstall: boolean };

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

export function diagnose(cmd: ServerCommand, probe: ProbeResult, clientVersion: string): Diagnosis {
  const what = cmd.python ? `Python interpreter ${cmd.command}` : `baton executable ${cmd.command}`;
  const from = `(from ${cmd.source})`;
  if (probe.error) {
    return {
      ok: false, reason: "missing", canInstall: false,
      message: probe.error === "ENOENT"
        ? `Baton: the ${what} ${from} does not exist.`
        : `Baton: could not run the ${what} ${from}: ${probe.error}.`,
    };
  }
  if (probe.exitCode !== 0) {
    const notInstalled = /No module named '?baton_lsp'?/.test(probe.stderr);
    const tail = probe.stderr.trim().split(/\r?\n/).slice(-1)[0] ?? "";
    return notInstalled
      ? { ok: false, reason: "not-installed", canInstall: Boolean(cmd.python),
          message: `Baton: baton-lsp is not installed for the ${what} ${from}.` }
      : { ok: false, reason: "broken", canInstall: Boolean(cmd.python),
          message: `Baton: the ${what} ${from} failed (exit ${probe.exitCode}): ${tail}` };
  }
  const version = parseVersion(probe.stdout);
  if (!version) {
    return { ok: false, reason: "broken", canInstall: Boolean(cmd.python),
      message: `Baton: the ${what} ${from} printed no version: ${probe.stdout.trim() || "nothing"}` };
  }
  if (!versionCompatible(version, clientVersion)) {
    return { ok: false, reason: "version", canInstall: Boolean(cmd.python),
      message: `Baton: the ${what} ${from} has baton-lsp ${version}; this extension needs ${clientVersion.split(".").slice(0, 2).join(".")}.x.` };
  }
  return { ok: true, version };
}

/** pip for exactly that interpreter (never a bare `pip`, which may belong to another one). */
export function installArgs(clientVersion: string): string[] {
  return ["-m", "pip", "install", "--upgrade", `baton-lsp==${clientVersion}`];
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
