"""The implement iteration loop's decisions, from the coordinator's brief summary.

The implementation coordinator does as much as its context allows and returns a brief
summary (`work_remaining`, `requires_continuation`, `context_exhausted`, …) instead of its
full report. From that alone the orchestrator decides: continue with a fresh iteration, or
halt with one of the seeds' reasons. Pure functions, so the rules are tested directly and
the engine only wires them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HALT_REASONS = ("completion", "max_iterations", "stuck", "context_threshold", "user_abort",
                "error")
STUCK_AFTER = 2  # iterations with an unchanged work_remaining
_EMPTY = {"", "0", "[]", "none", "null", "nothing", "-"}


def normalize_work(value: str | list[str] | list[object] | None) -> str:
    """`[Phase 4, Phase 5]`, `Phase_4 Phase_5`, `4, 5` → `Phase_4 Phase_5`; empty → ``."""
    if value is None:
        return ""
    text = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    text = text.strip().strip("[]").strip()
    if text.lower() in _EMPTY:
        return ""
    items = [t for t in re.split(r"[,\s]+", re.sub(r"(?i)phase[\s_]+", "Phase_", text)) if t]
    return " ".join(t if t.startswith("Phase_") else f"Phase_{t}" for t in items
                    if t.strip("'\""))


def _bool(value: str | None) -> bool | None:
    if value is None:
        return None
    v = value.strip().strip("'\"").lower()
    return True if v in ("true", "yes", "1") else False if v in ("false", "no", "0") else None


@dataclass
class Brief:
    """The fields of one iteration's brief summary that drive the loop."""

    work_remaining: str
    requires_continuation: bool
    context_exhausted: bool
    phases_completed: list[str] = field(default_factory=list)
    summary_path: str | None = None
    context_usage_percent: int | None = None
    missing: list[str] = field(default_factory=list)


def parse_brief(fields: dict[str, str], summary_text: str = "") -> Brief:
    """Fields from the agent's output first, then `key: value` header lines of its summary
    file (the seeds grep the summary for them); absent ones are listed in `missing`."""
    merged = dict(fields)
    for line in summary_text.splitlines()[:60]:
        m = re.match(r"^([a-z_]+):\s*(.*)$", line)
        if m and m.group(1) not in merged:
            merged[m.group(1)] = m.group(2).strip()
    missing = [k for k in ("work_remaining", "requires_continuation") if k not in merged]
    phases = [p for p in re.split(r"[,\s\[\]]+", merged.get("phases_completed", "")) if p]
    usage = re.sub(r"[^0-9]", "", merged.get("context_usage_percent", ""))
    return Brief(work_remaining=normalize_work(merged.get("work_remaining")),
                 requires_continuation=bool(_bool(merged.get("requires_continuation"))),
                 context_exhausted=bool(_bool(merged.get("context_exhausted"))),
                 phases_completed=phases, summary_path=merged.get("summary_path"),
                 context_usage_percent=int(usage) if usage else None, missing=missing)


@dataclass
class Decision:
    halt_reason: str | None  # None = continue
    unchanged: int
    invariant_violated: bool = False
    reason: str = ""


def decide(brief: Brief, *, previous_work: str, unchanged: int, iteration: int,
           max_iterations: int, context_tokens: int, context_budget: int) -> Decision:
    """Continue or halt after `iteration`. Order: done → contract invariant (work left but
    no continuation asked: continue anyway) → stuck (work_remaining unchanged for
    STUCK_AFTER iterations) → max_iterations → the orchestrator's context budget."""
    work = brief.work_remaining
    if not work:
        return Decision("completion", 0, reason="no work remaining")
    violated = not brief.requires_continuation
    same = work == normalize_work(previous_work)
    unchanged = unchanged + 1 if same else 0
    if unchanged >= STUCK_AFTER:
        return Decision("stuck", unchanged, violated,
                        f"work_remaining unchanged for {unchanged} iterations: {work}")
    if iteration >= max_iterations:
        return Decision("max_iterations", unchanged, violated,
                        f"{iteration} of {max_iterations} iterations used; still to do: {work}")
    if context_tokens >= context_budget:
        return Decision("context_threshold", unchanged, violated,
                        f"{context_tokens} tokens of brief summaries reached the context "
                        f"budget of {context_budget}")
    return Decision(None, unchanged, violated, f"continue: {work}")
