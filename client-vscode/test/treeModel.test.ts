import { describe, expect, it } from "vitest";
import { colourGraph, graphSummary, nodeId } from "../src/graph";
import {
  buildTree, formatDuration, iconFor, normaliseWaves, relativeTime, type TreeNode,
} from "../src/treeModel";
import type { WorkflowRow } from "../src/workflows";
import { readFileSync } from "node:fs";
import rowsJson from "./fixtures/rows.json";

const rows = rowsJson as WorkflowRow[];
const now = Date.parse("2026-11-21T07:10:00Z");

function find(nodes: TreeNode[], label: string): TreeNode {
  const hit = nodes.find((n) => n.label === label);
  if (!hit) throw new Error(`no ${label} in ${nodes.map((n) => n.label).join(", ")}`);
  return hit;
}

describe("buildTree from real `baton status --json` rows", () => {
  const tree = buildTree(rows, now);

  it("lists workflows newest first with status, state and age", () => {
    expect(tree.map((n) => n.label)).toEqual(["add a farewell", "add a greeting"]);
    expect(tree[0].description).toBe("failed in implement · 3 min ago");
    expect(tree[1].description).toBe("complete · 3 min ago");
    expect(tree[0].tooltip).toContain("failed in implement: wave 2: HARD BARRIER FAILED");
  });

  it("sets the context flags the menus match on", () => {
    expect(tree[0].contextValue).toBe("workflow:resumable:plan:error:finished");
    expect(tree[1].contextValue).toBe("workflow:plan:finished");
    const running = buildTree([{ ...rows[0], running: true, status: "in_progress" }], now)[0];
    expect(running.contextValue).toBe("workflow:running:plan");
    expect(running.status).toBe("running");
  });

  it("has states in workflow order with step counts and timings", () => {
    const states = tree[1].children;
    expect(states.map((s) => s.label)).toEqual(["research", "plan", "implement", "test", "document"]);
    expect(states.every((s) => s.status === "done")).toBe(true);
    expect(find(states, "research").description).toBe("done · 2 steps · 46 ms");
  });

  it("groups implementation phases into waves", () => {
    const implement = find(tree[1].children, "implement");
    expect(implement.children.map((w) => w.label)).toEqual(["Wave 1", "Wave 2", "Wave 3"]);
    const wave2 = implement.children[1];
    expect(wave2.description).toBe("phases 2, 3 in parallel · done · 48 ms");
    expect(wave2.children.map((p) => [p.label, p.status])).toEqual([["Phase 2", "done"], ["Phase 3", "done"]]);
    expect(wave2.children[0].open).toMatch(/phase_2_summary\.md$/);
    expect(implement.description).toBe("done · 4 steps · 118 ms"); // 35 + max(34, 48) + 35
  });

  it("names the Dask worker that ran a step", () => {
    const row = rows[1];
    const steps = { ...row.steps, "implement.phase-2": { ...row.steps?.["implement.phase-2"], worker: "tls://10.0.0.7:40211" } };
    const implement = find(buildTree([{ ...row, steps }], now)[0].children, "implement");
    const phase2 = implement.children[1].children[0];
    expect(phase2.description).toContain("on 10.0.0.7:40211");
    expect(phase2.tooltip).toContain("worker: tls://10.0.0.7:40211");
    expect(implement.children[1].children[1].description).not.toContain(" on ");
  });

  it("opens a failed workflow down to the failed phase; later waves are pending", () => {
    const failed = tree[0];
    expect(failed.expanded).toBe(true);
    const implement = find(failed.children, "implement");
    expect(implement.status).toBe("failed");
    expect(implement.expanded).toBe(true);
    const [w1, w2, w3] = implement.children;
    expect([w1.status, w2.status, w3.status]).toEqual(["done", "failed", "pending"]);
    expect(w2.expanded).toBe(true);
    const phase2 = find(w2.children, "Phase 2");
    expect(phase2.status).toBe("failed");
    expect(phase2.open).toBeUndefined(); // its artifact was never written
    expect(phase2.tooltip).toContain("HARD BARRIER FAILED");
    expect(w3.children.map((p) => [p.label, p.status, p.description])).toEqual([["Phase 4", "pending", "pending"]]);
    expect(failed.children.map((s) => s.label)).toEqual(["research", "plan", "implement"]);
  });

  it("keeps ids unique and stable", () => {
    const ids: string[] = [];
    const walk = (ns: TreeNode[]) => ns.forEach((n) => { ids.push(n.id); walk(n.children); });
    walk(tree);
    expect(new Set(ids).size).toBe(ids.length);
    walk(buildTree(rows, now + 60_000));
    expect(new Set(ids).size).toBe(ids.length / 2);
  });

  it("words a running workflow as the server does (its lens, progress and status bar too)", () => {
    const row: WorkflowRow = { ...rows[1], running: true, status: "in_progress", state: "implement", text: "implementing · wave 2/3 · 2/4 phases", updated_at: null };
    expect(buildTree([row], now)[0].description).toBe("running · implementing · wave 2/3 · 2/4 phases");
    const { text: _, ...plain } = row;
    expect(buildTree([plain], now)[0].description).toBe("running · implement");
  });

  it("shows the current state of a running workflow before its first step", () => {
    const row: WorkflowRow = { workflow_id: "w", running: true, status: "in_progress", state: "research", steps: {}, description: "d" };
    const [node] = buildTree([row], now);
    expect(node.children.map((c) => [c.label, c.status])).toEqual([["research", "running"]]);
  });
});

