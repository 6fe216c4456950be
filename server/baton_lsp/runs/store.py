"""Durable checkpoint history of one workflow, under `.claude/data/checkpoints/<id>/`.

Each save is a complete schema-2.1 checkpoint written as `NNNNNN.json` (temp file, fsync,
rename, fsync of the directory; every path walked inside the workspace by `confine`)
carrying a SHA-256 of its own content in `baton.checksum` and an HMAC of it with this
user's key in `baton.mac` (`signing`). Loading walks back from the newest file and skips any
that is truncated, corrupt or fails its checksum, so a crash in the middle of a write — or a
disk that lies — costs one transition, never the workflow; the signature then says whether
the sound file is trusted (written by this user's Baton) or only shown. The files stay
readable by the bash tooling (plain 2.1 JSON; the extra `baton` section is kept by `_Open`
models and ignored by jq).
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

from ..errors import CheckpointError
from . import confine, signing
from .places import checkpoints_root

log = logging.getLogger(__name__)

_SEQ = re.compile(r"^(\d{6})\.json$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
MAX_HISTORY = 500


def valid_id(workflow_id: str) -> bool:
    return bool(_ID.match(workflow_id)) and ".." not in workflow_id


PLACEHOLDER = "sha256:" + "0" * 64


def checksum_of(data: dict[str, Any]) -> str:
    """SHA-256 of the file text as written, with the checksum itself set to zeros (and the
    signature as it stands: the checksum covers it)."""
    baton = dict(data.get("baton") or {})
    return _digest(_render({**data, "baton": baton}, PLACEHOLDER, baton.get("mac")))


def _render(data: dict[str, Any], checksum: str, mac: str | None) -> bytes:
    """Compact JSON (the C encoder; `indent` would fall back to the pure-Python one and cost
    four times as much): jq and every JSON reader take it as well. The checksum and the
    signature are the last fields of the `baton` section, itself the last of the document,
    so their placeholders are the last occurrences in the text whatever an agent wrote."""
    baton = data.pop("baton", None) or {}
    baton.pop("checksum", None)
    baton.pop("mac", None)
    baton["checksum"] = checksum
    if mac is not None:
        baton["mac"] = mac
    data["baton"] = baton
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape instead of failing the save
        return (json.dumps(data, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
    except (RecursionError, ValueError) as exc:
        raise CheckpointError(f"checkpoint cannot be written as JSON: {exc}") from None


def _digest(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


def _swap_last(text: bytes, old: str, new: str) -> bytes:
    at = text.rindex(old.encode())
    return text[:at] + new.encode() + text[at + len(old):]


@dataclass(frozen=True)
class Entry:
    sequence: int
    path: Path
    data: dict[str, Any] | None
    problem: str | None
    trust: str | None = None
    """`signing.TRUSTED`, `FOREIGN`, `EDITED` or `UNSIGNED` for a sound file."""
    distrust: str | None = None
    """Why a sound file is not trusted (None when it is)."""

    @property
    def ok(self) -> bool:
        return self.data is not None

    @property
    def trusted(self) -> bool:
        return self.trust == signing.TRUSTED


@dataclass(frozen=True)
class LockProbe:
    """A look at a workflow's lock from another process (`CheckpointStore.probe_lock`)."""

    held: bool
    ident: tuple[int, int] | None
    """(st_dev, st_ino) of the lock file: an engine proves it runs the workflow by holding
    this very file open."""
    problem: str | None
    """Why the name cannot be the workflow's lock (a symlink, not a regular file)."""


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
        self.context = signing_context(root, workflow_id)
        self._lock_fd: int | None = None
        self._next: int | None = None

    # -- lock -------------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the engine lock or raise `WorkflowBusy` naming who holds it. A lock file
        that is no longer at its name once taken (`baton clean --runs` moved the finished
        workflow's directory away meanwhile) is given up and the lock taken again there."""
        confine.makedirs_own(self.root, checkpoints_root(self.root))
        for _ in range(5):
            fd = confine.open_lock(self.root, self.dir / "lock", own=True)
            try:
                _flock_patiently(fd)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    owner = self.owner()
                    who = f" by pid {owner.get('pid')} since {owner.get('started_at')}" \
                        if owner else ""
                    raise WorkflowBusy(
                        f"workflow {self.workflow_id} is already running{who}; one engine per "
                        f"workflow — wait for it or stop it with "
                        f"`baton cancel {self.workflow_id}`") from None
                raise
            if self._still_the_lock(fd):
                self._lock_fd = fd
                return
            os.close(fd)
        raise WorkflowBusy(f"workflow {self.workflow_id}'s directory keeps being replaced "
                           "while its lock is taken; try again")

    def _still_the_lock(self, fd: int) -> bool:
        """Whether the file `fd` holds is still the one at the lock's name."""
        held = os.fstat(fd)
        try:
            now = confine.open_lock(self.root, self.dir / "lock", os.O_RDONLY, own=True)
        except OSError:
            return False
        try:
            st = os.fstat(now)
        finally:
            os.close(now)
        return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def locked(self) -> bool:
        """Whether some engine is running this workflow now."""
        return self.probe_lock().held

    def probe_lock(self) -> LockProbe:
        """Whether this workflow's own lock is held, and which file it is. A shared probe:
        followers probing at once never see each other as the engine (an engine starting
        during a probe waits it out in `acquire`). A lock that is a symlink (or sits in a
        linked directory) or not a regular file is never this workflow's: not held, with
        the reason."""
        try:
            fd = confine.open_lock(self.root, self.dir / "lock", os.O_RDONLY, own=True)
        except confine.UnsafePath as exc:
            return LockProbe(False, None, str(exc))
        except OSError:
            return LockProbe(False, None, None)
        try:
            st = os.fstat(fd)
            ident = (st.st_dev, st.st_ino)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return LockProbe(True, ident, None)
            return LockProbe(False, ident, None)
        finally:
            os.close(fd)

    def write_owner(self, info: dict[str, Any], durable: bool = False) -> None:
        """Who runs the workflow and which agent process groups are live (for `cancel` and
        the resume that stops a dead engine's agents); `durable` before an agent may start."""
        confine.write_atomic(self.root, self.dir / "run.json",
                             json.dumps(info, indent=2).encode(), durable=durable)

    def owner(self) -> dict[str, Any]:
        return self.read_owner()[0]

    def read_owner(self) -> tuple[dict[str, Any], str | None]:
        """`run.json`, and why it could not be read when it is there but unusable (a FIFO,
        a link out of the workspace, not JSON): `cancel` names it instead of guessing."""
        try:
            data = json.loads(confine.read_bytes(self.root, self.dir / "run.json", 1 << 20))
        except FileNotFoundError:
            return {}, None
        except OSError as exc:
            return {}, confine.describe(exc)
        except (ValueError, RecursionError):
            return {}, f"{self.dir / 'run.json'} is not valid JSON"
        if not isinstance(data, dict):
            return {}, f"{self.dir / 'run.json'} is not a JSON object"
        return data, None

    # -- history ----------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every checkpoint file, oldest first, each verified."""
        out: list[Entry] = []
        for name in sorted(_listdir(self.root, self.dir)):
            m = _SEQ.match(name)
            if m:
                out.append(_entry(int(m.group(1)), self.dir / name, self.context, self.root))
        return out

    def latest(self, at: int | None = None) -> Entry:
        """The newest sound checkpoint (or number `at`); corrupt files are skipped, with the
        reason logged, in favour of the one before."""
        if at is None:  # newest first, verifying only until a sound one is found
            names = sorted((n for n in _listdir(self.root, self.dir) if _SEQ.match(n)),
                           reverse=True)
            problems: list[str] = []
            for name in names:
                entry = _entry(int(name[:6]), self.dir / name, self.context, self.root)
                if entry.problem is None:
                    return entry
                log.warning("skipping checkpoint %s: %s", entry.path, entry.problem)
                problems.append(entry.problem)
            if not names:
                raise CheckpointError(
                    f"no checkpoints for workflow {self.workflow_id} in {self.dir}: it was "
                    "stopped before its first one, so nothing of it ran; start it again "
                    f"with `baton run … --id {self.workflow_id}`")
            raise CheckpointError(f"every checkpoint of {self.workflow_id} is unusable; "
                                  f"newest: {problems[0]}")
        path = self.dir / f"{at:06d}.json"
        if not path.exists():
            have = sorted(int(n[:6]) for n in _listdir(self.root, self.dir) if _SEQ.match(n))
            raise CheckpointError(
                f"workflow {self.workflow_id} has no checkpoint {at}"
                + (f" (have {have[0]}–{have[-1]})" if have else " (it has no checkpoints)"))
        entry = _entry(at, path, self.context, self.root)
        if entry.problem is not None:
            raise CheckpointError(f"checkpoint {at} of {self.workflow_id} is unusable: "
                                  f"{entry.problem}")
        return entry

    def next_path(self) -> Path:
        """The file the next save writes (for messages about a save that failed)."""
        return self.dir / f"{self._next or 0:06d}.json" if self._next else self.dir

    def save(self, data: dict[str, Any], event: str) -> Path:
        """Write the next history entry durably, checksummed and signed; returns its path."""
        if self._next is None:
            with confine.directory(self.root, self.dir) as fd:
                existing = [int(m.group(1)) for n in os.listdir(fd) if (m := _SEQ.match(n))]
            self._next = max(existing, default=0) + 1
        seq = self._next
        baton = dict(data.get("baton") or {})
        baton.update(sequence=seq, event=event)
        data["baton"] = baton
        key = signing.user_key(create=True)
        text = _render(data, PLACEHOLDER, key.placeholder() if key else None)
        if key is not None:  # sign the text with both fields at their placeholders …
            baton["mac"] = key.sign(text, self.context)
            text = _swap_last(text, key.placeholder(), baton["mac"])
        baton["checksum"] = _digest(text)  # … then checksum it signed: old readers verify it
        text = _swap_last(text, PLACEHOLDER, baton["checksum"])
        path = self.dir / f"{seq:06d}.json"
        confine.write_atomic(self.root, path, text, mode=0o600)
        self._next = seq + 1
        old = seq - MAX_HISTORY
        if old > 1:  # bounded history; the first (initial) checkpoint is always kept
            with contextlib.suppress(OSError):
                confine.unlink(self.root, self.dir / f"{old:06d}.json")
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


def verify_file(path: Path, root: Path | None = None
                ) -> tuple[dict[str, Any] | None, str | None]:
    """A history file's checkpoint, or why it cannot be used (unreadable, not JSON,
    checksum mismatch); the store and the BTN41x rules judge a file the same way. A FIFO
    is unreadable, never waited on; with the workspace `root`, so is a link leaving it."""
    try:
        raw = confine.read_bytes(root, path) if root is not None else \
            confine.read_regular(path)
    except OSError as exc:
        return None, f"cannot read: {confine.describe(exc)}"
    return verify_bytes(raw)


def signing_context(root: Path, workflow_id: str) -> bytes:
    """What a checkpoint's signature binds it to: this workspace and this workflow."""
    return os.fsencode(os.path.realpath(root)) + b"\0" + workflow_id.encode()


def _entry(sequence: int, path: Path, context: bytes, root: Path) -> Entry:
    """A history file read once: sound or not, and if sound how far it is trusted. Read
    through `confine`: a planted link out of the workspace or a FIFO is a problem, not a
    read outside or a hang."""
    try:
        raw = confine.read_bytes(root, path)
    except OSError as exc:
        return Entry(sequence, path, None, f"cannot read: {confine.describe(exc)}")
    data, problem = verify_bytes(raw)
    if data is None:
        return Entry(sequence, path, None, problem)
    trust, why = signature(raw, data, context)
    return Entry(sequence, path, data, None, trust, why)


def signature(raw: bytes, data: dict[str, Any], context: bytes) -> tuple[str, str | None]:
    """`signing.verdict` of a sound history file's bytes (see `signing`)."""
    baton = found if isinstance(found := data.get("baton"), dict) else {}
    checksum = str(baton.get("checksum"))
    return signing.verdict(raw.replace(checksum.encode(), PLACEHOLDER.encode(), 1),
                           baton.get("mac"), context)


def verify_bytes(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """`verify_file` of bytes already read."""
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


def _listdir(root: Path, directory: Path) -> list[str]:
    """The names in a directory of the run record; none when it is missing or — said in
    a warning — reached through a link leaving the workspace."""
    try:
        dirs, others = confine.subdirectories(root, directory)
    except confine.UnsafePath as exc:
        log.warning("not listing %s: %s", directory, exc)
        return []
    except OSError:
        return []
    return dirs + others


def list_workflows(root: Path) -> list[str]:
    try:
        dirs, _ = confine.subdirectories(root, checkpoints_root(root))
    except confine.UnsafePath as exc:
        log.warning("no workflows listed: %s", exc)
        return []
    except OSError:
        return []
    return sorted(name for name in dirs if valid_id(name))
