"""Every file Baton writes, written inside the workspace: the one module through which the
run record (checkpoints, the owner record, locks, `errors.jsonl`, the state file) and the
engine (topic tree, agent and test logs, worktrees) create directories and files.

A repository can ship symlinks at any of those paths (git stores them), so nothing here
hands the kernel a path to resolve. Each path is walked from the workspace root one
component at a time with `openat` (`dir_fd`, `O_NOFOLLOW | O_DIRECTORY`); a symlink met on
the way is followed by this code only when its target stays inside the workspace, and
refused — `UnsafePath`, naming the link and where it points — when it leaves. Files are
created with `O_NOFOLLOW | O_CREAT | O_EXCL` in the directory held open, renamed with
`src_dir_fd`/`dst_dir_fd`, and a file to append to or truncate must be a regular file with
one link (a hard link cannot be told from its target by its name). The check and the write
use the same directory descriptor, so a link swapped in between is never written through.
Files Baton reads from the workspace (its history, `run.json`, the state file, logs,
plans, agents, artifacts) are read the same way (`read_bytes`, `open_read`): a link leaving
the workspace is refused by name and its target never opened. Every open that could meet a
planted FIFO is `O_NONBLOCK` with a type check, so none hangs, and a size limit holds while
reading too; files outside any workspace (the user's key, the agent CLIs' configuration)
get the type check and the limit (`read_regular`). A workflow's lock is opened `own`: neither
it nor its directory may be a link at all, even one inside the workspace.

Writes are atomic where a reader could see half a file (temp file, fsync, rename, fsync of
the directory) and report the errors the disk gives as `OSError`; `describe` turns one into
the sentence a user reads (disk full, read-only, quota, file size limit).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..lazylog import LazyLogger

log = LazyLogger(__name__)  # not `logging`: a replayed check imports this module

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO})
"""Errors that mean the disk, not the request, is at fault: the run can be resumed once
space is freed or the file system is writable again."""

_WHAT = {errno.ENOSPC: "no space left on the device (the disk is full)",
         errno.EDQUOT: "disk quota exceeded",
         errno.EROFS: "read-only file system",
         errno.EFBIG: "file too large for the file size limit (RLIMIT_FSIZE) or the file "
                      "system",
         errno.EIO: "I/O error from the disk",
         errno.EACCES: "permission denied",
         errno.EPERM: "operation not permitted"}


class UnsafePath(OSError):
    """A path Baton was asked to write leads out of the workspace (a symlink pointing
    elsewhere, `..`), or is a file it must not write through (a hard link, a device)."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(errno.ELOOP, message, None if path is None else os.fspath(path))
        self.message = message

    def __str__(self) -> str:
        return self.message


class OutsideLink(UnsafePath):
    """The symbolic link `link` (relative to the workspace) on the way to a path points
    out of the workspace, to `target` (as the link spells it)."""

    def __init__(self, message: str, path: str | os.PathLike[str], link: str,
                 target: str) -> None:
        super().__init__(message, path)
        self.link = link
        self.target = target


class NotRegular(UnsafePath):
    """A path to read is a FIFO, socket, device or directory: opening or reading it could
    block or never end, so it is not read."""


def describe(exc: OSError) -> str:
    """One line for a user: what the disk said, in words, with the file when known."""
    if isinstance(exc, UnsafePath):
        return exc.message
    what = _WHAT.get(exc.errno or 0) or exc.strerror or str(exc)
    where = f" ({os.fsdecode(exc.filename)})" if exc.filename else ""
    return f"{what}{where}"


