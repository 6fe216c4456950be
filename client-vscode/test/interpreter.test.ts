import { describe, expect, it } from "vitest";
import {
  EXIT_UNSUPPORTED_PYTHON, bundledCommand, withLogLevel, diagnose, discoverServer, discoverServers, expandPath, fallbackToBundle,
  findOnPath, isStoreStub, parseVersion, probeArgs, tryNext, versionCompatible,
} from "../src/interpreter";

const which = (found: Record<string, string>) => (name: string) => found[name];

describe("discoverServer", () => {
  it("prefers baton.server.path, run as `baton lsp`", () => {
    const cmd = discoverServer({ serverPath: "/opt/baton", interpreter: "/venv/bin/python", pythonExtension: "/ext/python", which: which({ python3: "/usr/bin/python3" }) });
    expect(cmd).toEqual({ command: "/opt/baton", args: ["lsp"], source: "baton.server.path" });
  });

  it("then baton.interpreter, with ${workspaceFolder} expanded", () => {
    const cmd = discoverServer({ interpreter: "${workspaceFolder}/.venv/bin/python", pythonExtension: "/ext/python", workspaceFolder: "/proj", which: which({}) });
    expect(cmd).toEqual({ command: "/proj/.venv/bin/python", args: ["-m", "baton_lsp", "lsp"], source: "baton.interpreter", python: "/proj/.venv/bin/python" });
  });

  it("then the Python extension's environment, then python3 on PATH, then python", () => {
    expect(discoverServer({ interpreter: "  ", pythonExtension: "/ext/python", which: which({ python3: "/usr/bin/python3" }) })?.source).toBe("Python extension");
    expect(discoverServer({ pythonExtension: null, which: which({ python3: "/usr/bin/python3", python: "/usr/bin/python" }) })?.command).toBe("/usr/bin/python3");
    expect(discoverServer({ which: which({ python: "/usr/bin/python" }) })?.source).toBe("PATH");
  });

  it("finds nothing when no Python exists", () => {
    expect(discoverServer({ serverPath: "", interpreter: null, which: which({}) })).toBeUndefined();
    expect(discoverServer({ serverPath: "", interpreter: null, bundle: "/ext/b.py", which: which({}) })).toBeUndefined();
  });
});

