// What the real vscode-languageclient (not a mock) announces at `initialize`: the server
// offers quick fixes that create files (a missing agent, a linked file) only to a client whose
// workspace edits carry `documentChanges` and the `create` resource operation.
import Module, { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// The library is CommonJS and loads `vscode` with Node's own `require`, which the vitest
// alias to the fake API does not reach: hand that one name the same fake, already loaded.
// The oldest VS Code the extension supports (package.json `engines`): the library checks it.
const fake: Record<string, unknown> = { ...(await import("./vscode")), version: "1.82.0" };
// Names the small fake lacks are placeholders (a class the library extends at load, an event
// to subscribe to in its constructor): only the capabilities the client computes are read.
class Placeholder {}
const disposable = () => ({ dispose: () => undefined });
const within = (target: Record<string, unknown>): Record<string, unknown> => new Proxy(target, {
  get: (t, name: string) => name in t ? t[name] : disposable,
});
const api = new Proxy(fake, {
  get: (target, name: string) => {
    const value = target[name];
    if (value === undefined) return Placeholder;
    return typeof value === "object" && value !== null ? within(value as Record<string, unknown>) : value;
  },
});
const sentinel = fileURLToPath(new URL("./vscode.fake.cjs", import.meta.url));
type Resolve = (request: string, ...rest: unknown[]) => string;
const mod = Module as unknown as { _resolveFilename: Resolve };
const original = mod._resolveFilename;
mod._resolveFilename = (request, ...rest) => request === "vscode" ? sentinel : original(request, ...rest);
const require = createRequire(import.meta.url);
require.cache[sentinel] = { id: sentinel, filename: sentinel, loaded: true, exports: api } as NodeJS.Module;

const { BatonLanguageClient } = await import("../src/server");

describe("client capabilities", () => {
  afterAll(() => {
    mod._resolveFilename = original;
    delete require.cache[sentinel];
  });

  it("announce CreateFile in workspace edits", () => {
    const client = new BatonLanguageClient("baton", "Baton", { command: "true" }, {});
    const caps = (client as unknown as { computeClientCapabilities(): {
      workspace?: { workspaceEdit?: { documentChanges?: boolean; resourceOperations?: string[] } };
    } }).computeClientCapabilities();
    expect(caps.workspace?.workspaceEdit?.documentChanges).toBe(true);
    expect(caps.workspace?.workspaceEdit?.resourceOperations).toContain("create");
  });
});
