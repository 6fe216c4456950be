"""Retention of finished workflows' histories (`baton clean --runs`).

Every transition and step writes a checkpoint, so a finished workflow leaves dozens of files
behind; the seeds plan an age-based clean-up of their state files (seed 000, risk 5). Only a
workflow whose newest sound checkpoint says `complete` is ever removed: a failed, cancelled,
interrupted or running one is resumable and stays, and so does one whose checkpoints cannot
be read. A finished workflow goes when it finished more than `max_age_days` ago or is not
among the newest `keep` finished ones.

Removal is safe against a run starting at the same moment: it happens under the workflow's
own engine lock (an engine starting meanwhile is told the workflow is busy), the status is
read again under that lock, and the directory is first renamed out of the way (`.removing-…`,
not a workflow id), so an engine that starts once the lock is released makes a fresh
directory that nothing here touches. Nothing is followed through a symbolic link: a
workflow directory that is a link is left alone, links inside one are removed as links
(`shutil.rmtree` on a directory descriptor reached by `confine`), and a checkpoint store
reached through a link leaving the workspace is refused.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ..model.states import RunStatus
from . import confine
from .checkpoint import CheckpointError
from .places import checkpoints_root
from .record import RecordError, read_record
from .records import state_file_path
from .store import CheckpointStore, WorkflowBusy, valid_id

log = logging.getLogger(__name__)

REMOVED, KEPT, SKIPPED = "removed", "kept", "skipped"
_ASIDE = ".removing-"
"""Prefix of a history renamed aside for removal: not a workflow id, so no run sees it."""
_DAY = 86400.0


@dataclass(frozen=True)
class Verdict:
    """What `clean_runs` did (or, dry, would do) with one entry of the checkpoint store."""

    workflow_id: str
    action: str
    """`removed`, `kept` (a workflow that stays) or `skipped` (not a workflow to judge)."""
    reason: str


@dataclass(frozen=True)
class _Finished:
    workflow_id: str
    finished_at: float
    """The newest checkpoint's modification time: when the workflow finished."""


def clean_runs(root: Path, keep: int, max_age_days: float, dry_run: bool = False,
               now: float | None = None) -> list[Verdict]:
    """Remove the histories of finished workflows past `keep` or `max_age_days`; one
    verdict per entry of the checkpoint store, oldest decisions first. Raises
    `confine.UnsafePath` when the store itself is reached through a link leaving the
    workspace."""
    now = time.time() if now is None else now
    verdicts: list[Verdict] = []
    finished: list[_Finished] = []
    if not dry_run:
        _finish_interrupted(root)
    for name, is_link in _entries(root):
        if is_link:
            verdicts.append(Verdict(name, SKIPPED, "a symbolic link, not a workflow "
                                    "directory of its own: left alone"))
            continue
        status, why, at = _judge(root, name)
        if status != RunStatus.COMPLETE or at is None:
            verdicts.append(Verdict(name, KEPT, why))
            continue
        finished.append(_Finished(name, at))
    finished.sort(key=lambda f: f.finished_at, reverse=True)
    for rank, run in enumerate(finished):
        age = max(0.0, now - run.finished_at) / _DAY
        if rank < keep and age <= max_age_days:
            verdicts.append(Verdict(run.workflow_id, KEPT, f"finished {age:.1f} days ago, "
                                    f"one of the newest {keep}"))
            continue
        why = (f"finished {age:.1f} days ago (more than {max_age_days:g})"
               if age > max_age_days else f"not one of the newest {keep} finished")
        if dry_run:
            verdicts.append(Verdict(run.workflow_id, REMOVED, f"would be removed: {why}"))
            continue
        verdicts.append(_remove(root, run.workflow_id, why))
    return verdicts


