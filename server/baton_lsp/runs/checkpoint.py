"""Load, migrate and judge checkpoint files.

`load_checkpoint` reads any known checkpoint, validates it against the model of its own
version, then replays `migrate_checkpoint_format` of `checkpoint-utils.sh` in memory
(1.0 → 1.1 → 1.2 → 1.3 → 2.0 → 2.1, defaults merged per step) and validates the result as the
canonical 2.1 `Checkpoint`. Migration works on plain dicts, like the jq original, so keys no
model knows survive in their original order. `migrate_file` persists the result atomically
next to a byte-identical `<file>.backup`.

Every failure is a `CheckpointError` with a one-line message; callers never see a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from ..errors import CheckpointError as CheckpointError
from ..model.base import FieldRecord
from ..model.states import MIGRATION_TRANSITIONS, PHASE_STATES, RunStatus, Scope, State
from . import confine

if TYPE_CHECKING:  # pydantic and the models are imported where a model is built
    from pydantic import BaseModel, ValidationError

    from ..model.checkpoint import (
        Checkpoint,
        IterationCheckpoint,
        SupervisorCheckpoint,
    )

CURRENT_VERSION = "2.1"
CHAIN: tuple[str, ...] = ("1.0", "1.1", "1.2", "1.3", "2.0", "2.1")
MIGRATED_REASONING = "Migrated from v2.0 (defaults applied, re-classification recommended)"
MAX_RESUME_AGE = timedelta(days=7, hours=1)  # check_safe_resume_conditions' 1-hour buffer
MAX_ERRORS_SHOWN = 8

M = TypeVar("M", bound="BaseModel")
CheckpointKind = Literal["checkpoint", "iteration", "supervisor"]
if TYPE_CHECKING:
    AnyCheckpoint = Checkpoint | IterationCheckpoint | SupervisorCheckpoint


_READING = ("path", "kind", "source_version", "effective_version", "original", "data",
            "checkpoint", "steps", "notes")


class LoadedCheckpoint(FieldRecord):
    """A checkpoint as read, and its migrated canonical form.

    `source_version` is what the file declares (absent = "1.0"); `effective_version` is where
    the chain really started, which differs for the 2.x quirk files (see `notes`).
    """

    _FIELDS = _READING

    def __init__(self, path: Path | None, kind: CheckpointKind, source_version: str | None,
                 effective_version: str | None, original: dict[str, Any],
                 data: dict[str, Any], checkpoint: AnyCheckpoint,
                 steps: list[str] | None = None, notes: list[str] | None = None) -> None:
        self.path = path
        self.kind = kind
        self.source_version = source_version
        self.effective_version = effective_version
        self.original = original
        self.data = data
        self.checkpoint = checkpoint
        self.steps: list[str] = [] if steps is None else steps
        self.notes: list[str] = [] if notes is None else notes

    @property
    def migrated(self) -> bool:
        return bool(self.steps)


class MigrationResult(FieldRecord):
    """What `migrate_file` did: the reading, the file, its backup, whether it was written."""

    _FIELDS = ("loaded", "target", "backup", "written")

    def __init__(self, loaded: LoadedCheckpoint, target: Path, backup: Path | None,
                 written: bool) -> None:
        self.loaded = loaded
        self.target = target
        self.backup = backup
        self.written = written


# --- reading --------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_json_object(raw: bytes | str, source: str) -> dict[str, Any]:
    """Decode and parse; only a JSON object is a checkpoint."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CheckpointError(
                f"{source}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            ) from None
    else:
        text = raw
    if not text.strip():
        raise CheckpointError(f"{source}: file is empty")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise CheckpointError(f"{source}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, integers beyond the digit limit
        raise CheckpointError(f"{source}: invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{source}: not a JSON object (found {_json_type(data)})")
    return data


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def format_validation_error(exc: ValidationError, data: Any) -> str:
    """`field.path: message` for each problem; union member tags pydantic adds to a location
    are dropped by walking the input, and one field's alternatives are merged."""
    grouped: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False):
        path = _loc_path(err["loc"], data, err["type"] == "missing")
        msgs = grouped.setdefault(path, [])
        if err["msg"] not in msgs:
            msgs.append(err["msg"])
    parts = [f"{path}: {', or '.join(msgs)}" for path, msgs in grouped.items()]
    shown = parts[:MAX_ERRORS_SHOWN]
    if len(parts) > len(shown):
        shown.append(f"(and {len(parts) - len(shown)} more)")
    return "; ".join(shown)


