"""Durable checkpoint history of one workflow, under `.claude/data/checkpoints/<id>/`.

Each save is a complete schema-2.1 checkpoint written as `NNNNNN.json` (temp file, fsync,
rename, fsync of the directory) carrying a SHA-256 of its own content in `baton.checksum`.
Loading walks back from the newest file and skips any that is truncated, corrupt or fails its
checksum, so a crash in the middle of a write — or a disk that lies — costs one transition,
never the workflow. The files stay readable by the bash tooling (plain 2.1 JSON; the extra
`baton` section is kept by `_Open` models and ignored by jq).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import atomic_write
from .checkpoint import CheckpointError
from .places import checkpoints_root

log = logging.getLogger(__name__)

_SEQ = re.compile(r"^(\d{6})\.json$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
MAX_HISTORY = 500


def valid_id(workflow_id: str) -> bool:
    return bool(_ID.match(workflow_id)) and ".." not in workflow_id


PLACEHOLDER = "sha256:" + "0" * 64


def checksum_of(data: dict[str, Any]) -> str:
    """SHA-256 of the file text as written, with the checksum itself set to zeros."""
    copy = {**data, "baton": dict(data.get("baton") or {})}
    return _digest(_render(copy, PLACEHOLDER))


def _render(data: dict[str, Any], checksum: str) -> bytes:
    """Compact JSON (the C encoder; `indent` would fall back to the pure-Python one and cost
    four times as much): jq and every JSON reader take it as well."""
    baton = data.setdefault("baton", {})
    baton["checksum"] = checksum
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape instead of failing the save
        return (json.dumps(data, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
    except (RecursionError, ValueError) as exc:
        raise CheckpointError(f"checkpoint cannot be written as JSON: {exc}") from None


def _digest(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


@dataclass(frozen=True)
class Entry:
    sequence: int
    path: Path
    data: dict[str, Any] | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.data is not None


class WorkflowBusy(Exception):
    """Another engine holds this workflow's lock."""


class CheckpointStore:
    """History and lock of one workflow."""

    def __init__(self, root: Path, workflow_id: str) -> None:
        if not valid_id(workflow_id):
            raise CheckpointError(f"invalid workflow id {workflow_id!r}: use letters, digits, "
                                  "`_`, `-` and `.`")
        self.root = root
        self.workflow_id = workflow_id
        self.dir = checkpoints_root(root) / workflow_id
        self._lock_fd: int | None = None
        self._next: int | None = None

    # -- lock -------------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the engine lock or raise `WorkflowBusy` naming who holds it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _flock_patiently(fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                owner = self.owner()
                who = f" by pid {owner.get('pid')} since {owner.get('started_at')}" if owner \
                    else ""
                raise WorkflowBusy(
                    f"workflow {self.workflow_id} is already running{who}; one engine per "
                    f"workflow — wait for it or stop it with `baton cancel {self.workflow_id}`"
                ) from None
            raise
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def locked(self) -> bool:
        """Whether some engine is running this workflow now. A shared probe: followers
        probing at once never see each other as the engine (an engine starting during a
        probe waits it out in `acquire`)."""
        try:
            fd = os.open(self.dir / "lock", os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False

    def write_owner(self, info: dict[str, Any]) -> None:
        """Who runs the workflow and which agent process groups are live (for `cancel`)."""
        atomic_write(self.dir / "run.json", json.dumps(info, indent=2).encode(), durable=False)

    def owner(self) -> dict[str, Any]:
        try:
            data = json.loads((self.dir / "run.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    # -- history ----------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every checkpoint file, oldest first, each verified."""
        out: list[Entry] = []
        if not self.dir.is_dir():
            return out
        for name in sorted(os.listdir(self.dir)):
            m = _SEQ.match(name)
            if m:
                path = self.dir / name
                data, problem = verify_file(path)
                out.append(Entry(int(m.group(1)), path, data, problem))
        return out

    def latest(self, at: int | None = None) -> Entry:
        """The newest sound checkpoint (or number `at`); corrupt files are skipped, with the
        reason logged, in favour of the one before."""
        if at is None:  # newest first, verifying only until a sound one is found
            names = sorted((n for n in _listdir(self.dir) if _SEQ.match(n)), reverse=True)
            problems: list[str] = []
            for name in names:
                path = self.dir / name
                data, problem = verify_file(path)
                if problem is None:
                    return Entry(int(name[:6]), path, data, None)
                log.warning("skipping checkpoint %s: %s", path, problem)
                problems.append(problem)
            if not names:
                raise CheckpointError(f"no checkpoints for workflow {self.workflow_id} in "
                                      f"{self.dir}")
            raise CheckpointError(f"every checkpoint of {self.workflow_id} is unusable; "
                                  f"newest: {problems[0]}")
        path = self.dir / f"{at:06d}.json"
        if not path.exists():
            have = sorted(int(n[:6]) for n in _listdir(self.dir) if _SEQ.match(n))
            raise CheckpointError(
                f"workflow {self.workflow_id} has no checkpoint {at}"
                + (f" (have {have[0]}–{have[-1]})" if have else " (it has no checkpoints)"))
        data, problem = verify_file(path)
        if problem is not None:
            raise CheckpointError(f"checkpoint {at} of {self.workflow_id} is unusable: "
                                  f"{problem}")
        return Entry(at, path, data, None)

    def save(self, data: dict[str, Any], event: str) -> Path:
        """Write the next history entry durably; returns its path."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self._next is None:
            existing = [int(m.group(1)) for n in os.listdir(self.dir) if (m := _SEQ.match(n))]
            self._next = max(existing, default=0) + 1
        seq = self._next
        baton = dict(data.get("baton") or {})
        baton.update(sequence=seq, event=event)
        data["baton"] = baton
        text = _render(data, PLACEHOLDER)
        digest = _digest(text)
        baton["checksum"] = digest
        # the placeholder occurs once, at a fixed place: swap it instead of dumping again
        text = text.replace(PLACEHOLDER.encode(), digest.encode(), 1)
        path = self.dir / f"{seq:06d}.json"
        atomic_write(path, text)
        self._next = seq + 1
        old = seq - MAX_HISTORY
        if old > 1:  # bounded history; the first (initial) checkpoint is always kept
            with contextlib.suppress(OSError):
                os.unlink(self.dir / f"{old:06d}.json")
        return path


def _flock_patiently(fd: int, tries: int = 25) -> None:
    """LOCK_EX, retrying for ~0.25 s: a follower's `locked()` probe holds the lock for
    microseconds and must not make a starting engine report the workflow as busy."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or attempt == tries - 1:
                raise
            time.sleep(0.01)


def verify_file(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A history file's checkpoint, or why it cannot be trusted (unreadable, not JSON,
    checksum mismatch); the store and the BTN41x rules judge a file the same way."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    if not raw.strip():
        return None, "empty file (a write was cut short)"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON (truncated or corrupt): {exc}"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    stored = (data.get("baton") or {}).get("checksum") if isinstance(data.get("baton"),
                                                                     dict) else None
    if stored is None or not isinstance(stored, str):
        return None, "no checksum: not written by baton"
    if raw.count(stored.encode()) != 1 or \
            _digest(raw.replace(stored.encode(), PLACEHOLDER.encode(), 1)) != stored:
        return None, "checksum mismatch: the file changed after it was written"
    return data, None


def _listdir(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def list_workflows(root: Path) -> list[str]:
    base = checkpoints_root(root)
    if not base.is_dir():
        return []
    return sorted(e.name for e in os.scandir(base) if e.is_dir() and valid_id(e.name))
