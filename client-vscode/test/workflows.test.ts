import { describe, expect, it } from "vitest";
import {
  AGENT_CLIS, SCOPES, describePreview, stepLabel, endedSince, failureReason, idArgs, isResumable, parseWorkflowChanged,
  eventText, progressText, runnerChoices, startArgs, type ResumePreview, type WorkflowRow,
} from "../src/workflows";
import previewJson from "./fixtures/preview.json";
import rowsJson from "./fixtures/rows.json";

const rows = rowsJson as WorkflowRow[];
const complete = rows.find((r) => r.status === "complete")!;
const failed = rows.find((r) => r.status === "failed")!;

describe("startArgs", () => {
  it("builds the one object the server validates", () => {
    expect(startArgs({ description: "  add a greeting ", scope: "full-implementation", runner: "script" }))
      .toEqual({ description: "add a greeting", scope: "full-implementation", runner: "script" });
    expect(startArgs({ description: "x", scope: "implement-only", plan: "/p.md", complexity: 2, workspace: "/ws" }))
      .toEqual({ description: "x", scope: "implement-only", plan: "/p.md", complexity: 2, workspace: "/ws" });
  });

  it("rejects what the server would reject, with a readable reason", () => {
    expect(() => startArgs({ description: "   ", scope: "full-implementation" })).toThrow(/needs a description/);
    expect(() => startArgs({ description: "x", scope: "everything" })).toThrow(/Unknown scope/);
    expect(() => startArgs({ description: "x", scope: "implement-only" })).toThrow(/needs a plan/);
    expect(() => startArgs({ description: "x", scope: "research-only", runner: "claude; rm -rf /" })).toThrow(/Invalid runner/);
    expect(() => startArgs({ description: "x", scope: "research-only", complexity: 5 })).toThrow(/1 to 4/);
  });

  it("offers exactly the server's scopes", () => {
    expect(SCOPES.map((s) => s.id).sort()).toEqual(["debug-only", "full-implementation", "implement-only",
      "research-and-plan", "research-and-revise", "research-only", "test-and-debug"]);
  });
});

describe("runnerChoices", () => {
  it("lists only agent CLIs found on PATH, plus script", () => {
    const found = (cli: string) => (cli === "codex" ? "/usr/local/bin/codex" : undefined);
    expect(runnerChoices(found).map((c) => c.id)).toEqual(["codex", "script"]);
    expect(runnerChoices(() => undefined).map((c) => c.id)).toEqual(["script"]);
    expect(runnerChoices(() => "/bin/x").map((c) => c.id)).toEqual([...AGENT_CLIS, "script"]);
  });

  it("puts the configured runner first", () => {
    expect(runnerChoices(() => "/bin/x", "script")[0].id).toBe("script");
    expect(runnerChoices(() => undefined, "claude").map((c) => c.id)).toEqual(["script"]);
  });
});

describe("rows", () => {
  it("knows what can be resumed and why it stopped", () => {
    expect(isResumable(failed)).toBe(true);
    expect(isResumable(complete)).toBe(false);
    expect(isResumable({ ...failed, running: true })).toBe(false);
    expect(isResumable({ ...failed, status: "interrupted" })).toBe(true);
    expect(failureReason(failed)).toMatch(/^failed in implement: wave 2: HARD BARRIER FAILED: artifact not found/);
    expect(failureReason({ ...failed, status: "cancelled" })).toBe("cancelled in implement");
    expect(idArgs({ workflow_id: "w1", workspace: "/ws" })).toEqual({ id: "w1", workspace: "/ws" });
    expect(idArgs({ workflow_id: "w1" })).toEqual({ id: "w1" });
  });

  it("decides that a run ended from the row, and a resume only from a newer checkpoint", () => {
    const row: WorkflowRow = { ...failed, followed: false }; // checkpoint 12
    expect(endedSince(row)).toBe(true);
    expect(endedSince(row, 12)).toBe(false); // the failure being resumed is not the resume's end
    expect(endedSince({ ...row, status: "complete", checkpoint: 19 }, 12)).toBe(true);
    expect(endedSince({ ...row, followed: true })).toBe(false);
    expect(endedSince({ ...row, running: true })).toBe(false);
    expect(endedSince({ ...row, status: "in_progress" })).toBe(false);
  });
});

