"""The hard barrier: after an agent step, its artifact must exist at the pre-calculated path,
be non-empty and lie inside the workspace. A failure says which of the three it was, and for
a file written elsewhere names the path the agent reported (the seeds' wrong-location
diagnostic)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..runs import confine
from .layout import inside


@dataclass(frozen=True)
class BarrierFailure:
    kind: str  # missing | empty | elsewhere | outside | not-a-file
    expected: Path
    message: str
    reported: str | None = None

    def context(self) -> dict[str, object]:
        out: dict[str, object] = {"artifact_path": str(self.expected), "error": self.kind,
                                  "min_size": 1}
        if self.reported:
            out["reported_path"] = self.reported
        return out


def check_artifact(root: Path, expected: Path, reported: list[str],
                   what: str = "artifact") -> BarrierFailure | None:
    """None when the artifact is in place; otherwise the precise failure."""
    if not inside(root, expected):
        return BarrierFailure("outside", expected,
                              f"HARD BARRIER FAILED: {what} path {expected} resolves outside "
                              f"the workspace {root}")
    try:
        st = os.stat(expected)
    except OSError:
        st = None
    if st is not None and not os.path.isfile(expected):
        return BarrierFailure("not-a-file", expected,
                              f"HARD BARRIER FAILED: {what} {expected} is not a regular file")
    if st is not None and st.st_size > 0:
        return None
    elsewhere = [p for p in reported if _norm(root, p) != str(expected)]
    existing = [p for p in elsewhere if os.path.isfile(_norm(root, p))]
    if st is None and existing:
        return BarrierFailure("elsewhere", expected,
                              f"HARD BARRIER FAILED: {what} written to the wrong location: "
                              f"expected {expected}, the agent reported {existing[0]}",
                              existing[0])
    if st is not None:
        return BarrierFailure("empty", expected,
                              f"HARD BARRIER FAILED: {what} {expected} is empty (0 bytes)")
    hint = f" (it reported {elsewhere[0]}, which does not exist either)" if elsewhere else ""
    return BarrierFailure("missing", expected,
                          f"HARD BARRIER FAILED: {what} not found at {expected}{hint}",
                          elsewhere[0] if elsewhere else None)


def check_listed(root: Path, listed: list[str], signal: str
                 ) -> tuple[list[Path], BarrierFailure | None]:
    """The hard barrier over the files an agent's signal lists (`DOCUMENTATION_UPDATED:`
    names what it changed): each, relative to the workspace or absolute, must lie inside the
    workspace and be a non-empty regular file there, reached as Baton reads every workspace
    file (`confine`: no link leaving it, no FIFO waited on). Returns the files as absolute
    paths and the first failure, or None."""
    files = [Path(_norm(root, p)) for p in listed]
    for path in files:
        what = f"file {path} listed in {signal}"
        if not inside(root, path):
            return files, BarrierFailure("outside", path,
                                         f"HARD BARRIER FAILED: {what} lies outside the "
                                         f"workspace {root}")
        try:
            with confine.open_read(root, path) as (_, size, _):
                pass
        except FileNotFoundError:
            return files, BarrierFailure("missing", path,
                                         f"HARD BARRIER FAILED: {what} does not exist")
        except confine.NotRegular:
            return files, BarrierFailure("not-a-file", path,
                                         f"HARD BARRIER FAILED: {what} is not a regular file")
        except OSError as exc:  # reached through a link leaving the workspace, unreadable
            return files, BarrierFailure("outside", path,
                                         f"HARD BARRIER FAILED: {what} cannot be accepted: "
                                         f"{confine.describe(exc)}")
        if size == 0:
            return files, BarrierFailure("empty", path,
                                         f"HARD BARRIER FAILED: {what} is empty (0 bytes)")
    return files, None


def _norm(root: Path, p: str) -> str:
    q = Path(os.path.expanduser(p))
    if not q.is_absolute():
        q = root / q
    return os.path.normpath(q)
