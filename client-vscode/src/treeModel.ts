// Workflows view model: workflows → states → waves → phases (and other steps), built from
// `baton.server.workflow.list` rows. Pure; treeView.ts turns nodes into TreeItems.
import type { StepRow, WorkflowRow } from "./workflows";
import { failureReason, isFinished, isResumable, isRunning, stepLabel } from "./workflows";

export type NodeStatus = "done" | "attention" | "running" | "failed" | "pending" | "cancelled" | "interrupted" | "note" | "unknown";

export interface TreeNode {
  /** Stable across refreshes, so expansion and selection survive. */
  id: string;
  kind: "workflow" | "state" | "wave" | "step" | "note";
  label: string;
  description: string;
  tooltip: string;
  status: NodeStatus;
  /** For menus: `workflow:resumable:running:plan:error` style flags (matched with regexes). */
  contextValue: string;
  expanded: boolean;
  children: TreeNode[];
  row: WorkflowRow;
  /** The file a click opens (an artifact), when it exists in the model. */
  open?: string;
  /** A step node's step id (`implement.phase-2`), for its menu (Open Agent Log). */
  step?: string;
}

const STATE_ORDER = ["initialize", "research", "plan", "revise", "implement", "test", "debug", "document", "complete"];

export function stepStatus(step: StepRow | undefined): NodeStatus {
  switch (step?.status) {
    case "done": return "done";
    case "running": return "running";
    case "failed": return "failed";
    case undefined: return "pending";
    default: return "unknown";
  }
}

export function workflowStatus(row: WorkflowRow): NodeStatus {
  if (row.running) return "running";
  switch (row.status) {
    case "complete": return needsAttention(row) ? "attention" : "done";
    case "failed": return "failed";
    case "cancelled": return "cancelled";
    case "interrupted": return "interrupted";
    case "in_progress": return "running";
    default: return "unknown";
  }
}