describe("stepLabel", () => {
  it("says a step id the way the tree's rows do", () => {
    expect(stepLabel("implement.phase-2")).toBe("Phase 2");
    expect(stepLabel("implement.phase-2a")).toBe("Phase 2a");
    expect(stepLabel("research.0")).toBe("Research 0");
    expect(stepLabel("plan")).toBe("Plan");
  });
  it("names the failed phase, not its step id, in the retry question", () => {
    const d = describePreview({ workflow_id: "w", rerun: [{ step: "implement.phase-3", reason: "failed" }] }, "Retry", "add a farewell");
    expect(d.message).toBe('Retry Phase 3 of "add a farewell" and continue?');
  });
});

describe("describePreview", () => {
  it("names what runs again and what is kept, from the server's real preview", () => {
    const d = describePreview(previewJson as ResumePreview);
    expect(d.message).toBe(`Resume "${failed.workflow_id}" from implement?`);
    expect(describePreview(previewJson as ResumePreview, "Resume", "add a farewell").message).toBe('Resume "add a farewell" from implement?');
    expect(d.detail).toContain("Runs again (1):\n  • implement.phase-2 — HARD BARRIER FAILED");
    expect(d.detail).toContain("Keeps 5 finished steps: research.1, research.2, plan, implement.phase-1, implement.phase-3");
    expect(d.blocked).toBe(false);
    expect([d.action, d.force, d.trust]).toEqual(["Resume", false, false]);
  });

  it("lists problems and blocks a running workflow", () => {
    const d = describePreview({ workflow_id: "w", resume_state: "plan", problems: ["plan changed"], running: true });
    expect(d.detail).toBe("Continues from plan.\nProblems:\n  • plan changed");
    expect(d.blocked).toBe(true);
    expect([d.action, d.force]).toEqual(["Resume Anyway", true]);
  });

  it("asks for trust when the checkpoint was not signed by this user's Baton", () => {
    const d = describePreview({ workflow_id: "w", resume_state: "plan", problems: ["plan changed"],
      untrusted: "it carries no signature (written by another tool or an older Baton)", signature: "unsigned" });
    expect(d.detail).toContain("Not trusted: it carries no signature");
    expect([d.action, d.force, d.trust]).toEqual(["Trust and Resume", true, true]);
    expect(describePreview({ workflow_id: "w", untrusted: null }).trust).toBe(false);
  });
});

describe("baton/workflowChanged", () => {
  it("accepts the server's shape and rejects garbage", () => {
    const p = parseWorkflowChanged({ workflow_id: "w", workspace: "/ws", event: { event: "finished", status: "complete" } });
    expect(p).toEqual({ workflow_id: "w", workspace: "/ws", event: { event: "finished", status: "complete" } });
    expect(parseWorkflowChanged(null)).toBeUndefined();
    expect(parseWorkflowChanged({ workflow_id: "w" })).toBeUndefined();
    expect(parseWorkflowChanged({ workflow_id: 3, event: { event: "log", text: "x" } })?.workflow_id).toBeNull();
    // A kind the generated types do not list is ignored, not guessed at.
    expect(parseWorkflowChanged({ workflow_id: "w", event: {} })).toBeUndefined();
    expect(parseWorkflowChanged({ workflow_id: "w", event: { event: "nosuch" } })).toBeUndefined();
  });

  it("keeps the server's state of the run, the progress notification's text", () => {
    const run = { text: "implementing · wave 2/3 · 2/4 phases", state: "implement", running: true };
    const p = parseWorkflowChanged({ workflow_id: "w", event: { event: "step", step: "implement.phase-4", state: "implement", status: "running" }, run });
    expect(p?.run).toEqual(run);
    // the event's own words (`implement.phase-4 running`) are not the progress any more
    expect(progressText(p!)).toBe("implementing · wave 2/3 · 2/4 phases");
    const bare = parseWorkflowChanged({ workflow_id: "w", event: { event: "finished", status: "complete" }, run: { state: "x" } });
    expect(bare?.run).toBeUndefined();
    expect(progressText(bare!)).toBeUndefined();
  });

  it("turns events into log lines", () => {
    expect(eventText({ event: "transition", source: "plan", target: "implement" })).toBe("implement");
    expect(eventText({ event: "step", step: "implement.phase-2", state: "implement", status: "done" })).toBe("implement.phase-2 done");
    expect(eventText({ event: "log", text: "a line" })).toBeUndefined();
    expect(eventText({ event: "waiting", what: "merging wave 1", holder: "w-2", holder_what: "merging wave 2" }))
      .toBe("waiting for workflow w-2 (merging wave 2)");
    expect(eventText({ event: "waiting", what: "merging wave 1" })).toBe("waiting for another run");
    expect(eventText({ event: "reconciled", what: "removed the half-made worktree of phase 3" }))
      .toBe("reconciled: removed the half-made worktree of phase 3");
  });
});
