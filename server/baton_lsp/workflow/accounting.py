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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.config import ModelPrice, WorkflowSettings
from ..runs import confine
from ..runs.record import ContextRow, ContextTotals, UsageTotals

if TYPE_CHECKING:  # the editor's lenses import this module for `format_usage` alone
    from ..runs.record import StepRecord


def tokens(chars: int) -> int:
    """The rough token estimate the seeds use (4 characters per token), rounded up."""
    return math.ceil(chars / 4)


def metadata_chars(metadata: dict[str, Any] | None) -> int:
    if not metadata:
        return 0
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")))


def artifact_chars(path: Path) -> int:
    try:
        return len(confine.read_regular(path).decode("utf-8", errors="replace"))
    except OSError:
        return 0


def step_context(passed_text: str, metadata: dict[str, Any] | None, artifact: Path
                 ) -> dict[str, int]:
    passed = len(passed_text) + metadata_chars(metadata)
    full = artifact_chars(artifact)
    return {"passed_chars": passed, "passed_tokens": tokens(passed),
            "artifact_chars": full, "artifact_tokens": tokens(full)}


def _row(passed: int, full: int, steps: int) -> ContextRow:
    return ContextRow(steps=steps, passed_chars=passed, passed_tokens=tokens(passed),
                      artifact_chars=full, artifact_tokens=tokens(full),
                      reduction_pct=reduction(passed, full))


def reduction(passed: int, full: int) -> float | None:
    """Share of the artifact the orchestrator did not have to read, in percent."""
    if full <= 0:
        return None
    return round(100.0 * (1.0 - passed / full), 1)


def reduction_text(row: ContextRow, noun: str = "") -> str:
    """How a context row reads to a person: `reduction 63.6 %` (`context reduction …` with
    `noun`), or, when what was passed up (signal lines and extracted metadata) is larger
    than the artifact itself — a report of a few lines — what that means, never a negative
    reduction: the metadata-only passing the seeds count on saved nothing there."""
    label = f"{noun} reduction" if noun else "reduction"
    pct = row.reduction_pct
    if pct is None:
        return f"no {label} measured"
    if pct >= 0:
        return f"{label} {pct} %"
    return (f"no {label}: the {row.passed_tokens} tokens passed up are more than "
            f"the {row.artifact_tokens} tokens of the artifacts")


def aggregate(steps: Mapping[str, StepRecord]) -> ContextTotals:
    """Per-state and whole-workflow totals over the steps that carry a `context` record."""
    by_state: dict[str, list[int]] = {}
    for step in steps.values():
        ctx = step.context
        if not ctx or not step.done:
            continue
        acc = by_state.setdefault(_state(step), [0, 0, 0])
        acc[0] += int(ctx.get("passed_chars", 0))
        acc[1] += int(ctx.get("artifact_chars", 0))
        acc[2] += 1
    states = {s: _row(p, f, n) for s, (p, f, n) in by_state.items()}
    total_p = sum(v[0] for v in by_state.values())
    total_f = sum(v[1] for v in by_state.values())
    total_n = sum(v[2] for v in by_state.values())
    return ContextTotals(states=states, total=_row(total_p, total_f, total_n))


def _state(step: StepRecord) -> str:
    """The step's state, "?" for a record that does not say (as the dicts' default was)."""
    return step.state if "state" in step.model_fields_set else "?"


def phase_data(steps: Mapping[str, StepRecord], state: str, duration_ms: int
               ) -> dict[str, Any]:
    """Seed 001's `phase_data.<state>` from what the engine measured: the artifacts the
    state's finished steps created (its own scratch files, named with a leading dot, left
    out), the tokens those steps passed up into the orchestrator's context (metadata and
    signals, the seeds' context usage) and the state's wall time, summed over resumes.
    `agent_tokens` adds what the agent CLIs reported using, when they did."""
    mine = [s for s in steps.values() if "state" in s.model_fields_set and s.state == state]
    done = [s for s in mine if s.done]
    out: dict[str, Any] = {
        "reports_created": [s.artifact for s in done if s.artifact
                            and not Path(s.artifact).name.startswith(".")],
        "context_usage_tokens": sum(int((s.context or {}).get("passed_tokens", 0))
                                    for s in done),
        "duration_ms": duration_ms}
    used: dict[str, Any] = {}
    for s in mine:
        used = add_usage(used, s.usage)
    if used:
        out["agent_tokens"] = tokens_of(used)
    return out


# -- cost and token usage as the agent CLIs report it ------------------------------------

