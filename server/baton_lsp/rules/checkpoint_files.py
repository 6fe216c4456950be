"""BTN41x: checkpoint JSON files — the schema (any version 1.0 → 2.1, iteration and
supervisor checkpoints), migration to 2.1, tampering with the engine's history, iteration
checkpoints the loop cannot continue from, and checkpoints a resume should not trust blindly.

The checkpoint models and the run store are imported by the rules that need them: most
checks hold no checkpoint, and every `baton check` would pay for loading them.

Checkpoints are what `baton resume` trusts, so a file a user opens (or edits by hand) gets
the same validation the engine applies, with pydantic's errors placed on the offending key
or value instead of a one-line message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.base import Finding, Kind, Range, Severity
from ..model.data import CheckpointDoc
from ..model.states import State
from ..parse.jsonpos import Positions
from ..runs.confine import read_head
from .base import RuleContext, rule

if TYPE_CHECKING:
    from pydantic import BaseModel

CHECKPOINT = (Kind.CHECKPOINT,)
_STORE_FILE = re.compile(r"^\d{6}\.json$")
MAX_SCHEMA_FINDINGS = 50


def _positions(ctx: RuleContext) -> Positions:
    return Positions("\n".join(ctx.lines))


def _shaped(doc: CheckpointDoc) -> dict[str, Any]:
    """The document as the engine reads it (the design documents' 2.x shape normalised)."""
    from ..runs.checkpoint import design_shape  # only the rules that need it load it

    assert doc.data is not None
    return design_shape(doc.data, doc.path)[0]


def _detect(doc: CheckpointDoc) -> tuple[str, str | None, str | None, list[str]]:
    """The engine's own detection of the checkpoint's kind and version."""
    from ..runs.checkpoint import detect_kind  # only the rules that need it load it

    return detect_kind(_shaped(doc), doc.path)


def _model_name(kind: str, effective: str | None) -> str:
    """The name of the model `_model` returns, for `conforms`."""
    # pydantic-free: the name only
    from ..runs.checkpoint import VERSION_MODEL_NAMES

    if kind == "iteration":
        return "IterationCheckpoint"
    if kind == "supervisor":
        return "SupervisorCheckpoint"
    return VERSION_MODEL_NAMES[effective or "1.0"]


def _model(kind: str, effective: str | None) -> type[BaseModel]:
    # only the rules that need it load it
    from ..model.checkpoint import VERSION_MODELS, IterationCheckpoint, SupervisorCheckpoint

    if kind == "iteration":
        return IterationCheckpoint
    if kind == "supervisor":
        return SupervisorCheckpoint
    return VERSION_MODELS[effective or "1.0"]


def _error_range(pos: Positions, ctx: RuleContext, loc: tuple[Any, ...], data: Any,
                 missing: bool) -> Range:
    """The value at `loc` (skipping pydantic's union tags); for a missing field, the key of
    the object that lacks it."""
    path: list[str | int] = []
    cur = data
    for el in loc:
        here = (isinstance(el, int) and isinstance(cur, list) and 0 <= el < len(cur)) or (
            isinstance(el, str) and isinstance(cur, dict) and el in cur)
        if here:  # anything else is a union member or validator tag, not a place
            path.append(el)
            cur = cur[el]
    tup = tuple(path)
    found = (pos.key_range(tup) if missing and tup else pos.value_range(tup)) if tup else None
    if found is None:
        found = pos.key_range(tup[:-1]) if len(tup) > 1 else None
    return found or ctx.line_range(0)


@rule("BTN410", "checkpoint-unreadable", Severity.ERROR, CHECKPOINT)
def checkpoint_unreadable(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """The checkpoint is not a JSON object of a known checkpoint schema.

    `baton resume` (and the bash `load_checkpoint`) cannot use it: the newest sound
    checkpoint before it is used instead. Usually a write cut short or a hand edit; restore
    it from `<file>.backup` or the workflow's previous history entry.

    Reported:

        ==> .claude/data/checkpoints/implement_auth.json <==
        {
          "schema_version": "9.9",
          "checkpoint_id": "implement_auth_001"
        }

    Not reported:

        ==> .claude/data/checkpoints/implement_auth.json <==
        {
          "schema_version": "2.1",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-11-12T09:14:03Z",
          "status": "in_progress",
          "state_machine": {
            "current_state": "implement",
            "workflow_config": {"scope": "full-implementation", "command": "implement"},
            "classification": {"workflow_type": "full-implementation"}
          }
        }
    """
    if doc.error is not None:
        yield ctx.finding(doc.error_range or ctx.line_range(0), doc.error)
        return
    from ..runs.checkpoint import CheckpointError  # only the rules that need it load it

    try:
        _detect(doc)
    except CheckpointError as exc:
        pos = _positions(ctx)
        where = pos.value_range(("schema_version",)) or ctx.line_range(0)
        yield ctx.finding(where, str(exc).removeprefix(f"{doc.path}: "))


@rule("BTN411", "checkpoint-schema-violation", Severity.ERROR, CHECKPOINT)
def checkpoint_schema_violation(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """A field of the checkpoint does not match its schema version.

    Each problem is reported at its key or value: a state name that does not exist, a
    number where a list belongs, a required field missing (reported on the object that
    lacks it). The schemas are the ones `baton schema` prints and the engine validates
    against before it resumes.

    Reported:

        ==> .claude/data/checkpoints/implement_auth.json <==
        {
          "schema_version": "2.1",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-11-12T09:14:03Z",
          "status": "in_progress",
          "state_machine": {
            "current_state": "implemnt",
            "workflow_config": {"scope": "full-implementation", "command": "implement"},
            "classification": {"workflow_type": "full-implementation"}
          }
        }

    Not reported:

        ==> .claude/data/checkpoints/implement_auth.json <==
        {
          "schema_version": "2.1",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-11-12T09:14:03Z",
          "status": "in_progress",
          "state_machine": {
            "current_state": "implement",
            "workflow_config": {"scope": "full-implementation", "command": "implement"},
            "classification": {"workflow_type": "full-implementation"}
          }
        }
    """
    if doc.data is None:
        return
    from ..runs.checkpoint import CheckpointError  # only the rules that need it load it

    try:
        kind, _declared, effective, _notes = _detect(doc)
    except CheckpointError:
        return
    # only checkpoint files need it
    from ..model.checkpoint_shape import conforms

    shaped = _shaped(doc)
    if conforms(_model_name(kind, effective), shaped):
        return  # valid as it is: no need to build the models (pydantic) to say so
    # pydantic only for a checkpoint that does not conform
    from pydantic import ValidationError

    try:
        _model(kind, effective).model_validate(shaped)
    except ValidationError as exc:
        pos = _positions(ctx)
        errors = exc.errors(include_url=False)
        seen: set[tuple[Range, str]] = set()
        for err in errors[:MAX_SCHEMA_FINDINGS]:
            where = _error_range(pos, ctx, err["loc"], doc.data, err["type"] == "missing")
            dotted = ".".join(str(p) for p in err["loc"]) or "(document)"
            msg = f"{dotted}: {err['msg']}"
            if (where, msg) not in seen:
                seen.add((where, msg))
                yield ctx.finding(where, f"checkpoint {effective or kind}: {msg}")


@rule("BTN412", "checkpoint-outdated-schema", Severity.INFO, CHECKPOINT, fixable=True)
def checkpoint_outdated_schema(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """The checkpoint uses an older schema than 2.1.

    Baton reads it by migrating in memory, exactly as the bash `migrate_checkpoint_format`
    chain does (1.0 → 1.1 → 1.2 → 1.3 → 2.0 → 2.1). The quick fix "Migrate checkpoint to
    2.1" rewrites the file in the current schema (what `baton migrate FILE` does, which also
    keeps a `.backup`).

    Reported:

        ==> .claude/data/checkpoints/implement_auth.json <==
        {
          "schema_version": "1.2",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-11-12T09:14:03Z",
          "status": "in_progress",
          "current_phase": 2,
          "completed_phases": [1]
        }

    Not reported:

        ==> .claude/data/checkpoints/implement_auth.json <==
        {
          "schema_version": "2.1",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-11-12T09:14:03Z",
          "status": "in_progress",
          "state_machine": {
            "current_state": "implement",
            "workflow_config": {"scope": "full-implementation", "command": "implement"},
            "classification": {"workflow_type": "full-implementation"}
          }
        }
    """
    if doc.data is None:
        return
    # only the rules that need it load it
    from ..runs.checkpoint import CheckpointError, dump_checkpoint, parse_for_check

    try:
        kind, declared, effective, _notes = _detect(doc)
    except CheckpointError:
        return
    if kind != "checkpoint" or effective == "2.1":
        return
    try:
        loaded = parse_for_check("\n".join(ctx.lines), doc.path)
    except CheckpointError:
        return  # BTN411 explains why it cannot be migrated
    pos = _positions(ctx)
    where = pos.key_range(("schema_version",)) or ctx.line_range(0)
    last = len(ctx.lines) - 1
    whole = Range.span(0, 0, max(last, 0), len(ctx.lines[last]) if ctx.lines else 0)
    text = dump_checkpoint(loaded.data)
    steps = " → ".join([effective or "1.0", *[s.split("->")[-1] for s in loaded.steps]]) \
        if loaded.steps else f"{effective} → 2.1"
    yield ctx.finding(
        where, f"checkpoint schema {declared or '1.0 (no schema_version)'}"
        + (f" (read as {effective})" if effective != declared else "")
        + f": Baton migrates it in memory ({steps}); migrate the file to 2.1 to keep it "
        "current",
        fix=ctx.fix("Migrate checkpoint to 2.1", ctx.edit(whole, text.rstrip("\n")),
                    safe=False))


@rule("BTN413", "checkpoint-tampered", Severity.WARNING, CHECKPOINT)
def checkpoint_tampered(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """A file of a workflow's checkpoint history no longer matches the checksum the engine
    wrote into it.

    The engine writes `.claude/data/checkpoints/<id>/NNNNNN.json` atomically with a SHA-256
    of its own content, and on resume skips any entry that fails it (a torn write or a hand
    edit) in favour of the one before. Edit checkpoints through `baton resume --at N` rather
    than by hand.
    """
    if doc.data is None or not _STORE_FILE.match(Path(doc.path).name):
        return
    baton = doc.data.get("baton")
    if not isinstance(baton, dict) or "checksum" not in baton:
        return
    from ..runs.store import verify_bytes  # only the rules that need it load it

    try:  # read again as the store reads it: a FIFO swapped in is refused, not waited on
        raw, _ = read_head(ctx.root or Path(doc.path).parent, doc.path,
                           ctx.config.max_file_size + 1)
    except OSError:
        return  # gone or replaced since it was parsed: its next check says what it is
    _data, problem = verify_bytes(raw)
    if problem and "checksum" in problem:
        pos = _positions(ctx)
        where = pos.value_range(("baton", "checksum")) or ctx.line_range(0)
        yield ctx.finding(where, f"history entry {Path(doc.path).stem} {problem}; resume "
                          "skips it for the entry before")


def _iteration(doc: CheckpointDoc, ctx: RuleContext) -> tuple[list[str], list[str]]:
    """The engine's judgement (errors, warnings) of an iteration checkpoint, ([], []) for
    any other file; once per check for BTN414 and BTN415."""
    if "iteration" not in ctx.memo:
        ctx.memo["iteration"] = _judge_iteration(doc, ctx)
    judged: tuple[list[str], list[str]] = ctx.memo["iteration"]
    return judged


def _judge_iteration(doc: CheckpointDoc, ctx: RuleContext) -> tuple[list[str], list[str]]:
    """Relative paths resolve against the workspace root."""
    if doc.data is None:
        return [], []
    # only the rules that need it load it
    from ..runs.checkpoint import CheckpointError, iteration_problems

    try:
        kind = _detect(doc)[0]
    except CheckpointError:
        return [], []
    if kind != "iteration":
        return [], []
    # pydantic only where the models judged it
    from pydantic import ValidationError

    from ..model.checkpoint import IterationCheckpoint

    try:
        cp = IterationCheckpoint.model_validate(doc.data)
    except ValidationError:
        return [], []  # BTN411 reports it
    base = ctx.root or Path(doc.path).parent
    for value in (cp.plan_path, cp.continuation_context):
        if value:  # re-checked when the plan or the continuation file appears or goes
            ctx.depends_on.add(str(Path(value) if Path(value).is_absolute() else base / value))
    return iteration_problems(cp, base)


_PROBLEM_KEYS = (("exceeds max_iterations", "iteration"), ("plan_path", "plan_path"),
                 ("continuation", "continuation_context"), ("halt_reason", "halt_reason"))


def _problem_findings(ctx: RuleContext, problems: list[str]) -> Iterator[Finding]:
    """Each problem of an iteration checkpoint on the value it is about."""
    pos = _positions(ctx) if problems else None
    for problem in problems:
        yield ctx.finding(_problem_range(pos, ctx, problem), f"iteration checkpoint: {problem}")


def _problem_range(pos: Positions | None, ctx: RuleContext, problem: str) -> Range:
    key = next((k for marker, k in _PROBLEM_KEYS if marker in problem), None)
    found = pos.value_range((key,)) if key and pos is not None else None
    return found or ctx.line_range(0)


@rule("BTN414", "iteration-checkpoint-invalid", Severity.ERROR, CHECKPOINT, cross_file=True)
def iteration_checkpoint_invalid(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """A build-iteration checkpoint the iteration loop cannot continue from.

    `build_<workflow>_iteration_<n>.json` carries the loop's position: its `iteration` may
    not exceed `max_iterations` (the loop would never stop) and its `plan_path` must exist
    (the next iteration works through that plan). These are the checks the seeds'
    `validate_iteration_checkpoint` applies before it continues.

    Fix: correct `iteration`/`max_iterations`, or point `plan_path` at the plan (relative
    paths are read from the workspace root).

    Reported:

        ==> .claude/data/checkpoints/build_wf_iteration_7.json <==
        {"version": "2.1", "plan_path": "specs/001_x/plans/001-x.md",
         "iteration": 7, "max_iterations": 5}

    Not reported:

        ==> specs/001_x/plans/001-x.md <==
        # Plan

        ==> .claude/data/checkpoints/build_wf_iteration_2.json <==
        {"version": "2.1", "plan_path": "specs/001_x/plans/001-x.md",
         "iteration": 2, "max_iterations": 5}
    """
    yield from _problem_findings(ctx, _iteration(doc, ctx)[0])


@rule("BTN415", "iteration-checkpoint-suspect", Severity.WARNING, CHECKPOINT, cross_file=True)
def iteration_checkpoint_suspect(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """A build-iteration checkpoint names a continuation file that is gone, or a
    `halt_reason` the loop does not know.

    The next iteration reads its context from `continuation_context`; without the file it
    starts cold. `halt_reason` is one of context_threshold, max_iterations, stuck,
    completion, user_abort or error: anything else tells the reader nothing about why the
    loop stopped.

    Fix: restore or clear `continuation_context`; use one of the known halt reasons.

    Reported:

        ==> specs/001_x/plans/001-x.md <==
        # Plan

        ==> .claude/data/checkpoints/build_wf_iteration_3.json <==
        {"version": "2.1", "plan_path": "specs/001_x/plans/001-x.md",
         "iteration": 3, "max_iterations": 5, "halt_reason": "bored"}

    Not reported:

        ==> specs/001_x/plans/001-x.md <==
        # Plan

        ==> .claude/data/checkpoints/build_wf_iteration_3.json <==
        {"version": "2.1", "plan_path": "specs/001_x/plans/001-x.md",
         "iteration": 3, "max_iterations": 5, "halt_reason": "stuck"}
    """
    yield from _problem_findings(ctx, _iteration(doc, ctx)[1])


# --- BTN416: safe to resume? ----------------------------------------------------------------

_BASH_NAME = re.compile(r"^(?P<workflow>.+)_\d{8}_\d{6}\.json$")
"""`save_checkpoint`'s `<workflow_type>_<project_name>_<YYYYMMDD_HHMMSS>.json`."""
_FINISHED = frozenset({"completed", "complete"})  # the bash and the engine's word
_TERMINAL_STATES = frozenset(s.value for s in State if s.terminal)
_RESUME_PREFIX = "not safe to resume automatically: "


def _not_resumed_from(path: Path, ctx: RuleContext) -> bool:
    """Whether a resume would read another file than this one: an older entry of a Baton
    run's history (or any entry of a run still going), or an older `save_checkpoint` file of
    the same workflow (restore takes the newest by mtime). Both depend on the directory."""
    from ..workspace.discovery import engine_history_dir  # only the rules that need it load it

    if _STORE_FILE.match(path.name) and engine_history_dir(str(path.parent)):
        from ..runs.checkpoint import CheckpointError
        from ..runs.store import CheckpointStore, valid_id  # with hashlib: a run's history only

        ctx.depends_on.add(str(path.parent))
        ctx.trees.add(str(path.parent))  # which entry is the newest sound one
        if not valid_id(path.parent.name):
            return True
        store = CheckpointStore(path.parents[4], path.parent.name)
        try:
            latest = store.latest()
        except CheckpointError:
            return True  # nothing sound to resume from: BTN413 says why
        if latest.path.name != path.name:
            return True
        ctx.uncacheable()  # whether its engine still holds the lock is no file's content
        return store.locked()
    m = _BASH_NAME.match(path.name)
    if m is None:
        return False
    ctx.depends_on.add(str(path.parent))
    ctx.trees.add(str(path.parent))  # the siblings' modification times decide

    def stamp(p: Path) -> tuple[float, str]:
        try:
            return p.stat().st_mtime, p.name
        except OSError:
            return 0.0, p.name

    mine = stamp(path)
    try:
        siblings = [p for p in path.parent.iterdir() if p != path and (
            (s := _BASH_NAME.match(p.name)) is not None and s["workflow"] == m["workflow"])]
    except OSError:
        return False
    return any(stamp(p) > mine for p in siblings)


def _plan_bytes(ctx: RuleContext, plan: Path | None) -> bytes | None:
    """The saved bytes of a checkpoint's plan, when it is a regular file inside the
    workspace (read without following a link out of it or waiting on a FIFO); None when it
    is not, or is over `max-file-size` (then the resume's own judgement stands)."""
    if plan is None or ctx.root is None:
        return None
    limit = ctx.config.max_file_size
    try:
        data, size = read_head(ctx.root, plan, limit + 1)
    except OSError:
        return None
    return data if size <= limit else None


def _plan_file(ctx: RuleContext, value: str) -> Path | None:
    """The checkpoint's plan on this machine: relative to the workspace root, a path into
    another checkout's `.claude/` re-rooted here, any other absolute path as written (the
    bash resume reads it as it is); None for what only a shell could expand (`$HOME/…`)."""
    found = ctx.resolve(value, ctx.root) if ctx.root is not None else None
    if found is None and Path(value).is_absolute():
        return Path(value)
    return found


_RESUME_KEYS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("Tests failing", (("tests_passing",),)),
    ("Last run had errors", (("last_error",), ("error_state", "last_error"))),
    ("Checkpoint status", (("status",), ("metadata", "status"))),
    ("Plan file modified", (("plan_modification_time",),)),
    ("Plan file missing", (("workflow_state", "plan_path"),)),
)


def _resume_range(pos: Positions, ctx: RuleContext, problem: str, data: dict[str, Any],
                  age_key: str) -> Range:
    """The field the problem is about: the age on the timestamp it was measured from, a
    run's error on whichever of `last_error` / `error_state.last_error` holds it."""
    paths: tuple[tuple[str, ...], ...] = ((age_key,), ("metadata", age_key))
    for marker, candidates in _RESUME_KEYS:
        if problem.startswith(marker):
            paths = candidates
    if problem.startswith("Last run had errors") and data.get("last_error") in (None, False):
        paths = paths[::-1]
    for path in paths:
        found = pos.value_range(path)
        if found is not None:
            return found
    return ctx.line_range(0)


@rule("BTN416", "checkpoint-not-safely-resumable", Severity.INFO, CHECKPOINT, cross_file=True)
def checkpoint_not_safely_resumable(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """An unfinished workflow's checkpoint that a resume should not pick up without asking.

    These are the conditions of the seeds' `check_safe_resume_conditions`, which lets
    `/implement` continue from a checkpoint silently only when all of them hold: the last
    run's tests did not fail (`tests_passing` is not false), it recorded no error
    (`last_error`), the `status` is `in_progress`, the checkpoint is at most 7 days old
    (plus an hour), and the plan's modification time still equals
    `plan_modification_time`. A plan that existed when the checkpoint was written and is
    gone now is reported too: there is nothing left to continue. Each problem is reported
    on the field it is about; this is information for whoever resumes, not a defect of
    the file.

    Only the checkpoint a resume would read is judged: completed workflows are not, nor an
    older `<type>_<project>_<timestamp>.json` of the same workflow, nor any entry of
    Baton's own history (`.claude/data/checkpoints/<id>/NNNNNN.json`) but the newest sound
    one, and not while its run is still going. A history entry's age is counted from
    `updated_at` (when it was written), and its plan is compared by content
    (`baton.plan_sha256`, as `baton resume` does) rather than by modification time. The
    age depends on the clock: an open file is re-judged when it or its plan changes.

    Fix: review the workflow (`baton status ID`, or the file) and resume it deliberately
    (`baton resume ID --dry-run` shows what would run again), or delete a checkpoint you
    will not resume.

    Reported:

        ==> .claude/data/checkpoints/implement_auth_20251007_050046.json <==
        {
          "schema_version": "1.2",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-10-07T05:00:46Z",
          "status": "in_progress",
          "current_phase": 2,
          "tests_passing": true
        }

    Not reported:

        ==> .claude/data/checkpoints/implement_auth_20251007_050046.json <==
        {
          "schema_version": "1.2",
          "checkpoint_id": "implement_auth_001",
          "workflow_type": "implement",
          "project_name": "auth",
          "created_at": "2025-10-07T05:00:46Z",
          "status": "completed",
          "current_phase": 5,
          "tests_passing": true
        }
    """
    if doc.data is None:
        return
    # only the rules that need it load it
    from ..runs.checkpoint import (
        CheckpointError,
        DataFacts,
        parse_for_check,
        resume_age_turns,
        safe_resume_problems,
    )

    path = Path(doc.path)
    try:
        loaded = parse_for_check("\n".join(ctx.lines), doc.path, path)
    except CheckpointError:
        return  # BTN410/BTN411 explain why
    cp = loaded.checkpoint
    if not isinstance(cp, DataFacts):  # read by pydantic: its models are loaded already
        # loaded already: this document was read by pydantic
        from ..model.checkpoint import Checkpoint

        if not isinstance(cp, Checkpoint):
            return  # iteration and supervisor checkpoints have BTN414/BTN415
    shaped = _shaped(doc)
    sm = shaped.get("state_machine")
    if cp.status in _FINISHED or (
            isinstance(sm, dict) and sm.get("current_state") in _TERMINAL_STATES):
        return  # iteration and supervisor checkpoints have BTN414/BTN415
    if _not_resumed_from(path, ctx):
        return
    baton = shaped.get("baton") if isinstance(shaped.get("baton"), dict) else None
    age_key = "created_at"
    if baton is not None and _STORE_FILE.match(path.name) and cp.updated_at:
        age_key = "updated_at"
        cp = cp.with_created_at(cp.updated_at) if isinstance(cp, DataFacts) else \
            cp.model_copy(update={"created_at": cp.updated_at})
    raw_plan = cp.workflow_state.plan_path if cp.workflow_state is not None else None
    plan = _plan_file(ctx, raw_plan) if raw_plan else None
    if plan is not None:
        ctx.depends_on.add(str(plan))
        ctx.trees.add(str(plan))  # its modification time is judged, not only its content
    problems = safe_resume_problems(cp, plan_path=plan)
    turns = resume_age_turns(cp)
    if turns is not None:  # the clock alone will add the age problem then
        ctx.valid_until(turns.timestamp())
    recorded = baton.get("plan_sha256") if baton is not None else None
    saved = _plan_bytes(ctx, plan) if isinstance(recorded, str) else None
    if saved is not None:
        from ..runs.digest import bytes_edited  # only the rules that need it load it

        # Baton's record: the content decides (a touch or checkout is no edit, and an edit
        # in the checkpoint's own second is one); progress marked since is no edit either
        problems = [p for p in problems if not p.startswith("Plan file modified")]
        progress_free = baton.get("plan_progress_free") if baton is not None else None
        if bytes_edited(saved, recorded if isinstance(recorded, str) else None,
                        progress_free if isinstance(progress_free, str) else None):
            problems.append(f"Plan file modified since checkpoint ({plan}: its content is not "
                            "the content the checkpoint recorded in baton.plan_sha256)")
    if plan is not None and cp.plan_modification_time is not None and \
            not os.path.isfile(plan):  # a name too long for the system is no OSError
        problems.append(f"Plan file missing: {raw_plan} (it existed when the checkpoint "
                        "was written)")
    if not problems:
        return
    pos = _positions(ctx)
    for problem in problems:
        yield ctx.finding(_resume_range(pos, ctx, problem, shaped, age_key),
                          _RESUME_PREFIX + problem)


@rule("BTN417", "checkpoint-identity-missing", Severity.WARNING, CHECKPOINT)
def checkpoint_identity_missing(doc: CheckpointDoc, ctx: RuleContext) -> Iterator[Finding]:
    """A 2.x checkpoint lacks top-level fields its schema requires (`workflow_type`,
    `created_at`, `status`, …), neither written nor under `metadata`.

    The design documents show 2.x checkpoints with only their `state_machine` section, so
    Baton reads such a file by deriving what is missing (the command, the file's date, the
    state) — which left the gap silent. But the checkpoint schema (`baton schema`, the one
    definition in `model.checkpoint`) requires those fields, and the seeds' own
    `validate_checkpoint` rejects a file without `checkpoint_id`, `workflow_type`,
    `project_name`, `created_at` or `status` (formats.md §4.3), so the bash `/implement`
    cannot resume it, and the derived `created_at` (the file's date) makes the age checks
    wrong. Fix: write the fields at the top level (`save_checkpoint` does), or move them
    out of `metadata` if they are nested elsewhere.

    Reported:

        ==> .claude/data/checkpoints/coordinate_auth.json <==
        {
          "schema_version": "2.1",
          "checkpoint_id": "coordinate_auth_20251114_143000",
          "state_machine": {
            "current_state": "plan",
            "workflow_config": {"scope": "full-implementation", "command": "coordinate"},
            "classification": {"workflow_type": "full-implementation"}
          }
        }

    Not reported:

        ==> .claude/data/checkpoints/coordinate_auth.json <==
        {
          "schema_version": "2.1",
          "checkpoint_id": "coordinate_auth_20251114_143000",
          "workflow_type": "coordinate",
          "project_name": "auth",
          "created_at": "2025-11-14T14:30:00Z",
          "status": "in_progress",
          "state_machine": {
            "current_state": "plan",
            "workflow_config": {"scope": "full-implementation", "command": "coordinate"},
            "classification": {"workflow_type": "full-implementation"}
          }
        }
    """
    if doc.data is None:
        return
    # only the rules that need it load it
    from ..model.checkpoint_shape import SHAPES
    from ..runs.checkpoint import IDENTITY_FIELDS, CheckpointError

    try:
        kind, _declared, _effective, _notes = _detect(doc)
    except CheckpointError:
        return
    shaped = _shaped(doc)
    if kind != "checkpoint" or shaped is doc.data:
        return  # not the 2.x design shape: BTN411 reports what a 1.x file lacks
    meta = doc.data.get("metadata")
    nested = meta if isinstance(meta, dict) else {}
    required = [k for k in IDENTITY_FIELDS if SHAPES["Checkpoint"][k][0]]
    missing = [k for k in required if doc.data.get(k) is None and nested.get(k) is None]
    if not missing:
        return
    pos = _positions(ctx)
    where = pos.key_range(("schema_version",)) or pos.key_range(("version",)) \
        or ctx.line_range(0)
    derived = ", ".join(f"{k} = {shaped.get(k)!r}" for k in missing)
    yield ctx.finding(
        where, f"checkpoint lacks {', '.join(missing)}: the schema requires them and the bash "
        f"validate_checkpoint rejects the file; Baton only derives them ({derived})")