describe("the bundled server", () => {
  const bundle = "/ext/bundled/tool/baton_bootstrap.py";
  const bundled = (python: string, source: string) => ({
    command: python, args: ["-I", bundle, "-m", "baton_lsp", "lsp"], source, python, bundled: true,
  });

  it("runs with the Python extension's interpreter, else python3, else python on PATH", () => {
    expect(discoverServer({ pythonExtension: "/ext/python", bundle, which: which({ python3: "/usr/bin/python3" }) }))
      .toEqual(bundled("/ext/python", "Python extension"));
    expect(discoverServer({ pythonExtension: null, bundle, which: which({ python3: "/usr/bin/python3", python: "/usr/bin/python" }) }))
      .toEqual(bundled("/usr/bin/python3", "PATH"));
    expect(discoverServer({ bundle, which: which({ python: "/usr/bin/python" }) })).toEqual(bundled("/usr/bin/python", "PATH"));
  });

  it("leaves baton.interpreter and baton.server.path to what is installed there", () => {
    expect(discoverServer({ interpreter: "/venv/bin/python", bundle, which: which({}) }))
      .toEqual({ command: "/venv/bin/python", args: ["-m", "baton_lsp", "lsp"], source: "baton.interpreter", python: "/venv/bin/python" });
    expect(discoverServer({ serverPath: "/opt/baton", bundle, which: which({}) })?.args).toEqual(["lsp"]);
  });

  it("lists every Python it found, once each, and tries the next when one cannot serve it", () => {
    const all = discoverServers({ pythonExtension: "/usr/bin/python3", bundle,
      which: which({ python3: "/usr/bin/python3", python: "/usr/local/bin/python" }) });
    expect(all).toEqual([bundled("/usr/bin/python3", "Python extension"), bundled("/usr/local/bin/python", "PATH")]);
    const tooOld = diagnose(all[0], { exitCode: EXIT_UNSUPPORTED_PYTHON, stdout: "", stderr: "Baton: needs CPython 3.11\n" }, "0.1.0");
    expect(tryNext(all[0], tooOld)).toBe(true);
    expect(tryNext(all[0], diagnose(all[0], { error: "ENOENT", exitCode: null, stdout: "", stderr: "" }, "0.1.0"))).toBe(true);
    expect(tryNext(all[0], diagnose(all[0], { exitCode: 1, stdout: "", stderr: "SyntaxError: x\n" }, "0.1.0"))).toBe(false);
    expect(tryNext(all[0], { ok: true, version: "0.1.0" })).toBe(false);
    // An explicit interpreter is the user's choice: its failure is reported, not skipped.
    expect(discoverServers({ interpreter: "/venv/bin/python", bundle, which: which({ python3: "/usr/bin/python3" }) })).toHaveLength(1);
    const explicit = bundledCommand("/old/python", bundle, "baton.interpreter");
    expect(tryNext(explicit, diagnose(explicit, { exitCode: EXIT_UNSUPPORTED_PYTHON, stdout: "", stderr: "x" }, "0.1.0"))).toBe(false);
    expect(discoverServers({ bundle, which: which({}) })).toEqual([]);
  });

  it("skips Windows' Microsoft Store placeholder python3 and tries the next Python", () => {
    const stubPath = "C:\\Users\\u\\AppData\\Local\\Microsoft\\WindowsApps\\python3.exe";
    const all = discoverServers({ bundle, which: which({ python3: stubPath, python: "C:\\Python312\\python.exe" }) });
    const stub = { exitCode: 9009, stdout: "",
      stderr: "Python was not found; run without arguments to install from the Microsoft Store, or disable this shortcut from Settings > Manage App Execution Aliases.\r\n" };
    const d = diagnose(all[0], stub, "0.1.0");
    expect(d).toMatchObject({ ok: false, reason: "missing" });
    expect(!d.ok && d.message).toContain("placeholder that offers Python from the Microsoft Store");
    expect(tryNext(all[0], d)).toBe(true);
    // The same exit elsewhere, or a real Store Python's failure, stays a broken interpreter.
    expect(isStoreStub("C:\\Python312\\python.exe", stub)).toBe(false);
    expect(isStoreStub(stubPath, { exitCode: 1, stdout: "", stderr: "SyntaxError: x" })).toBe(false);
  });

  it("takes over from baton.interpreter when baton_lsp is not installed there, and only then", () => {
    const cmd = discoverServer({ interpreter: "/bare/bin/python", bundle, which: which({}) })!;
    const missing = diagnose(cmd, { exitCode: 1, stdout: "", stderr: "No module named baton_lsp" }, "0.1.0");
    expect(fallbackToBundle(cmd, missing, bundle)).toEqual(bundled("/bare/bin/python", "baton.interpreter"));
    expect(fallbackToBundle(cmd, missing, undefined)).toBeUndefined(); // a build without the bundle
    const old = diagnose(cmd, { exitCode: 0, stdout: "0.0.9", stderr: "" }, "0.1.0");
    expect(fallbackToBundle(cmd, old, bundle)).toBeUndefined(); // an installed server is the user's choice
    expect(fallbackToBundle(cmd, { ok: true, version: "0.1.0" }, bundle)).toBeUndefined();
    const exe = { command: "/opt/baton", args: ["lsp"], source: "baton.server.path" as const };
    expect(fallbackToBundle(exe, { ok: false, reason: "not-installed", message: "" }, bundle)).toBeUndefined();
    const b = bundled("/bare/bin/python", "baton.interpreter") as ReturnType<typeof bundledCommand>;
    expect(fallbackToBundle(b, missing, bundle)).toBeUndefined(); // no loop
  });
});

describe("expandPath", () => {
  it("expands ~, ${userHome} and ${env:NAME}", () => {
    const ctx = { home: "/home/u", env: { VENV: "/v" }, workspaceFolder: "/w" };
    expect(expandPath("~/py", ctx)).toBe("/home/u/py");
    expect(expandPath("${userHome}/a/${env:VENV}/b", ctx)).toBe("/home/u/a//v/b");
    expect(expandPath("${env:MISSING}x", ctx)).toBe("x");
    expect(expandPath("~user/py", ctx)).toBe("~user/py");
  });
});

