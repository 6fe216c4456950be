"""Context accounting: how much an agent step passed up versus the artifact it wrote.

The seeds claim metadata-only passing saves ~95 % of the orchestrator's context. Baton
measures it: for every agent step, the characters of what reached the orchestrator (the
signal and brief-summary lines the agent printed, plus the metadata extracted from its
artifact) against the characters of the artifact itself, with the usual chars/4 token
estimate; totals per state and per workflow.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def tokens(chars: int) -> int:
    """The rough token estimate the seeds use (4 characters per token), rounded up."""
    return math.ceil(chars / 4)


def metadata_chars(metadata: dict[str, Any] | None) -> int:
    if not metadata:
        return 0
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")))


def artifact_chars(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return 0


def step_context(passed_text: str, metadata: dict[str, Any] | None, artifact: Path
                 ) -> dict[str, int]:
    passed = len(passed_text) + metadata_chars(metadata)
    full = artifact_chars(artifact)
    return {"passed_chars": passed, "passed_tokens": tokens(passed),
            "artifact_chars": full, "artifact_tokens": tokens(full)}


def _row(passed: int, full: int, steps: int) -> dict[str, Any]:
    return {"steps": steps, "passed_chars": passed, "passed_tokens": tokens(passed),
            "artifact_chars": full, "artifact_tokens": tokens(full),
            "reduction_pct": reduction(passed, full)}


def reduction(passed: int, full: int) -> float | None:
    """Share of the artifact the orchestrator did not have to read, in percent."""
    if full <= 0:
        return None
    return round(100.0 * (1.0 - passed / full), 1)


def aggregate(steps: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per-state and whole-workflow totals over the steps that carry a `context` record."""
    by_state: dict[str, list[int]] = {}
    for step in steps.values():
        ctx = step.get("context")
        if not ctx or step.get("status") != "done":
            continue
        acc = by_state.setdefault(step.get("state", "?"), [0, 0, 0])
        acc[0] += int(ctx.get("passed_chars", 0))
        acc[1] += int(ctx.get("artifact_chars", 0))
        acc[2] += 1
    states = {s: _row(p, f, n) for s, (p, f, n) in by_state.items()}
    total_p = sum(v[0] for v in by_state.values())
    total_f = sum(v[1] for v in by_state.values())
    total_n = sum(v[2] for v in by_state.values())
    return {"states": states, "total": _row(total_p, total_f, total_n)}
