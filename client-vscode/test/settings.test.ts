import { describe, expect, it } from "vitest";
import { initializationOptions, needsRestart, serverSettings } from "../src/settings";

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
