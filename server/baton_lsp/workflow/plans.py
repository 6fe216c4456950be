"""What a run knows about the files its steps read: the plan (parsed once per version, its
phases' section hashes) and whether a finished step is still valid — its artifact present
and its inputs unchanged. Shared by the engine and the resume preview."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model.base import Kind
from ..model.graph import PlanGraph, build_graph, waves_after
from ..model.plan import Plan, is_done
from ..parse import parse_bytes
from ..parse.plan_marks import phase_fingerprints, plan_fingerprint
from ..parse.text import UnreadableError, decode
from ..runs import confine
from ..runs.digest import sha256_file
from ..runs.record import StepRecord

log = logging.getLogger(__name__)

EDIT_TRIES = 3
"""Times a marker edit re-reads a plan that changed under it before leaving it alone."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class PlanFiles:
    """Plan parsing and step validity with per-run caches: resuming a 200-phase plan asks
    for every phase's hash, which must cost one parse, not 200."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self._plan: tuple[str, bytes, Any] | None = None
        self._hashes: dict[str, Any] = {}
        self._progress: tuple[bytes, str | None] | None = None

    def read(self, path: Path) -> bytes:
        """A plan's bytes, read through `confine` in the workspace: a FIFO is refused, not
        waited on, and a link out of the workspace is named, never read (its phases would
        reach the output and the agents' prompts)."""
        if self.root is None:
            return confine.read_regular(path)
        return confine.read_bytes(self.root, path)

    def load(self, path: Path) -> Plan | str:
        """The parsed plan, or why it cannot be read."""
        try:
            raw = self.read(path)
        except OSError as exc:
            return f"cannot read the plan {path}: {confine.describe(exc)}"
        cached = self._plan
        if cached is not None and cached[0] == str(path) and cached[1] == raw:
            doc = cached[2]  # the same bytes: validation, hashes and waves share one parse
        else:
            doc = parse_bytes(Kind.PLAN, raw, str(path))
            self._plan = (str(path), raw, doc)
        if not isinstance(doc, Plan):
            reason = getattr(doc, "reason", "not a plan")
            return f"the plan {path} cannot be read: {reason}"
        return doc

    def problem(self, path: Path) -> str | None:
        """Why the plan cannot be implemented (unreadable, no phases, a cycle), or None."""
        plan = self.load(path)
        if isinstance(plan, str):
            return plan
        if not plan.phases:
            return f"the plan {path} has no phases (expected `### Phase N: Title` headings)"
        graph = build_graph(plan)
        if graph.cycles:
            cyc = " → ".join(graph.cycles[0])
            return f"the plan {path} has a dependency cycle {cyc}; no wave order exists"
        return None

    def schedule(self, path: Path) -> tuple[PlanGraph, set[str]] | str:
        """The plan's dependency graph and the phases its markers say are done (finished or
        given up: `is_done`), or why it cannot be read. The same reading as `baton graph`
        and the plan rules: one parse, every dependency spelling and phase id form."""
        plan = self.load(path)
        if isinstance(plan, str):
            return plan
        return build_graph(plan), {p.id for p in plan.phases if is_done(p)}

    def waves(self, path: Path) -> list[list[str]] | str:
        """The waves a run of this plan starts with: its graph's waves without the phases
        already done (`waves_after`), or why the plan cannot be read."""
        reading = self.schedule(path)
        if isinstance(reading, str):
            return reading
        graph, done = reading
        return waves_after(graph, done)

    def phase_hashes(self, plan_path: Path) -> dict[str, str]:
        """SHA-256 of each phase's section (heading to last line) without its status
        markers and with its task boxes emptied: the input an implement step depends on.
        Marking a phase `[COMPLETE]` and ticking its boxes (the engine does both) is progress,
        not an edit, and must not make a resume run a finished phase again. Parsed once per
        plan version."""
        return self._section_hashes(plan_path)[0]

    def _section_hashes(self, plan_path: Path) -> tuple[dict[str, str], dict[str, str]]:
        """(fingerprint hashes, hashes of the sections as written — what steps recorded
        before markers were normalised out, still accepted)."""
        try:
            st = plan_path.stat()
        except OSError:
            return {}, {}
        key = (str(plan_path), st.st_mtime_ns, st.st_size)
        if self._hashes.get("key") != key:
            plan = self.load(plan_path)
            hashes: dict[str, str] = {}
            raw: dict[str, str] = {}
            if not isinstance(plan, str):
                assert self._plan is not None
                try:
                    text = decode(self._plan[1])
                except UnreadableError:
                    text = ""
                for pid, section in phase_fingerprints(text, plan).items():
                    hashes[pid] = sha256_text(section)
                lines = self._plan[1].decode("utf-8", errors="replace").splitlines()
                for p in plan.phases:
                    raw.setdefault(p.id, sha256_text(
                        "\n".join(lines[p.range.start_line:p.range.end_line + 1])))
            self._hashes = {"key": key, "hashes": hashes, "raw": raw}
        return self._hashes["hashes"], self._hashes["raw"]

    def phase_texts(self, plan_path: Path) -> dict[str, str]:
        """Each phase's section as written (heading to last line), for what reads the
        phases' words (the implementation supervisor's track detection)."""
        plan = self.load(plan_path)
        if isinstance(plan, str) or self._plan is None:
            return {}
        lines = self._plan[1].decode("utf-8", errors="replace").splitlines()
        return {p.id: "\n".join(lines[p.range.start_line:p.range.end_line + 1])
                for p in plan.phases}

    def progress_free(self, path: Path) -> str | None:
        """The plan's fingerprint without progress (`plan_fingerprint`), computed once per
        version of its bytes: every checkpoint records it."""
        try:
            raw = self.read(path)
        except OSError:
            return None
        cached = self._progress
        if cached is None or cached[0] != raw:
            cached = self._progress = (raw, plan_fingerprint(raw))
        return cached[1]

    def invalid_reason(self, step: StepRecord) -> str | None:
        """Why a finished step must run again (artifact deleted, an input changed), or None."""
        if step.role == "classifier":
            return None  # its result lives in the checkpoint; the tmp file may be cleaned
        art = step.artifact
        if art and step.role != "test" and not Path(art).is_file():
            return f"its artifact {art} was deleted"
        for updated in step.updated_files or []:
            if not Path(updated).is_file():
                return f"the file {updated} it updated was deleted"
        for key, digest in step.inputs.items():
            path, _, phase = key.partition("#phase-")
            if phase:
                hashes, raw = self._section_hashes(Path(path))
                current = hashes.get(phase)
                if current is not None and raw.get(phase) == digest:
                    continue  # recorded as written by an earlier Baton, and unchanged
            else:
                current = sha256_file(Path(path), self.root)
            if current != digest:
                return f"its input {key} changed" if current else f"its input {key} is gone"
        return None


def edit_plan(root: Path, path: Path, change: Callable[[bytes], bytes | None]) -> str | None:
    """Apply a marker edit to the plan as it is now and write it atomically (temp file and
    rename through `confine`, the file's mode kept). The user's editor or an agent may have
    written the plan since Baton read it: the edit is made on the current text, and a plan
    that changes between the read and the rename is read again; one that keeps changing,
    lost its phase or cannot be written is left alone. A plan that is a symlink is written
    where it points (inside the workspace, as `confine` checks), the link kept. Returns why
    it was left, or None."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    for _ in range(EDIT_TRIES):
        try:
            raw = confine.read_bytes(root, path)
            mode = os.stat(path).st_mode & 0o7777
        except OSError as exc:
            return f"cannot read the plan {path}: {confine.describe(exc)}"
        new = change(raw)
        if new is None:
            return f"the plan {path} no longer has that phase (or cannot be read)"
        if new == raw:
            return None
        try:
            if confine.read_bytes(root, path) != raw:
                continue  # written meanwhile: mark the text as it is now
            confine.write_atomic(root, path, new, mode=mode)
        except OSError as exc:
            log.warning("cannot mark the plan %s: %s", path, exc)
            return f"cannot write the plan {path}: {confine.describe(exc)}"
        return None
    return f"the plan {path} kept changing while Baton marked it; left as it is"