describe("helpers", () => {
  it("formats durations and ages", () => {
    expect(formatDuration(35)).toBe("35 ms");
    expect(formatDuration(1500)).toBe("1.5 s");
    expect(formatDuration(75_000)).toBe("1 min 15 s");
    expect(formatDuration(3_720_000)).toBe("1 h 2 min");
    expect(formatDuration(undefined)).toBe("");
    expect(relativeTime("2026-11-21T07:09:50Z", now)).toBe("just now");
    expect(relativeTime("2026-11-20T07:10:00Z", now)).toBe("1 d ago");
    expect(relativeTime("garbage", now)).toBe("");
  });

  it("accepts both wave shapes", () => {
    expect(normaliseWaves({ "2": [2, 3], "1": [1], "10": [9] })).toEqual([["1"], ["2", "3"], ["9"]]);
    expect(normaliseWaves([[1], ["2.1"]])).toEqual([["1"], ["2.1"]]);
    expect(normaliseWaves(null)).toEqual([]);
  });

  it("lists what the run reconciled in the repository under the workflow", () => {
    const row = { ...rows[1], reconciled: [
      { at: "2026-11-21T07:08:00Z", what: "rolled back the interrupted merge of phase 2 of workflow w-1" },
      { at: "2026-11-21T07:09:50Z", what: "removed the half-made worktree of phase 3" },
      { what: 7 as unknown as string },
    ] };
    const node = buildTree([row], now)[0];
    const found = node.children[node.children.length - 1];
    expect([found.label, found.description, found.kind, found.status]).toEqual(
      ["Repository reconciled", "2 actions", "note", "note"]);
    expect(found.children.map((c) => [c.label, c.description])).toEqual([
      ["rolled back the interrupted merge of phase 2 of workflow w-1", "2 min ago"],
      ["removed the half-made worktree of phase 3", "just now"]]);
    expect(found.tooltip).toContain("• removed the half-made worktree of phase 3");
    expect(iconFor("note").id).toBe("tools");
    expect(buildTree([rows[1]], now)[0].children.some((c) => c.kind === "note")).toBe(false);
  });

  it("marks a complete run whose tests still fail as needing attention, not done", () => {
    // `baton status --json`'s `outcome` of a `debug-mode = "report"` run (runs/record.py OutcomeRecord)
    const done = rows.find((r) => r.status === "complete")!;
    const row = { ...done, outcome: {
      status: "needs_attention", reason: "the tests still fail after one debug report",
      debug_report: "specs/001_greeting/debug/001_debug_report.md", test_output: null,
      rerun: "baton run 'add a greeting' --scope full-implementation",
    } };
    const node = buildTree([row], now)[0];
    expect(node.status).toBe("attention");
    expect(node.description).toBe("complete · needs attention · 3 min ago");
    expect(node.tooltip).toContain("review specs/001_greeting/debug/001_debug_report.md");
    expect(node.tooltip).toContain("then re-run: baton run 'add a greeting' --scope full-implementation");
    expect(iconFor(node.status)).toEqual({ id: "warning", color: "list.warningForeground" });
    expect(node.children.every((s) => s.status === "done")).toBe(true);
    expect(buildTree([done], now)[0].status).toBe("done");
  });

  it("has an icon per status", () => {
    expect(iconFor("failed")).toEqual({ id: "error", color: "testing.iconFailed" });
    expect(iconFor("running").id).toBe("sync~spin");
  });
});