def is_disk_fault(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and not isinstance(exc, UnsafePath) and \
        exc.errno in DISK_ERRNOS


# -- the walk ------------------------------------------------------------------------------------


def relative(root: Path, path: str | os.PathLike[str]) -> tuple[str, ...]:
    """`path` (absolute, or relative to `root`) as components below `root`, lexically; an
    `UnsafePath` when it is not below it."""
    p = os.path.normpath(os.path.join(root, path))
    rel = os.path.relpath(p, root)
    if rel == os.curdir:
        return ()
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        raise UnsafePath(f"refusing to write {p}: it is outside the workspace {root}", p)
    return tuple(rel.split(os.sep))


def _below(path: str, root: Path) -> str | None:
    """`path` relative to `root` when it lies at or below it, lexically; else None."""
    rel = os.path.relpath(path, root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel


class _Walk:
    """Directory descriptors from the root down; `..` and in-workspace links resolved here,
    never by the kernel."""

    def __init__(self, root: Path, verb: str = "write") -> None:
        self.root = root
        self.verb = verb
        self.names: list[str] = []
        self.fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        self.links = 0

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def shown(self, name: str | None = None) -> str:
        return os.path.join(*self.names, *((name,) if name else ())) or "."

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def up(self) -> None:
        if not self.names:
            raise UnsafePath(f"refusing to {self.verb} through {self.shown()}/..: it leaves the "
                             f"workspace {self.root}")
        self.names.pop()
        os.close(self.fds.pop())

    def to_root(self) -> None:
        while self.names:
            self.up()

    def link_target(self, name: str) -> list[str]:
        """The components to walk instead of the symlink `name` in the current directory;
        `UnsafePath` when its target leaves the workspace."""
        self.links += 1
        target = os.readlink(name, dir_fd=self.fd)
        shown = self.shown(name)
        if self.links > _MAX_LINKS:
            raise UnsafePath(f"refusing to {self.verb} through {shown}: too many symbolic links",
                             self.root / shown)
        if os.path.isabs(target):
            rel = _below(os.path.normpath(target), self.root)
            if rel is None:  # the root spelled through its own links (macOS /tmp)?
                rel = _below(os.path.normpath(target), Path(os.path.realpath(self.root)))
            if rel is None:
                raise OutsideLink(self._leaves(shown, target), self.root / shown, shown,
                                  target)
            self.to_root()
            return [] if rel == os.curdir else rel.split(os.sep)
        depth = len(self.names)
        for part in target.split("/"):
            depth = depth - 1 if part == ".." else depth + (part not in ("", "."))
            if depth < 0:
                raise OutsideLink(self._leaves(shown, target), self.root / shown, shown,
                                  target)
        return [p for p in target.split("/") if p not in ("", ".")]

    def _leaves(self, shown: str, target: str) -> str:
        fix = "put the file itself there" if self.verb == "read" else "make it a directory"
        return (f"refusing to {self.verb} through {shown}: it is a symbolic link to {target}, "
                f"outside the workspace {self.root} (Baton {self.verb}s only inside the "
                f"workspace; remove the link or {fix})")

    def step(self, name: str, create: bool) -> list[str] | None:
        """Descend into `name`; the components to walk instead when it is a symlink."""
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=self.fd)
            return self.step(name, create=False)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise
            st = os.lstat(name, dir_fd=self.fd)
            if stat.S_ISLNK(st.st_mode):
                return self.link_target(name)
            raise NotADirectoryError(errno.ENOTDIR, "not a directory",
                                     os.fspath(self.root / self.shown(name))) from None
        self.names.append(name)
        self.fds.append(fd)
        return None

    def own(self, name: str, create: bool) -> None:
        """Descend into the directory `name`, refusing it when it is a symlink."""
        if name in ("", ".", ".."):
            raise UnsafePath(f"refusing to {self.verb} {self.shown(name)}: not a directory "
                             "of its own", self.root / self.shown())
        shown = self.shown(name)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(name, dir_fd=self.fd).st_mode):
                raise UnsafePath(f"refusing to {self.verb} through {shown}: it is a symbolic "
                                 f"link to {os.readlink(name, dir_fd=self.fd)} (it must be a "
                                 "directory of its own; remove the link)", self.root / shown)
        if self.step(name, create) is not None:  # made a link since the lstat
            raise UnsafePath(f"refusing to {self.verb} through {shown}: it is a symbolic "
                             "link (it must be a directory of its own)", self.root / shown)

    def walk(self, parts: list[str], create: bool) -> None:
        queue = list(parts)
        while queue:
            name = queue.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                self.up()
                continue
            instead = self.step(name, create)
            if instead is not None:
                queue[:0] = instead


