import { describe, expect, it } from "vitest";
import { initializationOptions, needsRestart, serverSettings } from "../src/settings";
import pkg from "../package.json";

const raw = {
  interpreter: "/venv/bin/python",
  server: { path: null },
  trace: { server: "verbose" },
  select: ["BTN1"],
  ignore: [],
  severity: { BTN105: "hint" },
  exclude: [],
  debounce: 300,
  logLevel: "debug",
  trustWorkspace: true,
  workflow: { runner: "claude", maxParallel: 2, timeout: null, implementTimeout: null, attempts: 5, defaultScope: "research-only" },
};

describe("serverSettings", () => {
  it("keeps the server's keys, drops client-only ones and unset workflow options", () => {
    expect(serverSettings(raw, true)).toEqual({
      select: ["BTN1"], ignore: [], severity: { BTN105: "hint" }, exclude: [], debounce: 300, logLevel: "debug",
      workflow: { runner: "claude", maxParallel: 2, attempts: 5 },
      trustWorkspace: true,
    });
  });

  it("takes trust from VS Code, never from a setting the workspace could ship", () => {
    expect(serverSettings(raw, false).trustWorkspace).toBe(false);
  });

  it("omits an all-default workflow table so the project's [workflow] applies", () => {
    const s = serverSettings({ workflow: { runner: null, maxParallel: null, defaultScope: "full-implementation" } }, true);
    expect(s).toEqual({ trustWorkspace: true });
  });
});

describe("initializationOptions", () => {
  it("carries trust twice: the flag and the settings", () => {
    const o = initializationOptions({ debounce: 150 }, true);
    expect(o).toEqual({ trusted: true, settings: { debounce: 150, trustWorkspace: true } });
  });
});

describe("needsRestart", () => {
  it("restarts for a different server executable or log level only", () => {
    expect(needsRestart((s) => s === "baton.interpreter")).toBe(true);
    expect(needsRestart((s) => s === "baton.server.path")).toBe(true);
    expect(needsRestart((s) => s === "baton.logLevel")).toBe(true);
    expect(needsRestart((s) => s === "baton.select" || s === "baton")).toBe(false);
  });
});

describe("the settings as the Settings editor shows them", () => {
  const props = (pkg.contributes.configuration as { properties: Record<string, { type: unknown; default: unknown; enum?: unknown[]; enumDescriptions?: string[] }> }).properties;

  it("offers the runner as named choices with descriptions and a default, never a literal null", () => {
    const runner = props["baton.workflow.runner"];
    expect(runner.enum).not.toContain(null);
    expect(runner.type).toBe("string");
    expect(runner.enum).toContain(runner.default);
    expect(runner.enumDescriptions).toHaveLength(runner.enum!.length);
    expect(runner.enum).toEqual(expect.arrayContaining(["auto", "claude", "codex", "gemini", "script"]));
  });

  it("gives the interpreter and the server path a text field (a plain string)", () => {
    for (const key of ["baton.interpreter", "baton.server.path"]) {
      expect(props[key].type).toBe("string");
      expect(props[key].default).toBe("");
    }
  });

  it("sends no runner for the default choice, so the project's [workflow] runner applies", () => {
    expect(serverSettings({ workflow: { runner: "project", timeout: 60 } }, true)).toEqual({ workflow: { timeout: 60 }, trustWorkspace: true });
    expect(serverSettings({ workflow: { runner: "codex" } }, true).workflow).toEqual({ runner: "codex" });
  });
});
