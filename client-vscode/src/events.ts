// Generated from schemas/events.schema.json by `python -m baton_lsp.model.events --typescript`.
// Do not edit: tests/model/test_events.py holds this file equal to the generator.

/** A checkpoint was written. */
export interface CheckpointEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "checkpoint";
  readonly label: string;
  readonly path: string;
  readonly status?: string | null;
  readonly state?: string | null;
}

/** One key on which the state file and the checkpoint disagree. */
export interface ClassificationDifference {
  readonly key: string;
  readonly state_file?: unknown;
  readonly checkpoint?: unknown;
}

/** How the request was classified. */
export interface ClassificationEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "classification";
  readonly scope: string;
  readonly complexity: number;
  readonly topics?: string[];
  readonly source?: string | null;
  readonly confidence?: number | null;
}

/** On resume the state file's classification differed from the checkpoint's (which wins). */
export interface ClassificationMismatchEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "classification_mismatch";
  readonly differences: ClassificationDifference[];
}

/** The classifier agent failed; classification fell back to keywords. */
export interface ClassifierFallbackEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "classifier_fallback";
  readonly message: string;
}

/** The run ended: complete, failed or cancelled (`outcome`: `needs_attention` when a complete run asks for review). */
export interface FinishedEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "finished";
  readonly status: "complete" | "failed" | "cancelled";
  readonly state?: string | null;
  readonly message?: string | null;
  readonly checkpoint?: string | null;
  readonly outcome?: string | null;
  readonly step?: string | null;
  readonly failure?: string | null;
}

/** An implementation iteration started, finished or halted. */
export interface IterationEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "iteration";
  readonly iteration: number;
  readonly max_iterations: number;
  readonly status: "running" | "done" | "halted";
  readonly work_remaining?: unknown;
  readonly requires_continuation?: boolean | null;
  readonly halt_reason?: string | null;
}

/** A line the engine printed (under `--events`, human output travels as events too). */
export interface LogEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "log";
  readonly text: string;
}

/** A phase's branch was merged, or its merge stopped (`conflicts`). */
export interface MergeEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "merge";
  readonly phase: string;
  readonly status?: string | null;
  readonly branch?: string | null;
  readonly commit?: string | null;
  readonly conflicts?: string[] | null;
}

/** What a dead run left in the repository, and what was done about it. */
export interface ReconciledEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "reconciled";
  readonly what: string;
}

/** A return signal an agent printed (`NAME: value`). */
export interface SignalEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "signal";
  readonly step: string;
  readonly name: string;
  readonly value: string;
}

/** An agent step started, finished or failed. */
export interface StepEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "step";
  readonly step: string;
  readonly state: string;
  readonly status: "running" | "done" | "failed";
  readonly attempt?: number | null;
  readonly runner?: string | null;
  readonly artifact?: string | null;
  readonly checkpoint?: string | null;
  readonly failure?: string | null;
  readonly message?: string | null;
  readonly context?: Record<string, unknown> | null;
}

/** A coordination tier (research, `implementation`, `testing`) started or aggregated. */
export interface SupervisorEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "supervisor";
  readonly mode: string;
  readonly status: "running" | "done";
  readonly workers: number;
  readonly tier?: string | null;
  readonly completed?: number | null;
  readonly context_tokens?: number | null;
  readonly path?: string | null;
}

/** The state machine moved (`source` → `target`), checkpointed at `checkpoint`. */
export interface TransitionEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "transition";
  readonly source: string;
  readonly target: string;
  readonly reason?: string | null;
  readonly checkpoint?: string | null;
}

/** This run waits for another run of the repository (`holder`) to finish `holder_what`. */
export interface WaitingEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "waiting";
  readonly what: string;
  readonly holder?: string | null;
  readonly holder_what?: string | null;
}

/** A wave of independent plan phases starts (`isolated`: each in its own worktree). */
export interface WaveEvent {
  readonly workflow_id?: string | null;
  readonly at?: string | null;
  readonly event: "wave";
  readonly wave: number;
  readonly total: number;
  readonly phases: string[];
  readonly isolated?: boolean;
}

/** Every event kind, told apart by its `event` field. */
export type BatonEvent = CheckpointEvent | ClassificationEvent | ClassificationMismatchEvent | ClassifierFallbackEvent | FinishedEvent | IterationEvent | LogEvent | MergeEvent | ReconciledEvent | SignalEvent | StepEvent | SupervisorEvent | TransitionEvent | WaitingEvent | WaveEvent;

/** The `event` field's values. */
export type BatonEventKind = BatonEvent["event"];
export const EVENT_KINDS: readonly BatonEventKind[] = ["checkpoint", "classification", "classification_mismatch", "classifier_fallback", "finished", "iteration", "log", "merge", "reconciled", "signal", "step", "supervisor", "transition", "waiting", "wave"];