@contextlib.contextmanager
def directory(root: Path, path: str | os.PathLike[str], create: bool = True,
              verb: str = "write") -> Iterator[int]:
    """A descriptor of the directory `path` inside `root` (created with its parents when
    `create`), reached without following any link out of the workspace."""
    walk = _Walk(root, verb)
    try:
        walk.walk(list(relative(root, path)), create)
        yield walk.fd
    finally:
        walk.close()


@contextlib.contextmanager
def _parent(root: Path, path: str | os.PathLike[str], create: bool = True,
            follow: bool = False, verb: str = "write", own_dir: bool = False
            ) -> Iterator[tuple[int, str, _Walk]]:
    """The open parent directory of `path` and its last name. With `follow`, a link at the
    last name is followed when it stays inside the workspace and refused when it leaves;
    without, the name itself is what the caller replaces or removes. With `own_dir` the
    parent itself must not be a symlink (the directories above it may be)."""
    parts = list(relative(root, path))
    if not parts:
        raise UnsafePath(f"refusing to {verb} {root}: it is the workspace itself", root)
    walk = _Walk(root, verb)
    try:
        if own_dir and len(parts) >= 2:
            walk.walk(parts[:-2], create)
            walk.own(parts[-2], create)
        else:
            walk.walk(parts[:-1], create)
        name = parts[-1]
        while follow:
            try:
                st = os.lstat(name, dir_fd=walk.fd)
            except FileNotFoundError:
                break
            if not stat.S_ISLNK(st.st_mode):
                break
            instead = walk.link_target(name)
            if not instead:
                raise UnsafePath(f"refusing to write {walk.shown(name)}: it is a link to the "
                                 "workspace itself", root / walk.shown(name))
            walk.walk(instead[:-1], create)
            name = instead[-1]
        yield walk.fd, name, walk
    finally:
        walk.close()


def makedirs(root: Path, path: str | os.PathLike[str]) -> Path:
    """Create `path` and its parents inside `root`; returns it."""
    with directory(root, path, create=True):
        pass
    return Path(os.path.join(root, *relative(root, path)))


IGNORE_ALL = (b"# Baton created this directory and alone writes in it (run records, logs,\n"
              b"# locks, scratch): machine-local, never committed. Delete this file to commit\n"
              b"# them anyway; Baton writes it only when it creates the directory.\n*\n")
"""The `.gitignore` of a directory Baton owns entirely, as `.pytest_cache` or a venv has
one: `*` ignores every file in it, this one too, so `git status` stays clean with nothing
added to the user's own ignore files."""

GITIGNORE = ".gitignore"


def makedirs_own(root: Path, path: str | os.PathLike[str], ignore: bytes = IGNORE_ALL
                 ) -> Path:
    """`makedirs`, and when this call creates `path` itself, `ignore` (`IGNORE_ALL` unless
    Baton owns only some names in it) as its `.gitignore` (`write_ignore`): a directory
    Baton made for its own files ignores itself. A directory the user already had (a tree
    that tracks `.claude/data/` or `.claude/tmp/`) is never given one, nor is a parent
    created on the way (it may hold the user's files later)."""
    parts = relative(root, path)
    if not parts:
        raise UnsafePath(f"refusing to write {root}: it is the workspace itself", root)
    with directory(root, os.path.join(root, *parts[:-1])) as fd:
        try:
            os.mkdir(parts[-1], 0o777, dir_fd=fd)
        except FileExistsError:  # the user's (or a link, followed as any write follows it)
            return makedirs(root, path)
    write_ignore(root, path, ignore)
    return Path(os.path.join(root, *parts))


def write_ignore(root: Path, path: str | os.PathLike[str], ignore: bytes = IGNORE_ALL
                 ) -> bool:
    """Create `<path>/.gitignore` holding `ignore` only if nothing has that name
    (`O_EXCL | O_NOFOLLOW`, in the directory held open): a link, FIFO or file planted there
    is left alone, never written through or opened, and the caller goes on with its files
    visible to git — False, and a warning saying so."""
    shown = Path(os.path.join(root, *relative(root, path), GITIGNORE))
    try:
        with directory(root, path, create=False) as dfd:
            return _write_ignore(dfd, shown, ignore)
    except OSError as exc:
        log.warning("not writing %s: %s; git will list Baton's run files in %s", shown,
                    describe(exc), shown.parent)
        return False


