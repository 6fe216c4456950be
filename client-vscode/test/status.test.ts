import { describe, expect, it } from "vitest";
import { lensTitle, statusView } from "../src/status";
import type { WorkflowRow } from "../src/workflows";

const row = (over: Partial<WorkflowRow>): WorkflowRow => ({ workflow_id: "w1", running: false, status: "complete", ...over });

describe("language status item", () => {
  it("shows version and rule count when idle", () => {
    expect(statusView("running", { version: "0.1.0", rules: 57, rows: [row({})] }))
      .toEqual({ text: "$(check) Baton", detail: "baton-lsp 0.1.0 · 57 rules", severity: "information", busy: false });
  });

  it("shows the running workflow and its state", () => {
    const v = statusView("running", { version: "0.1.0", rules: 57, rows: [row({ running: true, state: "implement", description: "add a greeting" })] });
    expect(v.text).toBe("$(sync~spin) Baton: implement");
    expect(v.detail).toBe("running: add a greeting (implement) · baton-lsp 0.1.0 · 57 rules");
    expect(v.busy).toBe(true);
    const two = statusView("running", { rows: [row({ running: true }), row({ workflow_id: "w2", running: true })] });
    expect(two.text).toBe("$(sync~spin) Baton: 2 workflows");
    expect(two.detail).toBe("running: w1 and 1 more");
  });

  it("names the running workflow's state in the server's words", () => {
    const v = statusView("running", { rows: [row({ running: true, state: "implement", text: "implementing · wave 2/3 · 2/4 phases", description: "add a greeting" })] });
    expect(v.text).toBe("$(sync~spin) Baton: implementing · wave 2/3 · 2/4 phases");
    expect(v.detail).toBe("running: add a greeting (implementing · wave 2/3 · 2/4 phases)");
  });

  it("shows why the server is not running", () => {
    expect(statusView("failed", { error: "Baton: no Python found.", rows: [] }))
      .toMatchObject({ text: "$(error) Baton", detail: "Baton: no Python found.", severity: "error" });
    expect(statusView("starting", { source: "PATH", rows: [] })).toMatchObject({ busy: true, detail: "from PATH" });
  });
});

describe("lens titles", () => {
  it("turn the server's marks into codicons, which VS Code renders in lens titles", () => {
    expect(lensTitle("⏸ interrupted")).toBe("$(debug-pause) interrupted");
    expect(lensTitle("⏸ cancelled here (bash system)")).toBe("$(debug-pause) cancelled here (bash system)");
    expect(lensTitle("✗ hard barrier: summary missing")).toBe("$(error) hard barrier: summary missing");
    expect(lensTitle("✓ done in 41 s")).toBe("$(check) done in 41 s");
    expect(lensTitle("⟳ running (attempt 2)")).toBe("$(sync~spin) running (attempt 2)");
    expect(lensTitle("4 phases · 3 waves")).toBe("4 phases · 3 waves");
  });
});