USAGE_KEYS = ("cost_usd", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_write_tokens", "total_tokens", "turns", "api_ms")
"""The one shape of a usage record (runners.usage_of fills it from each CLI's own event)."""


def add_usage(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """Key-wise sum: every attempt of a step costs money, failed ones included."""
    out: dict[str, Any] = {}
    if any(d and "total_tokens" in d for d in (a, b)):
        # a record without a total (claude's) counts its input + output in the sum's total
        a, b = ({**d, "total_tokens": tokens_of(d)} if d else d for d in (a, b))
    for key in USAGE_KEYS:
        values = [v for d in (a, b) if d and isinstance(v := d.get(key), (int, float))]
        if values:
            total = sum(values)
            out[key] = round(total, 6) if isinstance(total, float) else total
    return out


def tokens_of(usage: Mapping[str, Any] | None) -> int:
    """Tokens a usage record accounts for (its total, else input + output)."""
    if not usage:
        return 0
    if isinstance(usage.get("total_tokens"), int):
        return int(usage["total_tokens"])
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


def usage_totals(steps: Mapping[str, StepRecord]) -> UsageTotals:
    """Per-state and whole-workflow usage over every step that reported any."""
    states: dict[str, dict[str, Any]] = {}
    total: dict[str, Any] = {}
    for step in steps.values():
        usage = step.usage
        if not usage:
            continue
        state = _state(step)
        states[state] = add_usage(states.get(state), usage)
        total = add_usage(total, usage)
    return UsageTotals(states=states, total=total)


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


# -- budgets inside a step ---------------------------------------------------------------

_MILLION = 1_000_000


def price(usage: Mapping[str, Any], rate: ModelPrice, cached_in_input: bool) -> float:
    """US dollars for a usage record at `rate`. `cached_in_input`: the CLI counts cache reads
    inside `input_tokens` (codex, gemini, as the OpenAI and Gemini APIs do) rather than
    beside them (claude, as the Anthropic API does)."""
    inp = int(usage.get("input_tokens", 0))
    cached = int(usage.get("cache_read_tokens", 0))
    written = int(usage.get("cache_write_tokens", 0))
    fresh = max(0, inp - cached) if cached_in_input else inp
    dollars = (fresh * rate.input + int(usage.get("output_tokens", 0)) * rate.output
               + cached * (rate.input if rate.cached_input is None else rate.cached_input)
               + written * (rate.input if rate.cache_write is None else rate.cache_write))
    return dollars / _MILLION


@dataclass
class Meter:
    """One attempt's usage, summed as its agent CLI's stream reports it and priced where the
    CLI reports tokens but no dollars. What it holds when the attempt ends — killed at a
    budget, timed out, failed or done — is what the attempt is recorded as having cost,
    unless the CLI's own final account replaces it (`settle`)."""

    prices: Mapping[str, ModelPrice]
    cached_in_input: bool = False
    model: str | None = None
    """The model to price with when an event names none (the runner's configured model)."""
    usage: dict[str, Any] = field(default_factory=dict)
    unpriced: set[str] = field(default_factory=set)
    """Models whose tokens could not be priced (no price known; no model named is "?")."""
    named: str | None = None
    """The last model the stream named: the final account, which may name none, is its."""

    def rate(self, model: str | None) -> ModelPrice | None:
        name = model or self.named or self.model
        rate = self.prices.get(name) if name else None
        if rate is None:
            self.unpriced.add(name or "?")
        return rate

    def priced(self, usage: Mapping[str, Any], model: str | None) -> dict[str, Any]:
        """`usage` with `cost_usd` filled in from the price table when the CLI gave none."""
        out = dict(usage)
        if "cost_usd" not in out and (tokens_of(out) or out.get("cache_read_tokens")):
            rate = self.rate(model)
            if rate is not None:
                out["cost_usd"] = round(price(out, rate, self.cached_in_input), 6)
        return out

    def add(self, delta: Mapping[str, Any], model: str | None = None) -> None:
        self.named = model or self.named
        self.usage = add_usage(self.usage, self.priced(delta, model))

    def settle(self, final: Mapping[str, Any] | None, model: str | None = None
               ) -> dict[str, Any]:
        """The attempt's usage: the CLI's final account (priced if it has no dollars) over
        what the stream reported on the way, whose keys the final one lacks are kept (codex
        reports no turns, only tokens, at the end)."""
        if final:
            self.usage = {**self.usage, **self.priced(final, model)}
        return dict(self.usage)


def budget_breach(settings: WorkflowSettings, total: Mapping[str, Any] | None,
                  turns: int = 0, step: str | None = None) -> str | None:
    """Why the workflow must stop now (a budget reached by `total`, the run's usage with the
    running attempts included, or `turns` past max-turns in one attempt), or None."""
    total = total or {}
    where = f" while {step} ran" if step else ""
    cap, cost = settings.max_budget_usd, total.get("cost_usd", 0)
    if cap is not None and cost >= cap:
        return (f"budget reached{where}: the agents reported ${cost:.4f} of max-budget-usd "
                f"${cap:.2f}; raise it (--set workflow.max-budget-usd=N) and resume")
    cap_t, used = settings.max_tokens, tokens_of(total)
    if cap_t is not None and used >= cap_t:
        return (f"budget reached{where}: the agents reported {used:,} of max-tokens "
                f"{cap_t:,}; raise it (--set workflow.max-tokens=N) and resume")
    cap_n = settings.max_turns
    if cap_n is not None and turns > cap_n:
        return (f"budget reached{where}: the agent made {turns} model requests, more than "
                f"max-turns {cap_n}; raise it (--set workflow.max-turns=N) and resume")
    return None