def _loc_path(loc: tuple[int | str, ...], data: Any, missing: bool) -> str:
    out = ""
    cur = data
    for i, el in enumerate(loc):
        if isinstance(el, int) and isinstance(cur, list) and 0 <= el < len(cur):
            out += f"[{el}]"
            cur = cur[el]
        elif isinstance(el, str) and isinstance(cur, dict) and el in cur:
            out += f".{el}" if out else el
            cur = cur[el]
        elif missing and i == len(loc) - 1:
            out += f".{el}" if out else str(el)
        # anything else is a union member or validator tag, not a place in the file
    return out or "(document)"


def _validate(model: type[M], data: dict[str, Any], source: str, what: str) -> M:
    # pydantic only where a model is built
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CheckpointError(f"{source}: {what}: {format_validation_error(exc, data)}") from None


# --- migration ------------------------------------------------------------------------------


def _phase_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,6}", value):
        return int(value)
    return None


def phase_to_state(value: Any) -> State:
    """`map_phase_to_state`: 0..7 name the states in order; anything else is initialize."""
    number = _phase_number(value)
    if number is not None and 0 <= number < len(PHASE_STATES):
        return PHASE_STATES[number]
    return State.INITIALIZE


_CONNECTORS = ("to ", "and ", "for ")


def guess_scope(description: str | None) -> Scope:
    """The 1.3 → 2.0 scope guess from `workflow_description`, as the grep -Ei chain does it
    (line by line, substrings, first match wins): a line starting with "research" and no
    plan/implement anywhere → research-only; research|analyze … to |and |for … plan on one
    line → research-and-plan; fix|debug|troubleshoot → debug-only; else full-implementation.

    The middle test is a linear scan instead of the original regex, whose nested `.*` would
    backtrack for a very long time on a hostile description.
    """
    if not description:
        return Scope.FULL_IMPLEMENTATION
    lines = description.lower().split("\n")
    if any(line.startswith("research") for line in lines) and not any(
        "plan" in line or "implement" in line for line in lines
    ):
        return Scope.RESEARCH_ONLY
    if any(_research_to_plan(line) for line in lines):
        return Scope.RESEARCH_AND_PLAN
    if any(w in line for line in lines for w in ("fix", "debug", "troubleshoot")):
        return Scope.DEBUG_ONLY
    return Scope.FULL_IMPLEMENTATION


def _research_to_plan(line: str) -> bool:
    """`(research|analyze).*(to |and |for ).*(plan|planning)`: the earliest match of each
    part leaves the most room for the next, so three `find`s decide it."""
    starts = [i + len(w) for w in ("research", "analyze") if (i := line.find(w)) >= 0]
    if not starts:
        return False
    after = min(starts)
    joins = [j + len(c) for c in _CONNECTORS if (j := line.find(c, after)) >= 0]
    return bool(joins) and line.find("plan", min(joins)) >= 0


def _fill(target: dict[str, Any], defaults: dict[str, Any]) -> None:
    """jq `.key // default`: absent or null takes the default, in place (key order kept)."""
    for key, value in defaults.items():
        if target.get(key) is None:
            target[key] = value