def _write_ignore(dfd: int, shown: Path, ignore: bytes) -> bool:
    try:
        fd = os.open(GITIGNORE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644, dir_fd=dfd)
    except FileExistsError:
        log.warning("not writing %s: something else already has that name (Baton writes "
                    "only a file of its own there); git will list Baton's run files in %s",
                    shown, shown.parent)
        return False
    try:
        _write_all(fd, ignore)
    finally:
        os.close(fd)
    return True


def subdirectories(root: Path, path: str | os.PathLike[str]) -> tuple[list[str], list[str]]:
    """(directories, other entries) in the directory `path` inside `root`, reached as
    writes are: a directory that is a link leaving the workspace is refused (`UnsafePath`),
    never listed — the names in it would be shown as workflows and checkpoints."""
    with directory(root, path, create=False, verb="read") as fd, os.scandir(fd) as it:
        dirs: list[str] = []
        others: list[str] = []
        for entry in it:
            (dirs if entry.is_dir() else others).append(entry.name)
        return dirs, others


def check_dir(root: Path, path: str | os.PathLike[str]) -> None:
    """Refuse (`UnsafePath`) a directory `path` that exists but is reached through a link
    leaving the workspace; nothing is created. For paths another program (git) writes."""
    try:
        with directory(root, path, create=False):
            pass
    except FileNotFoundError:
        pass


# -- files ---------------------------------------------------------------------------------------


def _regular_single(fd: int, shown: str, root: Path) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"refusing to write {shown}: it is not a regular file", root / shown)
    if st.st_nlink > 1:
        raise UnsafePath(f"refusing to write {shown}: it has {st.st_nlink} hard links, and "
                         "writing it would change the other names too (replace it with a "
                         "file of its own)", root / shown)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def write_atomic(root: Path, path: str | os.PathLike[str], payload: bytes,
                 mode: int = 0o600, durable: bool = True) -> Path:
    """Temp file next to the target (`O_EXCL | O_NOFOLLOW`), fsync, rename over the target,
    fsync of the directory. A symlink at the target's own name is replaced, never followed.
    `durable=False` keeps the atomic rename but skips both fsyncs, for files derived from a
    durable one and rewritten on resume anyway."""
    with _parent(root, path) as (dfd, name, _):
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     mode, dir_fd=dfd)
        try:
            try:
                _write_all(fd, payload)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        if durable:
            os.fsync(dfd)
    return Path(os.path.join(root, *relative(root, path)))


@contextlib.contextmanager
def open_new(root: Path, path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[int]:
    """A fresh file at `path` for writing (a log): whatever had the name — a file, a link,
    a hard link — is unlinked first, never written through."""
    with _parent(root, path) as (dfd, name, walk):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dfd)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, mode, dir_fd=dfd)
        except FileExistsError:  # someone else created it in between: theirs, not ours
            raise UnsafePath(f"refusing to write {walk.shown(name)}: it appeared while it "
                             "was being replaced", root / walk.shown(name)) from None
    try:
        yield fd
    finally:
        os.close(fd)


def create_exclusive(root: Path, path: str | os.PathLike[str], payload: bytes) -> None:
    """Write `payload` to `path` only if nothing has that name: an existing file, link or
    FIFO raises `FileExistsError` and is left as it is (unlike `open_new`, which replaces)."""
    with _parent(root, path) as (dfd, name, _):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=dfd)
        try:
            _write_all(fd, payload)
        finally:
            os.close(fd)


def write_new(root: Path, path: str | os.PathLike[str], payload: bytes) -> None:
    """`open_new` and write `payload` (not fsynced: a log)."""
    with open_new(root, path) as fd:
        _write_all(fd, payload)


