// Workflow rows from `baton.server.workflow.list` and the arguments of the server's workflow
// commands. Pure: validated here, shown by the adapters.

import { EVENT_KINDS, type BatonEvent } from "./events";

export type WorkflowStatus = "in_progress" | "complete" | "failed" | "cancelled" | "interrupted" | "unreadable";

export interface StepRow {
  state?: string;
  status?: string;
  attempts?: number;
  artifact?: string | null;
  message?: string | null;
  duration_ms?: number | null;
  /** The Dask worker that ran the step's last attempt (`executor = "dask"`). */
  worker?: string | null;
}

export interface WorkflowRow {
  workflow_id: string;
  running: boolean;
  status: WorkflowStatus | string;
  state?: string | null;
  scope?: string | null;
  description?: string | null;
  updated_at?: string | null;
  checkpoint?: number | null;
  checkpoint_path?: string | null;
  topic_dir?: string | null;
  plan?: string | null;
  last_error?: string | null;
  failure?: { state?: string; step?: string; message?: string; type?: string; class?: string; context?: Record<string, unknown> } | null;
  steps?: Record<string, StepRow> | null;
  /** The server sends `{"1": [1], "2": [2, 3]}`; a list of lists is accepted too. */
  waves?: Record<string, (string | number)[]> | (string | number)[][] | null;
  workspace?: string;
  followed?: boolean;
  /** What this run found a dead run had left in the repository, and what it did about it. */
  reconciled?: { at?: string; what?: string }[] | null;
  /** The run's state as the server's run follower words it (`implementing · wave 2/3 · 1/4
   * phases`): the text the lens, the progress and the status bar show too. */
  text?: string | null;
  current_wave?: number | null;
  /** A `complete` run whose tests still fail (`debug-mode = "report"`): what to review and re-run. */
  outcome?: { status?: string; reason?: string; debug_report?: string | null; test_output?: string | null; rerun?: string | null } | null;
}

export interface ScopeChoice { id: string; label: string; detail: string; needsPlan: boolean }

export const SCOPES: readonly ScopeChoice[] = [
  { id: "full-implementation", label: "Full implementation", needsPlan: false,
    detail: "research → plan → implement in waves → test → debug → document" },
  { id: "research-and-plan", label: "Research and plan", needsPlan: false,
    detail: "research the topics in parallel, then write a plan; no code changes" },
  { id: "research-only", label: "Research only", needsPlan: false,
    detail: "research reports only" },
  { id: "research-and-revise", label: "Research and revise", needsPlan: true,
    detail: "research, then revise an existing plan" },
  { id: "implement-only", label: "Implement only", needsPlan: true,
    detail: "implement an existing plan's phases in waves, then test" },
  { id: "test-and-debug", label: "Test and debug", needsPlan: true,
    detail: "run the tests of an existing plan and debug failures" },
  { id: "debug-only", label: "Debug only", needsPlan: false,
    detail: "debug a failure described in the description" },
];

/** Agent CLIs a runner can drive; `script` (offline, deterministic) needs nothing installed. */
export const AGENT_CLIS = ["claude", "codex", "gemini"] as const;

export interface RunnerChoice { id: string; label: string; detail: string }

export function runnerChoices(found: (cli: string) => string | undefined, preferred?: string | null): RunnerChoice[] {
  const out: RunnerChoice[] = [];
  for (const cli of AGENT_CLIS) {
    const where = found(cli);
    if (where) out.push({ id: cli, label: cli, detail: where });
  }
  out.push({ id: "script", label: "script", detail: "deterministic offline agents (no API key): for trying Baton out and for tests" });
  if (preferred) {
    const i = out.findIndex((c) => c.id === preferred);
    if (i > 0) out.unshift(...out.splice(i, 1));
  }
  return out;
}

export interface StartInput {
  description: string;
  scope: string;
  runner?: string;
  plan?: string;
  complexity?: number;
  workspace?: string;
}

