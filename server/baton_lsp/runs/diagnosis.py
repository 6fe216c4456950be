"""The seeds' five-part error (`handle_state_error`, seed 000 "Error Handling Architecture"):
what failed, expected behaviour, diagnostic commands, context, recommended action with
"Retry k/2 available" — and, for a hard-barrier failure, `verify_file_created`'s diagnostic:
the expected path, its parent directory (exists or not) and the parent's newest files.

One formatter for every place a failure is shown: the end-of-run summary, `baton status`
(text and `--json`), the `diagnosis` in `errors.jsonl`'s context and the editor's hover on a
checkpoint. It lives in the run store's layer so all of them can import it.

The parent directory is listed through `confine` (never through a link leaving the
workspace), names only, by `lstat` (nothing is opened, so a FIFO there cannot block), and
bounded: at most `SCAN_LIMIT` entries are looked at and `NEWEST` named.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.states import RunStatus, Scope
from ..terminal import terminal_safe
from . import confine
from .barriers import BARRIER_FOUND
from .checkpoint import CheckpointError
from .places import checkpoints_root
from .record import FailureRecord, RecordError, RunRecord, StepRecord, read_record
from .store import CheckpointStore

log = logging.getLogger(__name__)

NEWEST = 5
"""Files of the artifact's parent directory a barrier diagnostic names (newest first)."""
SCAN_LIMIT = 4096
"""Entries of that directory looked at, at most (a huge directory is not read whole)."""
DEFAULT_STATE_RETRIES = 2
"""The seeds' "max 2 retries per state" (`state-retries` when the run recorded none)."""

EXPECTED: dict[str, tuple[str, ...]] = {
    "initialize": ("The workflow is classified and every artifact path pre-calculated",
                   "The topic directory is created under {specs}"),
    "research": ("All research agents should complete successfully",
                 "All report files created in {reports}"),
    "plan": ("The plan agent writes the plan at {plan}",
             "The plan parses, has phases and no dependency cycle"),
    "implement": ("Every phase's agent completes and writes its summary in {summaries}",
                  "Every phase's work merges into your branch without conflicts"),
    "test": ("The test command exits with code 0",),
    "debug": ("The debug agent writes its report in {debug}",),
    "document": ("The documentation agent writes the workflow summary in {summaries}",),
}
"""What should have happened in each state (the seeds' "Expected behavior")."""


@dataclass(frozen=True)
class BarrierDiagnostic:
    """`verify_file_created`'s "DIAGNOSTIC INFORMATION" for one missing artifact."""

    expected: str
    found: str
    parent: str
    parent_exists: bool
    entries: int = 0
    more: bool = False
    """More than `SCAN_LIMIT` entries: `entries` is a lower bound."""
    newest: tuple[str, ...] = ()
    problem: str | None = None
    """Why the directory could not be listed (a link out of the workspace, …)."""

    def as_dict(self) -> dict[str, Any]:
        return {"expected_path": self.expected, "found": self.found,
                "parent_directory": self.parent, "parent_exists": self.parent_exists,
                "parent_entries": self.entries, "parent_entries_more": self.more,
                "recent_files": list(self.newest),
                **({"problem": self.problem} if self.problem else {})}