@contextlib.contextmanager
def open_append(root: Path, path: str | os.PathLike[str], mode: int = 0o644
                ) -> Iterator[int]:
    """`path` opened to append (created if missing): a regular file with one link."""
    with _parent(root, path, follow=True) as (dfd, name, walk):
        shown = walk.shown(name)
        # O_NONBLOCK: a FIFO planted at the name must not hang the open (ENXIO instead)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dfd)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            raise UnsafePath(f"refusing to write {shown}: it is not a regular file",
                             root / shown) from None
    try:
        _regular_single(fd, shown, root)
        os.set_blocking(fd, True)
        yield fd
    finally:
        os.close(fd)


def open_lock(root: Path, path: str | os.PathLike[str], flags: int = os.O_RDWR,
              own: bool = False) -> int:
    """A descriptor of the lock file `path` (created with `O_RDWR`), for `flock`; the
    caller closes it. Nothing is ever written to it. With `own`, neither the lock nor the
    directory holding it may be a symlink, even one inside the workspace: a workflow's
    lock says whether *that* workflow runs, and a link planted to another one's live lock
    must not make it look running (nor let its engine lock the other)."""
    create = os.O_CREAT if flags & os.O_ACCMODE != os.O_RDONLY else 0
    parts = list(relative(root, path))
    if own and len(parts) < 2:
        raise UnsafePath(f"refusing to use {root / os.path.join(*parts)} as a lock: it is "
                         "not in a directory of its own", root)
    with _parent(root, path, create=bool(create), follow=not own,
                 own_dir=own) as (dfd, name, walk):
        shown = walk.shown(name)
        try:
            fd = os.open(name, flags | create | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         0o644, dir_fd=dfd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise UnsafePath(f"refusing to use {shown} as a lock: it is a symbolic link to "
                             f"{os.readlink(name, dir_fd=dfd)} (a workflow's lock is a file "
                             "of its own; remove the link)", root / shown) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device planted at the name
        os.close(fd)
        raise UnsafePath(f"refusing to use {shown} as a lock: it is not a regular file",
                         root / shown)
    return fd


def rename(root: Path, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename within one directory of the workspace (log rotation)."""
    with _parent(root, src) as (sfd, sname, _), _parent(root, dst) as (dfd, dname, _):
        os.replace(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)


def unlink(root: Path, path: str | os.PathLike[str]) -> None:
    """Remove the name `path` (a link is removed, not its target)."""
    with _parent(root, path, create=False) as (dfd, name, _):
        os.unlink(name, dir_fd=dfd)


def copy_file(root: Path, src: Path, path: str | os.PathLike[str]) -> None:
    """Copy the regular file `src` to a new file `path` inside `root` (never over an
    existing name), with its mode and times."""
    st = os.stat(src, follow_symlinks=False)
    with _parent(root, path) as (dfd, name, _):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     stat.S_IMODE(st.st_mode), dir_fd=dfd)
        try:
            with open(src, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    _write_all(fd, chunk)
            os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(fd)


@contextlib.contextmanager
def open_read(root: Path, path: str | os.PathLike[str]) -> Iterator[tuple[int, int, str]]:
    """(descriptor, size, name shown in messages) of the regular file `path` inside `root`,
    opened for reading and reached as writes are (a link leaving the workspace is refused,
    naming the link and never reading its target). `O_NONBLOCK` and a type check keep a
    FIFO or a device at the name from hanging the open; the descriptor is blocking again
    when yielded. For readers that need more than all of a small file: a log's tail, an
    append-only log's new bytes, a hash of a big artifact."""
    with _parent(root, path, create=False, follow=True, verb="read") as (dfd, name, walk):
        shown = walk.shown(name)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dfd)
        except OSError as exc:
            if exc.errno not in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
                raise
            raise NotRegular(f"refusing to read {shown}: it is not a regular file",
                             root / shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"refusing to read {shown}: it is not a regular file",
                             root / shown)
        os.set_blocking(fd, True)
        yield fd, st.st_size, shown
    finally:
        os.close(fd)


def read_head(root: Path, path: str | os.PathLike[str], limit: int,
              offset: int = 0) -> tuple[bytes, int]:
    """The first `limit` bytes of the regular file `path` inside `root` (from `offset`; a
    negative one counts from the end) and its size, for the checker's reads of workspace
    files (a plan, agent or checkpoint a repository ships, the error log, an agent's log).
    Reached as `read_bytes` reaches it: `OutsideLink` when a symlink on the way leaves the
    workspace, `NotRegular` for a FIFO, socket, device or directory (opened `O_NONBLOCK`,
    judged by `fstat` of the descriptor read, so nothing swapped in between is waited on).
    A larger file is not refused here: the caller says how large it is."""
    with open_read(root, path) as (fd, size, _):
        if offset:
            os.lseek(fd, max(0, size + offset if offset < 0 else offset), os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), size


def _read_limited(fd: int, size: int, limit: int, shown: str | os.PathLike[str]) -> bytes:
    """At most `limit` bytes of `fd`; a file found (or grown) bigger is refused, so a file
    appended to while it is read costs `limit` bytes of memory, not what the writer wrote."""
    if size > limit:
        raise UnsafePath(f"refusing to read {shown}: {size} bytes, more than {limit}",
                         shown)
    chunks = []
    left = limit + 1
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    if left <= 0:
        raise UnsafePath(f"refusing to read {shown}: it grew past {limit} bytes while it was "
                         "read", shown)
    return b"".join(chunks)


def read_bytes(root: Path, path: str | os.PathLike[str], limit: int = 1 << 24) -> bytes:
    """The content of the regular file `path` inside `root`, reached as writes are (a link
    leaving the workspace is refused): for files a repository can plant where Baton reads
    its own state back. `O_NONBLOCK` and a type check keep a FIFO or a device at the name
    from hanging the reader; more than `limit` bytes — at the open or while reading — is
    refused."""
    with open_read(root, path) as (fd, size, shown):
        return _read_limited(fd, size, limit, shown)


@contextlib.contextmanager
def open_regular(path: str | os.PathLike[str]) -> Iterator[tuple[int, int, str]]:
    """`open_read` for a file outside any workspace (the user's key, the agent CLIs' own
    configuration in the home directory and /etc, a file named on the command line): links
    are followed as the CLIs follow them, but a FIFO or a device is refused instead of
    waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
            raise
        raise NotRegular(f"refusing to read {os.fspath(path)}: it is not a regular file",
                         path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"refusing to read {os.fspath(path)}: it is not a regular file",
                             path)
        os.set_blocking(fd, True)
        yield fd, st.st_size, os.fspath(path)
    finally:
        os.close(fd)


def read_regular(path: str | os.PathLike[str], limit: int = 1 << 24) -> bytes:
    """The content of the regular file `path` (`open_regular`), at most `limit` bytes."""
    with open_regular(path) as (fd, size, shown):
        return _read_limited(fd, size, limit, shown)


# -- paths read back ---------------------------------------------------------------------------


def outside(root: Path, path: str | os.PathLike[str]) -> str | None:
    """Why `path` (read from a checkpoint, say) is not a place inside the workspace: not
    below it, or resolving — through links that exist now — to somewhere that is not.
    None when it is inside."""
    p = os.path.normpath(os.path.join(root, path))
    try:
        relative(root, p)
    except UnsafePath:
        return f"{p} is outside the workspace {root}"
    real_root = os.path.realpath(root)
    real = os.path.realpath(p)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        return f"{p} resolves to {real}, outside the workspace {root}"
    return None


def baton_owned(root: Path, path: str | os.PathLike[str]) -> bool:
    """Whether `path` lies in a directory Baton made for its own files: one between `root`
    and `path` holds Baton's `IGNORE_ALL` `.gitignore` (`makedirs_own`). A file a user
    creates there would be ignored by git and overwritten or deleted by the next run."""
    parts = relative(root, path)
    for depth in range(1, len(parts)):
        marker = os.path.join(root, *parts[:depth], GITIGNORE)
        try:
            data, _ = read_head(root, marker, len(IGNORE_ALL) + 1)
        except OSError:
            continue
        if data == IGNORE_ALL:
            return True
    return False