def _finish_interrupted(root: Path) -> None:
    """Remove what a clean killed half-way left: directories it had renamed aside (never a
    workflow id, never a link), so no history lingers half-deleted."""
    with contextlib.suppress(FileNotFoundError), \
            confine.directory(root, checkpoints_root(root), create=False) as fd:
        for name in os.listdir(fd):
            if not name.startswith(_ASIDE):
                continue
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                try:
                    shutil.rmtree(name, dir_fd=fd)
                except OSError as exc:  # another clean removing it too
                    log.info("leftover %s: %s", name, exc)


def _entries(root: Path) -> list[tuple[str, bool]]:
    """(name, is a symlink) of the workflow directories in the store, never followed."""
    try:
        with confine.directory(root, checkpoints_root(root), create=False, verb="read") as fd:
            out = []
            for name in sorted(os.listdir(fd)):
                if not valid_id(name):
                    continue
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    out.append((name, True))
                elif stat.S_ISDIR(st.st_mode):
                    out.append((name, False))
            return out
    except FileNotFoundError:
        return []


def _judge(root: Path, wid: str) -> tuple[str, str, float | None]:
    """(status, why it stays, when it finished) of one workflow, from its newest sound
    checkpoint; a running or unreadable one is never `complete` here."""
    store = CheckpointStore(root, wid)
    if store.locked():
        return "running", "running now", None
    try:
        entry = store.latest()
        record = read_record(entry.data or {}, str(entry.path))
    except (CheckpointError, RecordError, OSError, ValueError) as exc:
        return RunStatus.UNREADABLE, f"no usable checkpoint ({exc}): left alone", None
    if record.status != RunStatus.COMPLETE:
        shown = RunStatus.INTERRUPTED if record.status == RunStatus.IN_PROGRESS \
            else record.status
        return record.status, f"{shown} in {record.state}: resumable, kept", None
    try:
        with confine.open_read(root, entry.path) as (fd, _size, _shown):
            finished_at = os.fstat(fd).st_mtime
    except OSError as exc:
        return RunStatus.UNREADABLE, f"cannot read {entry.path}: {confine.describe(exc)}", None
    return RunStatus.COMPLETE, "", finished_at


def _remove(root: Path, wid: str, why: str) -> Verdict:
    """Remove one finished workflow's directory and state file under its engine lock."""
    store = CheckpointStore(root, wid)
    try:
        store.acquire()
    except WorkflowBusy:
        return Verdict(wid, KEPT, "a run of it started meanwhile: kept")
    except OSError as exc:
        return Verdict(wid, KEPT, f"cannot take its lock ({confine.describe(exc)}): kept")
    try:
        status, reason = _status_locked(root, wid)
        if status != RunStatus.COMPLETE:
            return Verdict(wid, KEPT, reason)
        try:  # first, while the lock still guards this id (a new run's would be its own)
            confine.unlink(root, state_file_path(root, wid))
        except FileNotFoundError:
            pass
        except OSError as exc:  # `.claude/tmp` linked out of the workspace, say
            why += f"; its state file was left: {confine.describe(exc)}"
        base = checkpoints_root(root)
        aside = f"{_ASIDE}{wid}-{os.getpid()}-{time.monotonic_ns()}"
        with confine.directory(root, base, create=False) as fd:
            os.rename(wid, aside, src_dir_fd=fd, dst_dir_fd=fd)
            shutil.rmtree(aside, dir_fd=fd)
    except OSError as exc:
        log.warning("removing workflow %s: %s", wid, exc)
        return Verdict(wid, KEPT, f"could not be removed: {confine.describe(exc)}")
    finally:
        store.release()
    return Verdict(wid, REMOVED, why)


def _status_locked(root: Path, wid: str) -> tuple[str, str]:
    """The status again, read while this process holds the workflow's lock."""
    try:
        entry = CheckpointStore(root, wid).latest()
        record = read_record(entry.data or {}, str(entry.path))
    except (CheckpointError, RecordError, OSError, ValueError) as exc:
        return RunStatus.UNREADABLE, f"no usable checkpoint ({exc}): left alone"
    if record.status != RunStatus.COMPLETE:
        return record.status, f"{record.status} in {record.state} by now: resumable, kept"
    return RunStatus.COMPLETE, ""