def _merged(existing: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    out = dict(existing) if isinstance(existing, dict) else {}
    _fill(out, defaults)
    return out


def _to_1_1(d: dict[str, Any], notes: list[str]) -> None:
    d["schema_version"] = "1.1"
    _fill(d, {"replanning_count": 0, "last_replan_reason": None, "replan_phase_counts": {},
              "replan_history": []})


def _to_1_2(d: dict[str, Any], notes: list[str]) -> None:
    d["schema_version"] = "1.2"
    _fill(d, {"debug_report_path": None, "user_last_choice": None, "debug_iteration_count": 0})


def _to_1_3(d: dict[str, Any], notes: list[str]) -> None:
    d["schema_version"] = "1.3"
    ws = d.get("workflow_state")
    ws = ws if isinstance(ws, dict) else {}
    for key in ("topic_directory", "topic_number", "template_source", "template_variables"):
        value = ws.get(key)
        # jq truthiness: only null and false are "absent". Unlike the original, an existing
        # top-level value is kept rather than overwritten with null.
        d[key] = value if value is not None and value is not False else d.get(key)
    _fill(d, {
        "context_preservation": {"pruning_log": [], "artifact_metadata_cache": {},
                                 "subagent_output_references": []},
        "spec_maintenance": {"parent_plan_path": None, "grandparent_plan_path": None,
                             "spec_updater_invocations": [], "checkbox_propagation_log": []},
    })


def _to_2_0(d: dict[str, Any], notes: list[str]) -> None:
    current_raw = d.get("current_phase")
    current_raw = 0 if current_raw is None else current_raw
    completed: list[State] = []
    unmapped: list[str] = []
    for phase in d.get("completed_phases") or []:
        state = phase_to_state(phase)
        if state is State.INITIALIZE and _phase_number(phase) != 0:
            unmapped.append(str(phase))
        if state not in completed:  # the state machine records each state once
            completed.append(state)
    current = phase_to_state(current_raw)
    if current is State.INITIALIZE and _phase_number(current_raw) != 0:
        notes.append(f"current_phase {current_raw} is outside 0-7: current state initialize")
    if unmapped:
        notes.append(f"completed phases outside 0-7 ({', '.join(dict.fromkeys(unmapped))}) "
                     "became initialize")
    description = d.get("workflow_description") or ""
    command = d.get("workflow_type")
    d["schema_version"] = "2.0"
    d["state_machine"] = {
        "current_state": current.value,
        "completed_states": [s.value for s in completed],
        "transition_table": dict(MIGRATION_TRANSITIONS),
        "workflow_config": {
            "scope": guess_scope(description).value,
            "description": description,
            "command": command if command is not None and command is not False else "unknown",
        },
    }
    d["phase_data"] = d.get("phase_data") if isinstance(d.get("phase_data"), dict) else {}
    d["supervisor_state"] = (d.get("supervisor_state")
                             if isinstance(d.get("supervisor_state"), dict) else {})
    d["error_state"] = _merged(d.get("error_state"), {
        "last_error": d.get("last_error"), "retry_count": 0, "failed_state": None})
    d["metadata"] = _merged(d.get("metadata"), {
        key: d.get(key) for key in ("checkpoint_id", "project_name", "created_at", "updated_at")})


def _to_2_1(d: dict[str, Any], notes: list[str]) -> None:
    sm = dict(d["state_machine"])
    config = sm.get("workflow_config")
    scope = (config.get("scope") if isinstance(config, dict) else None) or "full-implementation"
    sm["classification"] = _merged(sm.get("classification"), {
        "workflow_type": scope, "research_complexity": 2, "research_topics": [],
        "confidence": 0.0, "reasoning": MIGRATED_REASONING, "classified_at": None})
    d["state_machine"] = sm
    d["schema_version"] = "2.1"


_STEPS: dict[str, tuple[str, Callable[[dict[str, Any], list[str]], None]]] = {
    "1.0": ("1.1", _to_1_1),
    "1.1": ("1.2", _to_1_2),
    "1.2": ("1.3", _to_1_3),
    "1.3": ("2.0", _to_2_0),
    "2.0": ("2.1", _to_2_1),
}


def migrate_data(data: dict[str, Any], version: str) -> tuple[dict[str, Any], list[str],
                                                                list[str]]:
    """Run the chain from `version` to 2.1 on a copy; returns (data, steps, notes).

    Only the top level and the state machine section are rewritten, so a shallow copy keeps
    the input untouched without deep-copying arbitrarily nested caller state.
    """
    out = dict(data)
    steps: list[str] = []
    notes: list[str] = []
    while version in _STEPS:
        target, step = _STEPS[version]
        step(out, notes)
        steps.append(f"{version}->{target}")
        version = target
    return out, steps, notes


# --- loading --------------------------------------------------------------------------------


IDENTITY_FIELDS = ("checkpoint_id", "workflow_type", "project_name", "workflow_description",
                   "created_at", "updated_at", "status")
"""The 1.x top-level fields `save_checkpoint` writes into every checkpoint, 2.x included."""


def design_shape(data: dict[str, Any], source: str,
                 modified: datetime | None = None) -> tuple[dict[str, Any], list[str]]:
    """A 2.x checkpoint in the shape the design documents show it, read as `save_checkpoint`
    writes it: seed 001 names the version `version` and keeps the identity under `metadata`;
    seed 003's examples show only the 2.x sections. Identity fields are lifted from
    `metadata` or derived (the file name, the workflow command, the state), each noted; any
    other document is returned as it is."""
    sm = data.get("state_machine")
    if not isinstance(sm, dict) or (data.get("version") == "2.1" and "iteration" in data):
        return data, []
    out = dict(data)
    notes: list[str] = []
    if "schema_version" not in out and out.get("version") in ("2.0", "2.1"):
        out["schema_version"] = out["version"]
        notes.append(f"`version: {out['version']}` read as schema_version (the design "
                     "documents' shape)")
    if out.get("schema_version") not in ("2.0", "2.1"):
        return data, []
    meta = found if isinstance(found := out.get("metadata"), dict) else {}
    lifted = [k for k in IDENTITY_FIELDS if k not in out and k in meta]
    for key in lifted:
        out[key] = meta[key]
    if lifted:
        notes.append(f"{', '.join(lifted)} read from `metadata`")
    config = wc if isinstance(wc := sm.get("workflow_config"), dict) else {}
    topic = config.get("topic_path")
    derived = {
        "checkpoint_id": Path(source).stem or "checkpoint",
        "workflow_type": str(config.get("command") or "workflow"),
        "project_name": Path(topic).name if isinstance(topic, str) and topic.strip("/")
        else Path(source).stem or "project",
        "created_at": out.get("updated_at") if isinstance(out.get("updated_at"), str) else
        (modified or datetime(1970, 1, 1, tzinfo=UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": "completed" if sm.get("current_state") == "complete" else "in_progress",
    }
    missing = [k for k in derived if out.get(k) is None]
    for key in missing:
        out[key] = derived[key]
    if missing:
        notes.append("not in the file, derived: " + ", ".join(
            f"{k} = {derived[k]!r}" for k in missing))
    return out, notes


def detect_kind(data: dict[str, Any], source: str,
                ) -> tuple[CheckpointKind, str | None, str | None, list[str]]:
    """(kind, declared version, effective version, notes)."""
    if data.get("version") == "2.1" and "iteration" in data:
        return "iteration", "2.1", "2.1", []
    if "schema_version" not in data and "supervisor_id" in data:
        return "supervisor", None, None, []
    raw = data.get("schema_version")
    notes: list[str] = []
    if raw is None:
        declared = "1.0"
        notes.append("no schema_version: treated as 1.0")
    elif not isinstance(raw, str):
        raise CheckpointError(
            f"{source}: schema_version must be a string such as \"1.2\", not {_json_type(raw)}")
    elif raw not in CHAIN:
        raise CheckpointError(
            f"{source}: unknown checkpoint schema_version {raw!r} (known: {', '.join(CHAIN)})")
    else:
        declared = raw
    effective = declared
    if declared in ("2.0", "2.1"):
        sm = data.get("state_machine")
        if sm is None:
            # save_checkpoint writes `state_machine: null` when the caller's state has none.
            effective = "1.3"
            notes.append(f"schema_version {declared} without a state_machine section: "
                         "migrated from the 1.x fields as 1.3")
        elif declared == "2.1" and isinstance(sm, dict) and "classification" not in sm:
            # The 1.3 -> 2.0 step writes the constant "2.1" before classification exists.
            effective = "2.0"
            notes.append("schema_version 2.1 without state_machine.classification: "
                         "treated as 2.0")
    return "checkpoint", declared, effective, notes


def parse_checkpoint(raw: bytes | str, source: str = "<checkpoint>",
                     path: Path | None = None) -> LoadedCheckpoint:
    """Parse, detect, validate and migrate in memory; raises `CheckpointError`."""
    try:
        return _parse(raw, source, path)
    except RecursionError:
        raise CheckpointError(f"{source}: nested too deeply to process") from None


def _read(raw: bytes | str, source: str, path: Path | None
          ) -> tuple[dict[str, object], dict[str, object], CheckpointKind, str | None,
                     str | None, list[str]]:
    """(original, data in the engine's shape, kind, declared, effective version, notes)."""
    original = read_json_object(raw, source)
    modified = None
    if path is not None:
        with contextlib.suppress(OSError):
            modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    data, shape_notes = design_shape(original, source, modified)
    kind, declared, effective, notes = detect_kind(data, source)
    return original, data, kind, declared, effective, shape_notes + notes


def _parse(raw: bytes | str, source: str, path: Path | None) -> LoadedCheckpoint:
    # the models (pydantic) only when a checkpoint is parsed
    from ..model.checkpoint import (
        VERSION_MODELS,
        Checkpoint,
        IterationCheckpoint,
        SupervisorCheckpoint,
    )

    original, data, kind, declared, effective, notes = _read(raw, source, path)
    if kind == "iteration":
        it = _validate(IterationCheckpoint, data, source, "invalid iteration checkpoint")
        return LoadedCheckpoint(path, kind, declared, effective, original, data, it, [], notes)
    if kind == "supervisor":
        sup = _validate(SupervisorCheckpoint, data, source, "invalid supervisor checkpoint")
        return LoadedCheckpoint(path, kind, None, None, original, data, sup, [], notes)
    assert effective is not None
    _validate(VERSION_MODELS[effective], data, source, f"invalid {effective} checkpoint")
    migrated, steps, step_notes = migrate_data(data, effective)
    checkpoint = _validate(Checkpoint, migrated, source,
                           f"checkpoint invalid after migration {effective}->{CURRENT_VERSION}")
    return LoadedCheckpoint(path, kind, declared, effective, original, migrated, checkpoint,
                            steps, notes + step_notes)


class _HasPlanPath(Protocol):
    @property
    def plan_path(self) -> str | None: ...


class ResumeFacts(Protocol):
    """What `safe_resume_problems` and `resume_age_turns` read of a checkpoint: a
    `CheckpointV10` (or later) model, or `DataFacts`."""

    @property
    def status(self) -> str: ...

    @property
    def created_at(self) -> str: ...

    @property
    def last_error(self) -> object: ...

    @property
    def workflow_state(self) -> _HasPlanPath | None: ...


class _Section:
    """A typed section of a conforming document (`workflow_state`, `error_state`)."""

    __slots__ = ("last_error", "plan_path")

    def __init__(self, section: object) -> None:
        fields = section if isinstance(section, dict) else {}
        plan = fields.get("plan_path")
        self.plan_path: str | None = plan if isinstance(plan, str) else None
        self.last_error: object = fields.get("last_error")


class DataFacts:
    """A 2.1 checkpoint's fields read from its migrated document, for a check without
    pydantic: once `model.checkpoint_shape.conforms` vouched for the document, the model
    would hold these very values (nothing is coerced), or its defaults for absent ones."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, object]) -> None:
        self.data = data

    def _text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) else None

    @property
    def status(self) -> str:
        return self._text("status") or ""

    @property
    def created_at(self) -> str:
        return self._text("created_at") or ""

    @property
    def updated_at(self) -> str | None:
        return self._text("updated_at")

    @property
    def last_error(self) -> object:
        return self.data.get("last_error")

    @property
    def tests_passing(self) -> bool | None:
        value = self.data.get("tests_passing")
        return value if isinstance(value, bool) else None

    @property
    def plan_modification_time(self) -> int | float | None:
        value = self.data.get("plan_modification_time")
        return value if isinstance(value, int | float) else None

    @property
    def workflow_state(self) -> _Section | None:
        section = self.data.get("workflow_state")
        return _Section(section) if isinstance(section, dict) else None

    @property
    def error_state(self) -> _Section:
        return _Section(self.data.get("error_state"))

    def with_created_at(self, value: str) -> DataFacts:
        return DataFacts({**self.data, "created_at": value})


class CheckedCheckpoint(FieldRecord):
    """`LoadedCheckpoint` for a document `conforms` vouched for: the same reading, with
    `DataFacts` where the model would be."""

    _FIELDS = _READING

    def __init__(self, path: Path | None, kind: CheckpointKind, source_version: str | None,
                 effective_version: str | None, original: dict[str, object],
                 data: dict[str, object], checkpoint: DataFacts,
                 steps: list[str] | None = None, notes: list[str] | None = None) -> None:
        self.path = path
        self.kind = kind
        self.source_version = source_version
        self.effective_version = effective_version
        self.original = original
        self.data = data
        self.checkpoint = checkpoint
        self.steps: list[str] = [] if steps is None else steps
        self.notes: list[str] = [] if notes is None else notes


VERSION_MODEL_NAMES = {"1.0": "CheckpointV10", "1.1": "CheckpointV11", "1.2": "CheckpointV12",
                       "1.3": "CheckpointV13", "2.0": "CheckpointV20", "2.1": "Checkpoint"}
"""`model.checkpoint.VERSION_MODELS` by class name, for `conforms` (a test holds them equal)."""


def parse_for_check(raw: bytes | str, source: str = "<checkpoint>", path: Path | None = None
                    ) -> LoadedCheckpoint | CheckedCheckpoint:
    """`parse_checkpoint` for the checker: without pydantic when `conforms` vouches for the
    document in its own version and, migrated, as 2.1 (the same reading: only valid documents
    skip the models); else `parse_checkpoint` itself, whose errors are the ones reported."""
    # pydantic-free shape check first
    from ..model.checkpoint_shape import conforms

    try:
        original, data, kind, declared, effective, notes = _read(raw, source, path)
        if kind == "checkpoint" and effective is not None and conforms(
                VERSION_MODEL_NAMES[effective], data):
            migrated, steps, step_notes = migrate_data(data, effective)
            if conforms("Checkpoint", migrated):
                return CheckedCheckpoint(path, kind, declared, effective, original, migrated,
                                         DataFacts(migrated), steps, notes + step_notes)
    except RecursionError:
        pass  # parse_checkpoint says so
    return parse_checkpoint(raw, source, path)


def load_checkpoint(path: str | os.PathLike[str]) -> LoadedCheckpoint:
    """Read a checkpoint file of any known version and migrate it to 2.1 in memory."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise CheckpointError(f"{p}: no such file") from None
    except OSError as exc:
        raise CheckpointError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(f"{p}: not a regular file")
    try:
        raw = confine.read_regular(p)  # no hang if a FIFO replaced the file since the stat
    except OSError as exc:
        raise CheckpointError(f"{p}: cannot read: {confine.describe(exc)}") from None
    return parse_checkpoint(raw, str(p), p)


def dump_checkpoint(data: dict[str, Any]) -> str:
    """JSON text as jq writes it (2-space indent); falls back to ASCII escapes when a string
    holds a lone surrogate that UTF-8 cannot encode."""
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, indent=2, ensure_ascii=True) + "\n"
    except RecursionError:
        raise CheckpointError("checkpoint nested too deeply to write") from None
    return text


def migrate_file(path: str | os.PathLike[str]) -> MigrationResult:
    """Migrate a checkpoint file to 2.1 in place, keeping the original as `<file>.backup`.

    Nothing is written when the file is already current (or is an iteration or supervisor
    checkpoint). The original stays intact on any failure: both writes are atomic renames.
    """
    p = Path(path)
    if p.is_symlink():
        raise CheckpointError(f"{p}: is a symbolic link; migrate the file it points to")
    loaded = load_checkpoint(p)
    if not loaded.migrated:
        return MigrationResult(loaded, p, None, False)
    backup = p.with_name(p.name + ".backup")
    try:
        raw = confine.read_regular(p)
        mode = stat.S_IMODE(p.stat().st_mode)
        payload = dump_checkpoint(loaded.data).encode("utf-8")
        folder = Path(os.path.realpath(p.parent))  # the user named the file: its folder
        confine.write_atomic(folder, backup.name, raw, mode)
        confine.write_atomic(folder, p.name, payload, mode)
    except OSError as exc:
        raise CheckpointError(f"{p}: cannot write: {exc.strerror or exc}") from None
    return MigrationResult(loaded, p, backup, True)


# --- judging --------------------------------------------------------------------------------


def _parse_time(value: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def resume_age_turns(checkpoint: ResumeFacts, now: datetime | None = None
                     ) -> datetime | None:
    """When `safe_resume_problems` will start reporting the checkpoint's age (after
    `MAX_RESUME_AGE`), or None when the clock will not change its answer any more (no
    readable timestamp, or already too old): how long a judgement may be kept."""
    created = _parse_time(checkpoint.created_at) if checkpoint.created_at else None
    if created is None:
        return None
    moment = now or datetime.now(UTC)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    turns = created + MAX_RESUME_AGE
    return turns if turns > moment else None


def safe_resume_problems(checkpoint: ResumeFacts, plan_path: str | os.PathLike[str] | None
                         = None, now: datetime | None = None) -> list[str]:
    """Why a checkpoint may not be resumed without asking (`check_safe_resume_conditions`);
    empty means safe. Unlike `get_skip_reason` every failing condition is reported, so the
    user fixes them in one go.

    `plan_path` overrides `workflow_state.plan_path` (e.g. resolved against a workspace).
    """
    problems: list[str] = []
    if getattr(checkpoint, "tests_passing", None) is False:
        problems.append("Tests failing in last run (tests_passing is false)")
    last_error = checkpoint.last_error
    error_state = getattr(checkpoint, "error_state", None)
    if (last_error is None or last_error is False) and error_state is not None:
        last_error = error_state.last_error
    if last_error is not None and last_error is not False:
        problems.append(f"Last run had errors: {_short(last_error)}")
    if checkpoint.status != RunStatus.IN_PROGRESS:  # the bash side's word too
        problems.append(f"Checkpoint status: {checkpoint.status} (expected: in_progress)")
    if checkpoint.created_at:
        created = _parse_time(checkpoint.created_at)
        moment = now or datetime.now(UTC)
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        if created is None:
            problems.append(f"Checkpoint created_at {checkpoint.created_at!r} is not a "
                            "timestamp (age unknown)")
        elif moment - created > MAX_RESUME_AGE:
            days = int((moment - created).total_seconds() // 86400)
            problems.append(f"Checkpoint {days} days old (max: 7 days)")
    recorded = getattr(checkpoint, "plan_modification_time", None)
    ws = checkpoint.workflow_state
    plan = Path(plan_path) if plan_path is not None else (
        Path(ws.plan_path) if ws is not None and ws.plan_path else None)
    if recorded is not None and plan is not None and os.path.isfile(plan):  # no OSError
        current = int(plan.stat().st_mtime)
        if current != recorded:
            problems.append(f"Plan file modified since checkpoint ({plan}: mtime {current}, "
                            f"checkpoint recorded {recorded})")
    return problems


def iteration_problems(checkpoint: IterationCheckpoint, base: Path | None = None
                       ) -> tuple[list[str], list[str]]:
    """`validate_iteration_checkpoint` as (errors, warnings). A `work_remaining` of the wrong
    type never gets here: the model refuses it at load. Relative paths resolve against
    `base` (default: the working directory)."""
    def resolve(value: str) -> Path:
        p = Path(value)
        return p if p.is_absolute() or base is None else base / p

    errors: list[str] = []
    warnings: list[str] = []
    if checkpoint.iteration > checkpoint.max_iterations:
        errors.append(f"iteration {checkpoint.iteration} exceeds max_iterations "
                      f"{checkpoint.max_iterations}")
    if not os.path.exists(resolve(checkpoint.plan_path)):  # a name too long: False
        errors.append(f"plan_path does not exist: {checkpoint.plan_path}")
    if checkpoint.continuation_context and \
            not os.path.exists(resolve(checkpoint.continuation_context)):
        warnings.append(f"continuation file missing: {checkpoint.continuation_context}")
    if checkpoint.halt_reason is not None and checkpoint.known_halt_reason is None:
        # loaded already: the checkpoint came through the models
        from ..model.checkpoint import HaltReason

        known = ", ".join(r.value for r in HaltReason)
        warnings.append(f"unknown halt_reason {checkpoint.halt_reason!r} (expected: {known})")
    return errors, warnings