/** The one object `baton.server.workflow.start` takes; throws with a user-facing reason. */
export function startArgs(input: StartInput): Record<string, unknown> {
  const description = input.description.trim();
  if (!description) throw new Error("A workflow needs a description.");
  const scope = SCOPES.find((s) => s.id === input.scope);
  if (!scope) throw new Error(`Unknown scope ${input.scope}.`);
  if (scope.needsPlan && !input.plan) throw new Error(`The ${scope.label} scope needs a plan.`);
  if (input.runner !== undefined && !/^[A-Za-z0-9_.-]+$/.test(input.runner)) {
    throw new Error(`Invalid runner ${input.runner}.`);
  }
  if (input.complexity !== undefined && !(Number.isInteger(input.complexity) && input.complexity >= 1 && input.complexity <= 4)) {
    throw new Error("Complexity is 1 to 4.");
  }
  const out: Record<string, unknown> = { description, scope: scope.id };
  if (input.runner) out.runner = input.runner;
  if (input.plan) out.plan = input.plan;
  if (input.complexity !== undefined) out.complexity = input.complexity;
  if (input.workspace) out.workspace = input.workspace;
  return out;
}

export function idArgs(row: Pick<WorkflowRow, "workflow_id" | "workspace">): Record<string, unknown> {
  const out: Record<string, unknown> = { id: row.workflow_id };
  if (row.workspace) out.workspace = row.workspace;
  return out;
}

export function isResumable(row: WorkflowRow): boolean {
  return !row.running && ["failed", "cancelled", "interrupted"].includes(row.status);
}

/** A workflow that ended one way or another: it can be re-run (a new run, same request). */
export function isFinished(row: WorkflowRow): boolean {
  return !isRunning(row) && ["complete", "failed", "cancelled", "interrupted"].includes(row.status);
}

export function isRunning(row: WorkflowRow): boolean {
  return row.running || row.status === "in_progress" && Boolean(row.followed);
}

/** One line saying why a workflow stopped, for quick picks and notifications. */
export function failureReason(row: WorkflowRow): string {
  if (row.status === "cancelled") return `cancelled in ${row.state ?? "?"}`;
  if (row.status === "interrupted") return `interrupted in ${row.state ?? "?"} (the engine stopped)`;
  const message = row.failure?.message ?? row.last_error ?? "";
  return `failed in ${row.failure?.state ?? row.state ?? "?"}${message ? `: ${message}` : ""}`;
}

/** A row that shows its run ended: not followed by the server, not running, and — for a
 * resumed workflow — with a checkpoint newer than `baseline`, the one it was resumed from (the
 * row of the failure being resumed looks ended too). */
export function endedSince(row: WorkflowRow, baseline?: number | null): boolean {
  if (row.running || row.followed || row.status === "in_progress") return false;
  if (baseline === undefined || baseline === null) return true;
  return typeof row.checkpoint === "number" && row.checkpoint > baseline;
}

export interface ResumePreview {
  workflow_id: string;
  resume_state?: string;
  skip?: { step: string; state?: string }[];
  rerun?: { step: string; state?: string; reason?: string }[];
  problems?: string[];
  running?: boolean;
  last_error?: string | null;
  /** Why the checkpoint is not trusted (not signed by this user's Baton), or null. */
  untrusted?: string | null;
  signature?: string;
}

/** `implement.phase-2` → `2`. */
export function phaseOf(stepId: string): string | undefined {
  return /^implement\.phase-(.+)$/.exec(stepId)?.[1];
}

/** A step id as people say it: `implement.phase-2` → `Phase 2`, `research.0` → `Research 0`,
 * `plan` → `Plan` (the tree's rows and the retry question use the same words). */
export function stepLabel(id: string): string {
  const phase = phaseOf(id);
  if (phase) return `Phase ${phase}`;
  const m = /^(\w+)\.(\d+)$/.exec(id);
  if (m) return `${m[1][0].toUpperCase()}${m[1].slice(1)} ${m[2]}`;
  return id[0] ? `${id[0].toUpperCase()}${id.slice(1)}` : id;
}

/** The modal text shown before a resume (or a retry of the failed step, which is a resume) is
 * confirmed. */