describe("plan graph colours", () => {
  const mermaid = readFileSync(new URL("./fixtures/plan.mmd", import.meta.url), "utf8");

  it("says the run's state in the server's words, or that no workflow ran the plan", () => {
    const graph = { mermaid, waves: [["1"], ["2", "3"]], cycles: [], critical_path: ["1", "2"] };
    expect(graphSummary({ ...graph, run: null })).toBe("2 waves · critical path: 1 → 2 · no workflow has run this plan yet");
    expect(graphSummary({ ...graph, run: { text: "implementing · wave 2/2 · 1/3 phases", running: true } }))
      .toBe("2 waves · critical path: 1 → 2 · running: implementing · wave 2/2 · 1/3 phases");
    expect(graphSummary({ ...graph, run: { text: "complete · 3/3 phases", running: false } }))
      .toBe("2 waves · critical path: 1 → 2 · latest run: complete · 3/3 phases");
  });

  it("adds one class per phase node; phases without a run are pending", () => {
    const out = colourGraph(mermaid, { "1": "done", "2": "failed", "3": "running" });
    expect(out.startsWith("flowchart TD\n")).toBe(true);
    expect(out).toContain("    classDef failed ");
    expect(out).toContain("    class P1 done\n");
    expect(out).toContain("    class P2 failed\n");
    expect(out).toContain("    class P3 running\n");
    expect(out).toContain("    class P4 pending\n");
    expect(nodeId("2.1")).toBe("P2_1");
  });
});

describe("step menus", () => {
  it("flags steps that ran (an agent log to open) and failed steps, and names the step", () => {
    const implement = find(buildTree(rows, now)[0].children, "implement");
    const phases = implement.children.flatMap((w) => w.children);
    const phase2 = find(phases, "Phase 2");
    expect(phase2.status).toBe("failed");
    expect(phase2.contextValue).toBe("step:log:failed");
    expect(phase2.step).toBe("implement.phase-2");
    expect(find(phases, "Phase 1").contextValue).toBe("step:artifact:log");
    const menus = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      contributes: { menus: Record<string, { command: string; when: string; group?: string }[]> } }).contributes.menus["view/item/context"];
    const matches = (node: TreeNode, command: string) => menus.some((m) => m.command === command &&
      new RegExp(/viewItem =~ \/(.+?)\//.exec(m.when)?.[1] ?? "^$").test(node.contextValue));
    expect(matches(phase2, "baton.openAgentLog")).toBe(true);
    expect(matches(phase2, "baton.showWorkflowStatus")).toBe(true);
    expect(menus.find((m) => m.command === "baton.openAgentLog" && m.group?.startsWith("inline"))?.when).toMatch(/:failed/);
  });
});