@dataclass(frozen=True)
class Diagnosis:
    """One failure in the seeds' five parts."""

    state: str
    message: str
    expected: tuple[str, ...]
    commands: tuple[str, ...]
    context: tuple[tuple[str, str], ...]
    actions: tuple[str, ...]
    barrier: BarrierDiagnostic | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The structured form (`errors.jsonl` context, `baton status --json`), with the
        rendered text beside it so every reader shows the same words."""
        return {"what_failed": f"state '{self.state}': {self.message}",
                "expected_behavior": list(self.expected),
                "diagnostic_commands": list(self.commands),
                "context": dict(self.context),
                "recommended_action": list(self.actions),
                **({"barrier": self.barrier.as_dict()} if self.barrier else {}),
                "text": self.text()}

    def text(self) -> str:
        """The seeds' rendering: `✗ ERROR in state 'S': …` and the four sections. Values
        from files (the message, the description, file names) are escaped where they could
        drive a terminal or start a line of their own."""
        lines = [f"✗ ERROR in state '{self.state}': {self.message}", "", "Expected behavior:"]
        lines += [f"  - {e}" for e in self.expected]
        if self.barrier is not None:
            b = self.barrier
            status = (f"✓ Exists ({b.entries}{'+' if b.more else ''} "
                      f"entr{'y' if b.entries == 1 else 'ies'})" if b.parent_exists
                      else "✗ Does not exist")
            lines += ["", "DIAGNOSTIC INFORMATION:", f"  - Expected path: {b.expected}",
                      f"  - Found: {b.found}", f"  - Parent directory: {b.parent}",
                      f"  - Directory status: {status}"]
            if b.problem:
                lines.append(f"  - Not listed: {b.problem}")
            elif b.newest:
                lines.append("  - Recent files:")
                lines += [f"    {name}" for name in b.newest]
        lines += ["", "Diagnostic commands:", *(f"  {c}" for c in self.commands),
                  "", "Context:", *(f"  - {k}: {v}" for k, v in self.context),
                  "", "Recommended action:", *(f"  - {a}" for a in self.actions)]
        return "\n".join(lines)

    def markdown(self) -> str:
        """The text in a fence no line of it can close (for hovers)."""
        text = self.text()
        run = longest = 0
        for ch in text:
            run = run + 1 if ch == "`" else 0
            longest = max(longest, run)
        fence = "`" * max(3, longest + 1)
        return f"{fence}text\n{text}\n{fence}"


def _rel(root: Path, path: str | os.PathLike[str] | None) -> str:
    if not path:
        return "?"
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


def newest_entries(root: Path, directory: str | os.PathLike[str], limit: int = NEWEST,
                   scan: int = SCAN_LIMIT) -> tuple[int, bool, tuple[str, ...]]:
    """(entries looked at, whether there were more, the `limit` newest names) of a directory
    inside the workspace. Reached through `confine` (a link out of it raises `UnsafePath`);
    each entry is `lstat`ed, never opened."""
    seen = 0
    more = False
    heap: list[tuple[float, str]] = []
    with confine.directory(root, directory, create=False, verb="read") as fd, \
            os.scandir(fd) as it:
        for entry in it:
            if seen >= scan:
                more = True
                break
            seen += 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            item = (st.st_mtime, entry.name + "/" if stat.S_ISDIR(st.st_mode) else entry.name)
            if len(heap) < limit:
                heapq.heappush(heap, item)
            else:
                heapq.heappushpop(heap, item)
    return seen, more, tuple(terminal_safe(name) for _, name in sorted(heap, reverse=True))


def barrier_diagnostic(root: Path, ctx: dict[str, Any]) -> BarrierDiagnostic | None:
    """The `verify_file_created` block of a hard-barrier failure, from the barrier's context
    (`error`: its kind, `artifact_path`, `reported_path`); None for any other failure."""
    kind = ctx.get("error")
    artifact = ctx.get("artifact_path")
    if kind not in BARRIER_FOUND or not isinstance(artifact, str):
        return None
    found = terminal_safe(BARRIER_FOUND[str(kind)].format(
        reported=_rel(root, ctx.get("reported_path"))))
    parent = Path(artifact).parent
    shown = _rel(root, parent).rstrip("/") + "/"
    try:
        entries, more, newest = newest_entries(root, parent)
    except FileNotFoundError:
        return BarrierDiagnostic(_rel(root, artifact), found, shown, False)
    except OSError as exc:  # a link out of the workspace, not a directory, unreadable
        return BarrierDiagnostic(_rel(root, artifact), found, shown, os.path.lexists(parent),
                                 problem=confine.describe(exc) if not isinstance(
                                     exc, confine.UnsafePath) else str(exc))
    return BarrierDiagnostic(_rel(root, artifact), found, shown, True, entries, more, newest)


def _expected(state: str, record: RunRecord, root: Path) -> tuple[str, ...]:
    paths = record.baton.paths
    values = {"specs": _rel(root, paths.specs_dir), "reports": _rel(root, paths.reports_dir),
              "plan": _rel(root, paths.plan), "summaries": _rel(root, paths.summaries_dir),
              "debug": _rel(root, paths.debug_dir)}
    lines = [line.format(**values) for line in EXPECTED.get(state, ())]
    return tuple(lines) or (f"State '{state}' completes and the workflow moves on",)


def _retries(record: RunRecord) -> int:
    identity = record.baton.identity
    value = identity.settings.get("state-retries") if identity is not None else None
    return value if isinstance(value, int) else DEFAULT_STATE_RETRIES


def diagnose(root: Path, record: RunRecord, failure: FailureRecord | None = None, *,
             state: str | None = None, pending: bool = False) -> Diagnosis | None:
    """The five-part form of `failure` (default: the record's own `baton.failure`) in
    `state` (default: where the record stopped). `pending`: the failure is being recorded
    now and is not counted in `baton.state_failures` yet."""
    failure = failure or record.baton.failure
    if failure is None:
        return None
    failed_state = record.error_state.failed_state
    state = state or (failed_state.value if failed_state is not None else record.state)
    wid = record.checkpoint_id or "?"
    ctx = failure.context or {}
    named = [failure.step, *(ctx.get("failed_steps") or [])]  # a wave names its phases
    failed = [(str(s), record.baton.steps[str(s)]) for s in named
              if s is not None and str(s) in record.baton.steps]
    sid: str | None = failed[0][0] if failed else failure.step
    step: StepRecord | None = failed[0][1] if failed else None
    barrier = barrier_diagnostic(root, ctx)
    for _, one in failed:  # a wave's (or state's) failure: its first phase's barrier
        if barrier is None and one.barrier:
            barrier = barrier_diagnostic(root, {**one.barrier, "artifact_path": one.artifact})
    expected = list(_expected(state, record, root))
    if barrier is not None:
        expected.append(f"The artifact exists at {barrier.expected}, non-empty and inside "
                        "the workspace (the hard barrier)")
    commands: list[str] = []
    if barrier is not None:
        commands.append(f"ls -la {shlex.quote(barrier.parent)}")
    elif record.baton.paths.topic_dir:
        commands.append(f"ls -la {shlex.quote(_rel(root, record.baton.paths.topic_dir))}")
    if step is not None and step.attempts:
        log = checkpoints_root(root) / wid / "logs" / f"{sid}.attempt-{step.attempts}.log"
        commands.append(f"tail -n 50 {shlex.quote(_rel(root, log))}")
    if step is not None and step.state == "test" and step.artifact:
        commands.append(f"tail -n 50 {shlex.quote(_rel(root, step.artifact))}")
    commands += [f"cat {shlex.quote(f'.claude/tmp/workflow_{wid}.sh')}",
                 f"baton status {shlex.quote(wid)}"]
    cls = failure.failure_class or (step.failure if step is not None else None) or "?"
    context = [("Workflow", terminal_safe((record.workflow_description or "")[:200])),
               ("Workflow ID", wid), ("Scope", record.scope), ("Current State", state)]
    with contextlib.suppress(ValueError):
        context.append(("Terminal State", Scope(record.scope).terminal_state.value))
    if record.baton.paths.topic_dir:
        context.append(("Topic Path", _rel(root, record.baton.paths.topic_dir)))
    if sid:
        attempts = f", attempt {step.attempts}" if step is not None and step.attempts else ""
        context.append(("Step", f"{sid}{attempts}"))
    context.append(("Failure", f"{cls} {failure.type or 'error'}"))
    limit = _retries(record)
    k = int(record.baton.state_failures.get(state, 0)) + (1 if pending else 0)
    k = max(k, 1)
    resume = f"baton resume {shlex.quote(wid)}"
    fix = (failure.context or {}).get("fix")
    how = [f"Fix: {fix}"] if isinstance(fix, str) and fix else []
    if k < limit:
        actions = [f"Retry {k}/{limit} available for state '{state}'",
                   *how, "Fix the issue identified in diagnostic output", f"Resume: {resume}",
                   "State machine will resume from failed state (finished steps are "
                   "skipped)"]
    else:
        actions = [f"Max retries ({limit}) reached for state '{state}' ({k} failures)",
                   *how, "Workflow cannot proceed automatically: manual intervention "
                   "required", f"Fix the cause first; then {resume} still resumes from the "
                   "failed state"]
    if cls == "transient":
        actions.append("Transient: Baton retries it by itself first (attempts per step, "
                       "re-runs of the state, with backoff); a workflow that stopped on it "
                       "outlasted them")
    return Diagnosis(state, terminal_safe(failure.message or "no message"), tuple(expected),
                     tuple(commands),
                     tuple(context), tuple(actions), barrier)


def failure_record(step: str | None, failure_class: str | None, message: str | None,
                   error_type: str | None, context: dict[str, Any]) -> FailureRecord:
    """A `FailureRecord` for a failure being recorded now (not yet in `baton.failure`)."""
    return FailureRecord.model_validate({"step": step, "class": failure_class,
                                         "message": message, "type": error_type,
                                         "context": context})


def of_workflow(root: Path, workflow_id: str) -> Diagnosis | None:
    """The five-part error of a failed workflow, from its newest sound checkpoint (None
    when it has not failed, or its record cannot be read)."""
    try:
        entry = CheckpointStore(root, workflow_id).latest()
        record = read_record(entry.data or {}, str(entry.path))
    except (CheckpointError, RecordError, OSError, ValueError) as exc:
        log.info("no diagnosis for workflow %s: %s", workflow_id, exc)
        return None
    return diagnose(root, record) if record.status == RunStatus.FAILED else None
