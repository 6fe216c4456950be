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


# -- cost and token usage as the agent CLIs report it ------------------------------------

USAGE_KEYS = ("cost_usd", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_write_tokens", "total_tokens", "turns", "api_ms")
"""The one shape of a usage record (runners.usage_of fills it from each CLI's own event)."""


def add_usage(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """Key-wise sum: every attempt of a step costs money, failed ones included."""
    out: dict[str, Any] = {}
    for key in USAGE_KEYS:
        values = [v for d in (a, b) if d and isinstance(v := d.get(key), (int, float))]
        if values:
            total = sum(values)
            out[key] = round(total, 6) if isinstance(total, float) else total
    return out


def tokens_of(usage: dict[str, Any] | None) -> int:
    """Tokens a usage record accounts for (its total, else input + output)."""
    if not usage:
        return 0
    if isinstance(usage.get("total_tokens"), int):
        return int(usage["total_tokens"])
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


def usage_totals(steps: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per-state and whole-workflow usage over every step that reported any."""
    states: dict[str, dict[str, Any]] = {}
    total: dict[str, Any] = {}
    for step in steps.values():
        usage = step.get("usage")
        if not usage:
            continue
        state = str(step.get("state", "?"))
        states[state] = add_usage(states.get(state), usage)
        total = add_usage(total, usage)
    return {"states": states, "total": total}


def format_usage(usage: dict[str, Any] | None) -> str:
    """`$0.0123 · 1,234 tokens · 3 turns` (only what was reported); '' for none."""
    if not usage:
        return ""
    parts = []
    if isinstance(usage.get("cost_usd"), (int, float)):
        parts.append(f"${usage['cost_usd']:.4f}")
    if tokens_of(usage):
        parts.append(f"{tokens_of(usage):,} tokens")
    if isinstance(usage.get("turns"), int):
        parts.append(f"{usage['turns']} turn{'s' if usage['turns'] != 1 else ''}")
    return " · ".join(parts)
