"""The engine's progress events: one discriminated union, the only definition of what
crosses from `baton run|resume --events` to the language server and the editor.

The engine builds every event through `EVENTS` (`workflow.run.Run.emit`), so a field
misspelt or of the wrong type fails where it is emitted, not in a reader three processes
away; the server reads each line back through the same union and matches on the classes.
`baton schema` writes the union's JSON Schema (`schemas/events.schema.json`), and the VS
Code extension's types (`client-vscode/src/events.ts`) are generated from that schema
(`python -m baton_lsp.model.events --typescript`; a test holds the committed file equal).

Fields a kind does not always carry are optional; `Run.emit` serialises only the fields an
emitter set, so a line carries what the engine knew and nothing it did not.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .states import RunStatus, StepStatus


class _Event(BaseModel):
    """What every event carries: the workflow and when (UTC, ISO 8601)."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str | None = None
    at: str | None = None


class TransitionEvent(_Event):
    """The state machine moved (`source` → `target`), checkpointed at `checkpoint`."""

    event: Literal["transition"]
    source: str
    target: str
    reason: str | None = None
    checkpoint: str | None = None


class WaveEvent(_Event):
    """A wave of independent plan phases starts (`isolated`: each in its own worktree)."""

    event: Literal["wave"]
    wave: int
    total: int
    phases: list[str]
    isolated: bool = False


class StepEvent(_Event):
    """An agent step started, finished or failed."""

    event: Literal["step"]
    step: str
    state: str
    status: Literal[StepStatus.RUNNING, StepStatus.DONE, StepStatus.FAILED]
    attempt: int | None = None
    runner: str | None = None
    artifact: str | None = None
    checkpoint: str | None = None
    failure: str | None = None
    message: str | None = None
    context: dict[str, Any] | None = None


class SignalEvent(_Event):
    """A return signal an agent printed (`NAME: value`)."""

    event: Literal["signal"]
    step: str
    name: str
    value: str


class CheckpointEvent(_Event):
    """A checkpoint was written."""

    event: Literal["checkpoint"]
    label: str
    path: str
    status: str | None = None
    state: str | None = None


class FinishedEvent(_Event):
    """The run ended: complete, failed or cancelled (`outcome`: `needs_attention` when a
    complete run asks for review)."""

    event: Literal["finished"]
    status: Literal[RunStatus.COMPLETE, RunStatus.FAILED, RunStatus.CANCELLED]
    state: str | None = None
    message: str | None = None
    checkpoint: str | None = None
    outcome: str | None = None
    step: str | None = None
    failure: str | None = None


class MergeEvent(_Event):
    """A phase's branch was merged, or its merge stopped (`conflicts`)."""

    event: Literal["merge"]
    phase: str
    status: str | None = None
    branch: str | None = None
    commit: str | None = None
    conflicts: list[str] | None = None


class WaitingEvent(_Event):
    """This run waits for another run of the repository (`holder`) to finish `holder_what`."""

    event: Literal["waiting"]
    what: str
    holder: str | None = None
    holder_what: str | None = None


class ReconciledEvent(_Event):
    """What a dead run left in the repository, and what was done about it."""

    event: Literal["reconciled"]
    what: str


class ClassificationEvent(_Event):
    """How the request was classified."""

    event: Literal["classification"]
    scope: str
    complexity: int
    topics: list[str] = []
    source: str | None = None
    confidence: float | None = None


class ClassificationDifference(BaseModel):
    """One key on which the state file and the checkpoint disagree."""

    model_config = ConfigDict(extra="forbid")

    key: str
    state_file: Any = None
    checkpoint: Any = None


class ClassificationMismatchEvent(_Event):
    """On resume the state file's classification differed from the checkpoint's (which wins)."""

    event: Literal["classification_mismatch"]
    differences: list[ClassificationDifference]


class ClassifierFallbackEvent(_Event):
    """The classifier agent failed; classification fell back to keywords."""

    event: Literal["classifier_fallback"]
    message: str


class SupervisorEvent(_Event):
    """A coordination tier (research, `implementation`, `testing`) started or aggregated."""

    event: Literal["supervisor"]
    mode: str
    status: Literal["running", "done"]
    workers: int
    tier: str | None = None
    completed: int | None = None
    context_tokens: int | None = None
    path: str | None = None