/** Complete, but its tests still fail: the seeds' debug report-and-end (not a success). */
export function needsAttention(row: WorkflowRow): boolean {
  return row.status === "complete" && row.outcome?.status === "needs_attention";
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  if (m < 60) return `${m} min${rest ? ` ${rest} s` : ""}`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function relativeTime(iso: string | null | undefined, now: number): string {
  if (!iso) return "";
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return "";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** `{"1": [1], "2": [2, 3]}` or `[[1], [2, 3]]` → `[["1"], ["2", "3"]]`. */
export function normaliseWaves(waves: WorkflowRow["waves"]): string[][] {
  if (!waves) return [];
  if (Array.isArray(waves)) return waves.map((w) => (Array.isArray(w) ? w.map(String) : []));
  return Object.entries(waves)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([, w]) => (Array.isArray(w) ? w.map(String) : []));
}

function aggregate(statuses: NodeStatus[]): NodeStatus {
  if (statuses.includes("failed")) return "failed";
  if (statuses.includes("running")) return "running";
  if (statuses.length > 0 && statuses.every((s) => s === "done")) return "done";
  if (statuses.some((s) => s === "done")) return "running";
  return "pending";
}

function stepNode(row: WorkflowRow, base: string, id: string, step: StepRow | undefined): TreeNode {
  const status = stepStatus(step);
  const bits = [step?.status ?? "pending"];
  if (step?.duration_ms !== undefined && step?.duration_ms !== null) bits.push(formatDuration(step.duration_ms));
  if (step?.attempts && step.attempts > 1) bits.push(`${step.attempts} attempts`);
  if (step?.worker) bits.push(`on ${step.worker.replace(/^[a-z]+:\/\//, "")}`);
  const tooltip = [id, step?.message ?? "", step?.artifact ? `artifact: ${step.artifact}` : "",
    step?.worker ? `worker: ${step.worker}` : ""].filter(Boolean).join("\n");
  return {
    id: `${base}/step:${id}`, kind: "step", label: stepLabel(id), description: bits.join(" · "), tooltip, status,
    // `:log`: an attempt ran, so there is an agent log to open; `:failed`: offered inline.
    contextValue: `step${step?.artifact && status === "done" ? ":artifact" : ""}${step?.attempts ? ":log" : ""}${status === "failed" ? ":failed" : ""}`,
    expanded: false, children: [], row, open: status === "done" ? step?.artifact ?? undefined : undefined, step: id,
  };
}

/** Wall time of a state: research topics run in parallel, implementation waves one after
 * another with their phases in parallel, everything else in sequence. */
function stateMs(state: string, ids: string[], steps: Record<string, StepRow>, waves: string[][]): number {
  const ms = (id: string) => steps[id]?.duration_ms ?? 0;
  if (state === "research") return Math.max(0, ...ids.map(ms));
  if (state === "implement" && waves.length > 0) {
    const inWave = new Set(waves.flat().map((p) => `implement.phase-${p}`));
    return waves.reduce((acc, w) => acc + Math.max(0, ...w.map((p) => ms(`implement.phase-${p}`))), 0)
      + ids.filter((id) => !inWave.has(id)).reduce((acc, id) => acc + ms(id), 0);
  }
  return ids.reduce((acc, id) => acc + ms(id), 0);
}

function stateNodes(row: WorkflowRow, base: string): TreeNode[] {
  const steps = row.steps ?? {};
  const byState = new Map<string, string[]>();
  for (const [id, step] of Object.entries(steps)) {
    const state = step.state ?? id.split(".")[0];
    byState.set(state, [...(byState.get(state) ?? []), id]);
  }
  const states = [...byState.keys()];
  // The current state of a running or stopped workflow shows even before its first step.
  const current = row.state ?? undefined;
  if (current && !byState.has(current) && !["complete", "initialize"].includes(current) && row.status !== "complete") {
    states.push(current);
  }
  const rank = (s: string) => { const i = STATE_ORDER.indexOf(s); return i < 0 ? STATE_ORDER.length : i; };
  states.sort((a, b) => rank(a) - rank(b));
  const failedState = row.status === "failed" ? row.failure?.state ?? row.state ?? undefined : undefined;

  return states.map((state) => {
    const ids = byState.get(state) ?? [];
    const sbase = `${base}/state:${state}`;
    let children: TreeNode[];
    const waves = state === "implement" ? normaliseWaves(row.waves) : [];
    if (waves.length > 0) {
      const inWave = new Set<string>();
      children = waves.map((phases, i) => {
        const phaseNodes = phases.map((p) => {
          const sid = `implement.phase-${p}`;
          inWave.add(sid);
          return stepNode(row, `${sbase}/wave:${i + 1}`, sid, steps[sid]);
        });
        const status = aggregate(phaseNodes.map((n) => n.status));
        // Phases of a wave run in parallel: the wave takes as long as its slowest phase.
        const total = Math.max(0, ...phases.map((p) => steps[`implement.phase-${p}`]?.duration_ms ?? 0));
        return {
          id: `${sbase}/wave:${i + 1}`, kind: "wave" as const, label: `Wave ${i + 1}`,
          description: [phases.length > 1 ? `phases ${phases.join(", ")} in parallel` : `phase ${phases.join("")}`,
            status === "pending" ? "" : status, total ? formatDuration(total) : ""].filter(Boolean).join(" · "),
          tooltip: `Wave ${i + 1}: phase${phases.length > 1 ? "s" : ""} ${phases.join(", ")}`,
          status, contextValue: "wave", expanded: status === "failed" || status === "running",
          children: phaseNodes, row,
        };
      });
      for (const id of ids) if (!inWave.has(id)) children.push(stepNode(row, sbase, id, steps[id]));
    } else {
      children = ids.map((id) => stepNode(row, sbase, id, steps[id]));
    }
    let status = aggregate(children.map((c) => c.status));
    if (state === failedState) status = "failed";
    else if (row.running && state === current && status !== "failed") status = "running";
    else if (children.length === 0) status = row.running ? "running" : row.status === "complete" ? "done" : "pending";
    const ms = stateMs(state, ids, steps, waves);
    const count = ids.length;
    return {
      id: sbase, kind: "state" as const, label: state,
      description: [status, count ? `${count} step${count === 1 ? "" : "s"}` : "", ms ? formatDuration(ms) : ""].filter(Boolean).join(" · "),
      tooltip: `${state}: ${status}`, status, contextValue: "state",
      expanded: status === "failed" || status === "running", children, row,
    };
  });
}

/** What the run reconciled in the repository (a dead run's half-made worktree, interrupted
 * merge, stale lock): one node listing each action, newest last, so a resume that repaired
 * the repository says so where the run is shown. */
function reconciledNode(row: WorkflowRow, base: string, now: number): TreeNode[] {
  const found = (row.reconciled ?? []).filter((r) => typeof r?.what === "string" && r.what);
  if (found.length === 0) return [];
  const id = `${base}/reconciled`;
  const children = found.map((r, i): TreeNode => ({
    id: `${id}:${i}`, kind: "note", label: String(r.what), description: relativeTime(r.at, now),
    tooltip: [String(r.what), r.at ?? ""].filter(Boolean).join("\n"), status: "note",
    contextValue: "note", expanded: false, children: [], row,
  }));
  return [{
    id, kind: "note", label: "Repository reconciled",
    description: `${found.length} action${found.length === 1 ? "" : "s"}`,
    tooltip: `What this run found a killed run had left in the repository, and what it did:\n${found.map((r) => `• ${r.what}`).join("\n")}`,
    status: "note", contextValue: "note", expanded: false, children, row,
  }];
}

export function workflowNode(row: WorkflowRow, now: number): TreeNode {
  const status = workflowStatus(row);
  const base = `${row.workspace ?? ""}|${row.workflow_id}`;
  const flags = ["workflow"];
  if (isResumable(row)) flags.push("resumable");
  if (isRunning(row)) flags.push("running");
  if (row.plan) flags.push("plan");
  if (row.status === "failed") flags.push("error");
  if (isFinished(row)) flags.push("finished");
  const where = row.status === "complete" || !row.state || row.state === row.status ? "" : ` in ${row.state}`;
  // A running row words its state as the server does (`row.text`: the lens, progress and
  // status bar say the same).
  const statusText = row.running ? `running${row.text || row.state ? ` · ${row.text || row.state}` : ""}`
    : needsAttention(row) ? "complete · needs attention" : `${row.status}${where}`;
  const description = [statusText, relativeTime(row.updated_at, now)].filter(Boolean).join(" · ");
  const tooltip = [
    row.description ?? row.workflow_id, `${row.workflow_id} · ${row.scope ?? ""}`, statusText,
    row.status === "failed" || row.status === "cancelled" || row.status === "interrupted" ? failureReason(row) : "",
    needsAttention(row) ? attentionText(row) : "",
    row.checkpoint !== null && row.checkpoint !== undefined ? `checkpoint ${row.checkpoint}` : "",
  ].filter(Boolean).join("\n");
  return {
    id: base, kind: "workflow", label: row.description || row.workflow_id, description, tooltip, status,
    contextValue: flags.join(":"), expanded: status === "running" || status === "failed",
    children: [...stateNodes(row, base), ...reconciledNode(row, base, now)], row,
  };
}

function attentionText(row: WorkflowRow): string {
  const o = row.outcome ?? {};
  const review = o.debug_report ?? o.test_output;
  return [o.reason ?? "the tests still fail", review ? `review ${review}` : "",
    o.rerun ? `then re-run: ${o.rerun}` : ""].filter(Boolean).join("\n");
}

/** Newest first: running workflows, then by last update. */
export function buildTree(rows: WorkflowRow[], now: number): TreeNode[] {
  const sorted = [...rows].sort((a, b) => {
    if (a.running !== b.running) return a.running ? -1 : 1;
    return (Date.parse(b.updated_at ?? "") || 0) - (Date.parse(a.updated_at ?? "") || 0)
      || b.workflow_id.localeCompare(a.workflow_id);
  });
  return sorted.map((r) => workflowNode(r, now));
}

/** Theme icon id and colour per status. */
export function iconFor(status: NodeStatus): { id: string; color?: string } {
  switch (status) {
    case "done": return { id: "pass-filled", color: "testing.iconPassed" };
    case "attention": return { id: "warning", color: "list.warningForeground" };
    case "running": return { id: "sync~spin", color: "charts.blue" };
    case "failed": return { id: "error", color: "testing.iconFailed" };
    case "cancelled": return { id: "circle-slash", color: "disabledForeground" };
    case "interrupted": return { id: "warning", color: "list.warningForeground" };
    case "pending": return { id: "circle-large-outline" };
    case "note": return { id: "tools", color: "charts.yellow" };
    default: return { id: "question" };
  }
}