export function describePreview(p: ResumePreview, verb: "Resume" | "Retry" = "Resume", name: string = p.workflow_id): { message: string; detail: string; blocked: boolean; action: string; force: boolean; trust: boolean } {
  const rerun = p.rerun ?? [];
  const skip = p.skip ?? [];
  const problems = p.problems ?? [];
  const lines: string[] = [];
  if (rerun.length) {
    lines.push(`Runs again (${rerun.length}):`);
    for (const r of rerun) lines.push(`  • ${r.step}${r.reason ? ` — ${r.reason}` : ""}`);
  } else {
    lines.push(`Continues from ${p.resume_state ?? "the last checkpoint"}.`);
  }
  if (skip.length) lines.push(`Keeps ${skip.length} finished step${skip.length === 1 ? "" : "s"}: ${skip.map((s) => s.step).join(", ")}`);
  if (problems.length) {
    lines.push("Problems:");
    for (const pr of problems) lines.push(`  • ${typeof pr === "string" ? pr : JSON.stringify(pr)}`);
  }
  const untrusted = typeof p.untrusted === "string" && p.untrusted !== "";
  if (untrusted) {
    lines.push(`Not trusted: ${p.untrusted}.`);
    lines.push("Its paths and steps decide what the resume writes and runs: resume only if you know where it came from.");
  }
  return {
    message: verb === "Retry"
      ? `Retry ${(p.rerun ?? []).map((r) => stepLabel(r.step)).join(", ") || "the failed step"} of "${name}" and continue?`
      : `Resume "${name}" from ${p.resume_state ?? "its checkpoint"}?`,
    detail: lines.join("\n"),
    blocked: Boolean(p.running),
    // The server resumes over problems (an edited plan, a changed input) only when forced,
    // so the user confirms that explicitly.
    // A checkpoint this user's Baton did not sign is resumed only when the user says they
    // trust it (`--trust-checkpoint`): the button names that.
    action: untrusted ? `Trust and ${verb}` : problems.length ? `${verb} Anyway` : verb,
    force: problems.length > 0,
    trust: untrusted,
  };
}

/** The server's one state of a run (`RunState.snapshot` in `lsp/runs.py`): every surface
 * shows this, never its own reading of the events. */
export interface RunSnapshot {
  text: string;
  state?: string | null;
  status?: string | null;
  running?: boolean;
  wave?: number | null;
  waves?: number;
  plan?: string | null;
  steps?: Record<string, string>;
}

/** `baton/workflowChanged` params, checked because they come from another process. */
export interface WorkflowChanged {
  workflow_id: string | null;
  workspace?: string;
  event: BatonEvent;
  run?: RunSnapshot;
}

function parseRun(value: unknown): RunSnapshot | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const run = value as Record<string, unknown>;
  return typeof run.text === "string" ? (run as unknown as RunSnapshot) : undefined;
}

export function parseWorkflowChanged(params: unknown): WorkflowChanged | undefined {
  if (typeof params !== "object" || params === null) return undefined;
  const p = params as Record<string, unknown>;
  const event = p.event;
  if (typeof event !== "object" || event === null) return undefined;
  // The server sends the engine's events as `model/events.py` defines them (these types are
  // generated from it): a kind this extension does not know is ignored, never guessed at.
  const kind = (event as Record<string, unknown>).event;
  if (typeof kind !== "string" || !(EVENT_KINDS as readonly string[]).includes(kind)) return undefined;
  const id = typeof p.workflow_id === "string" ? p.workflow_id : null;
  const out: WorkflowChanged = { workflow_id: id, workspace: typeof p.workspace === "string" ? p.workspace : undefined, event: event as BatonEvent };
  const run = parseRun(p.run);
  if (run) out.run = run;
  return out;
}

/** The progress notification's text: the server's state of the run, the same words as the
 * lens, the Workflows view and the status bar (an event's own wording would disagree). */
export function progressText(change: WorkflowChanged): string | undefined {
  return change.run?.text;
}

/** One event in words, for the output channel's log (not for any view of the state). */
export function eventText(e: BatonEvent): string | undefined {
  switch (e.event) {
    case "transition": return e.target;
    case "step": return `${e.step} ${e.status}`;
    case "finished": return e.status;
    case "waiting": {
      const who = e.holder ? `workflow ${e.holder}` : "another run";
      return `waiting for ${who}${e.holder_what ? ` (${e.holder_what})` : ""}`;
    }
    case "reconciled": return `reconciled: ${e.what}`;
    default: return undefined;
  }
}