class IterationEvent(_Event):
    """An implementation iteration started, finished or halted."""

    event: Literal["iteration"]
    iteration: int
    max_iterations: int
    status: Literal["running", "done", "halted"]
    work_remaining: Any = None
    requires_continuation: bool | None = None
    halt_reason: str | None = None


class LogEvent(_Event):
    """A line the engine printed (under `--events`, human output travels as events too)."""

    event: Literal["log"]
    text: str


Event = Annotated[
    TransitionEvent | WaveEvent | StepEvent | SignalEvent | CheckpointEvent | FinishedEvent
    | MergeEvent | WaitingEvent | ReconciledEvent | ClassificationEvent
    | ClassificationMismatchEvent | ClassifierFallbackEvent | SupervisorEvent | IterationEvent
    | LogEvent,
    Field(discriminator="event")]
"""Every event kind, told apart by its `event` field."""

EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def read_event(line: bytes | str) -> Event | None:
    """One `--events` line read back (None for a line that is no event this Baton knows:
    a follower skips it rather than guessing at its fields)."""
    try:
        return EVENTS.validate_json(line)
    except ValueError:  # pydantic's ValidationError is one, and so is bad JSON
        return None


def to_json(event: Event) -> str:
    """One event as the JSON line `--events` prints: only the fields its emitter set."""
    data = event.model_dump(mode="json", exclude_unset=True)
    return json.dumps({"event": data.pop("event"), **data})


class EventSchema:
    """The union described as JSON Schema for `baton schema` (a union has no model class)."""

    @staticmethod
    def model_json_schema(*, by_alias: bool = True,
                          mode: Literal["validation", "serialization"] = "validation"
                          ) -> dict[str, Any]:
        return EVENTS.json_schema(by_alias=by_alias, mode=mode)


def typescript() -> str:
    """The union as TypeScript declarations, generated from its JSON Schema (the extension's
    `src/events.ts`)."""
    schema = EventSchema.model_json_schema()
    defs: dict[str, Any] = schema.get("$defs", {})
    out = ["// Generated from schemas/events.schema.json by "
           "`python -m baton_lsp.model.events --typescript`.",
           "// Do not edit: tests/model/test_events.py holds this file equal to the generator.",
           ""]

    def ts_type(prop: dict[str, Any]) -> str:
        if "$ref" in prop:
            return str(prop["$ref"]).rsplit("/", 1)[-1]
        if "const" in prop:
            return json.dumps(prop["const"])
        if "enum" in prop:
            return " | ".join(json.dumps(v) for v in prop["enum"])
        if "anyOf" in prop:
            return " | ".join(dict.fromkeys(ts_type(p) for p in prop["anyOf"]))
        kind = prop.get("type")
        if kind == "string":
            return "string"
        if kind in ("integer", "number"):
            return "number"
        if kind == "boolean":
            return "boolean"
        if kind == "null":
            return "null"
        if kind == "array":
            item = ts_type(prop.get("items", {}))
            return f"({item})[]" if "|" in item else f"{item}[]"
        if kind == "object":
            return "Record<string, unknown>"
        return "unknown"

    names = []
    for name in sorted(defs):
        body = defs[name]
        required = set(body.get("required", []))
        doc = " ".join(str(body.get("description", "")).split())
        if doc:
            out.append(f"/** {doc} */")
        out.append(f"export interface {name} {{")
        for field, prop in body.get("properties", {}).items():
            optional = "" if field in required else "?"
            out.append(f"  readonly {field}{optional}: {ts_type(prop)};")
        out.append("}")
        out.append("")
        if "event" in body.get("properties", {}):
            names.append(name)
    out.append("/** Every event kind, told apart by its `event` field. */")
    out.append(f"export type BatonEvent = {' | '.join(names)};")
    out.append("")
    out.append("/** The `event` field's values. */")
    kinds = [defs[n]["properties"]["event"]["const"] for n in names]
    out.append("export type BatonEventKind = BatonEvent[\"event\"];")
    out.append(f"export const EVENT_KINDS: readonly BatonEventKind[] = "
               f"[{', '.join(json.dumps(k) for k in sorted(kinds))}];")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:] != ["--typescript"]:
        sys.exit("usage: python -m baton_lsp.model.events --typescript")
    sys.stdout.write(typescript())
