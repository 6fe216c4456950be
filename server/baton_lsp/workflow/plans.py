"""What a run knows about the files its steps read: the plan (parsed once per version, its
phases' section hashes) and whether a finished step is still valid — its artifact present
and its inputs unchanged. Shared by the engine and the resume preview."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..model.base import Kind
from ..model.graph import build_graph
from ..model.plan import Plan
from ..parse import parse_bytes
from ..runs.digest import sha256_file


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class PlanFiles:
    """Plan parsing and step validity with per-run caches: resuming a 200-phase plan asks
    for every phase's hash, which must cost one parse, not 200."""

    def __init__(self) -> None:
        self._plan: tuple[str, bytes, Any] | None = None
        self._hashes: dict[str, Any] = {}

    def load(self, path: Path) -> Plan | str:
        """The parsed plan, or why it cannot be read."""
        try:
            raw = path.read_bytes()
        except OSError as exc:
            return f"cannot read the plan {path}: {exc.strerror or exc}"
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

    def phase_hashes(self, plan_path: Path) -> dict[str, str]:
        """SHA-256 of each phase's section text (heading to last line), the input an
        implement step depends on; parsed once per plan version."""
        try:
            st = plan_path.stat()
        except OSError:
            return {}
        key = (str(plan_path), st.st_mtime_ns, st.st_size)
        if self._hashes.get("key") != key:
            plan = self.load(plan_path)
            hashes: dict[str, str] = {}
            if not isinstance(plan, str):
                lines = plan_path.read_text(encoding="utf-8", errors="replace").splitlines()
                for p in plan.phases:
                    hashes.setdefault(p.id, sha256_text(
                        "\n".join(lines[p.range.start_line:p.range.end_line + 1])))
            self._hashes = {"key": key, "hashes": hashes}
        return self._hashes["hashes"]

    def invalid_reason(self, step: dict[str, Any]) -> str | None:
        """Why a finished step must run again (artifact deleted, an input changed), or None."""
        if step.get("role") == "classifier":
            return None  # its result lives in the checkpoint; the tmp file may be cleaned
        art = step.get("artifact")
        if art and step.get("role") != "test" and not Path(art).is_file():
            return f"its artifact {art} was deleted"
        for key, digest in (step.get("inputs") or {}).items():
            path, _, phase = key.partition("#phase-")
            current = self.phase_hashes(Path(path)).get(phase) if phase else \
                sha256_file(Path(path))
            if current != digest:
                return f"its input {key} changed" if current else f"its input {key} is gone"
        return None