describe("probe and diagnosis", () => {
  const py = { command: "/venv/bin/python", args: ["-m", "baton_lsp", "lsp"], source: "baton.interpreter" as const, python: "/venv/bin/python" };
  const exe = { command: "/opt/baton", args: ["lsp"], source: "baton.server.path" as const };

  it("probes the version without starting the server", () => {
    expect(probeArgs(py)).toEqual(["-c", "import baton_lsp; print(baton_lsp.__version__)"]);
    expect(probeArgs(exe)).toEqual(["--version"]);
  });

  it("accepts a matching version", () => {
    expect(diagnose(py, { exitCode: 0, stdout: "0.1.0\n", stderr: "" }, "0.1.0")).toEqual({ ok: true, version: "0.1.0" });
    expect(diagnose(exe, { exitCode: 0, stdout: "baton 0.1.3\n", stderr: "" }, "0.1.0")).toEqual({ ok: true, version: "0.1.3" });
  });

  it("says the interpreter does not exist", () => {
    const d = diagnose(py, { error: "ENOENT", exitCode: null, stdout: "", stderr: "" }, "0.1.0");
    expect(d).toMatchObject({ ok: false, reason: "missing" });
    expect(!d.ok && d.message).toContain("/venv/bin/python (from baton.interpreter) does not exist");
  });

  it("says when baton_lsp is not installed, offering no pip install (not on PyPI)", () => {
    const d = diagnose(py, { exitCode: 1, stdout: "", stderr: "Traceback…\nModuleNotFoundError: No module named 'baton_lsp'\n" }, "0.1.0");
    expect(d).toEqual({ ok: false, reason: "not-installed",
      message: "Baton: baton-lsp is not installed for the Python interpreter /venv/bin/python (from baton.interpreter)." });
  });

  it("rejects another minor version", () => {
    expect(diagnose(py, { exitCode: 0, stdout: "0.2.0", stderr: "" }, "0.1.0")).toMatchObject({ ok: false, reason: "version" });
    expect(diagnose(exe, { exitCode: 0, stdout: "baton 1.1.0", stderr: "" }, "0.1.0")).toMatchObject({ ok: false, reason: "version" });
  });

  it("reports a crash with the last stderr line", () => {
    const d = diagnose(py, { exitCode: 1, stdout: "", stderr: "SyntaxError: bad\n" }, "0.1.0");
    expect(d).toMatchObject({ ok: false, reason: "broken" });
    expect(!d.ok && d.message).toContain("SyntaxError: bad");
  });

  it("parses versions and compares major.minor", () => {
    expect(parseVersion("baton 0.1.0")).toBe("0.1.0");
    expect(parseVersion("warning\n1.2.3rc1")).toBe("1.2.3rc1");
    expect(parseVersion("nothing")).toBeUndefined();
    expect(versionCompatible("0.1.9", "0.1.0")).toBe(true);
    expect(versionCompatible("0.2.0", "0.1.0")).toBe(false);
  });

  it("probes the bundled server through its bootstrap, isolated", () => {
    const b = bundledCommand("/usr/bin/python3", "/ext/bundled/tool/baton_bootstrap.py", "PATH");
    expect(probeArgs(b)).toEqual(["-I", "/ext/bundled/tool/baton_bootstrap.py", "-m", "baton_lsp", "--version"]);
    expect(diagnose(b, { exitCode: 0, stdout: "baton 0.1.0\n", stderr: "" }, "0.1.0")).toEqual({ ok: true, version: "0.1.0" });
  });

  it("passes on the bootstrap's message for a Python it cannot serve", () => {
    const b = bundledCommand("/usr/bin/python3", "/ext/bundled/tool/baton_bootstrap.py", "PATH");
    const stderr = "Baton: the bundled server needs CPython 3.11 or 3.12; /usr/bin/python3 is cpython 3.10. Select another interpreter.\n";
    const d = diagnose(b, { exitCode: EXIT_UNSUPPORTED_PYTHON, stdout: "", stderr }, "0.1.0");
    expect(d).toEqual({ ok: false, reason: "unsupported",
      message: "Baton: the bundled server needs CPython 3.11 or 3.12; /usr/bin/python3 is cpython 3.10. Select another interpreter. (from PATH)" });
  });
});

describe("withLogLevel", () => {
  it("passes a valid level on the command line, upper-cased", () => {
    const cmd = { command: "/p", args: ["-m", "baton_lsp", "lsp"], source: "PATH" as const, python: "/p" };
    expect(withLogLevel(cmd, "debug")).toEqual(["-m", "baton_lsp", "lsp", "--log-level", "DEBUG"]);
    expect(withLogLevel(cmd, "verbose")).toEqual(["-m", "baton_lsp", "lsp"]);
    expect(withLogLevel(cmd, undefined)).toEqual(["-m", "baton_lsp", "lsp"]);
  });
});

describe("findOnPath", () => {
  it("returns the first executable match and skips empty entries", () => {
    const exists = new Set(["/b/claude", "/c/claude"]);
    expect(findOnPath("claude", "/a::/b/:/c", (p) => exists.has(p))).toBe("/b/claude");
    expect(findOnPath("codex", "/a:/b", (p) => exists.has(p))).toBeUndefined();
    expect(findOnPath("x", undefined, () => true)).toBeUndefined();
  });

  it("tries PATHEXT extensions with Windows separators", () => {
    const exists = new Set(["C:\\tools\\claude.CMD"]);
    expect(findOnPath("claude", "C:\\bin;C:\\tools\\", (p) => exists.has(p), ";", ["", ".EXE", ".CMD"])).toBe("C:\\tools\\claude.CMD");
  });
});
