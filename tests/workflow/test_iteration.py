"""The iteration loop's rules, applied to brief summaries directly."""

from __future__ import annotations

import pytest

from baton_lsp.workflow.iteration import Brief, decide, normalize_work, parse_brief


@pytest.mark.parametrize(("raw", "expected"), [
    ("[Phase 4, Phase 5]", "Phase_4 Phase_5"), ("Phase_4 Phase_5", "Phase_4 Phase_5"),
    ("4, 5", "Phase_4 Phase_5"), ("0", ""), ("[]", ""), ("  ", ""), (None, ""),
    (["Phase 7"], "Phase_7"),
])
def test_work_remaining_forms(raw: object, expected: str) -> None:
    assert normalize_work(raw) == expected  # type: ignore[arg-type]


def test_brief_from_output_fields_then_summary_header() -> None:
    b = parse_brief({"work_remaining": "Phase_3", "phases_completed": "[1, 2]"},
                    "# Summary\nrequires_continuation: true\ncontext_usage_percent: 65%\n"
                    "work_remaining: Phase_9\n")
    assert (b.work_remaining, b.requires_continuation, b.phases_completed,
            b.context_usage_percent, b.missing) == ("Phase_3", True, ["1", "2"], 65, [])
    assert parse_brief({}, "").missing == ["work_remaining", "requires_continuation"]


def _decide(brief: Brief, previous: str = "Phase_1 Phase_2", unchanged: int = 0,
            iteration: int = 1, max_iterations: int = 5, tokens: int = 0,
            budget: int = 1000) -> tuple[str | None, int, bool]:
    d = decide(brief, previous_work=previous, unchanged=unchanged, iteration=iteration,
               max_iterations=max_iterations, context_tokens=tokens, context_budget=budget)
    return d.halt_reason, d.unchanged, d.invariant_violated


def test_decisions() -> None:
    done = Brief("", False, False)
    more = Brief("Phase_2", True, False)
    lying = Brief("Phase_2", False, False)
    same = Brief("Phase_1 Phase_2", True, False)
    assert _decide(done) == ("completion", 0, False)
    assert _decide(more) == (None, 0, False)
    assert _decide(lying) == (None, 0, True)  # continue anyway, flagged
    assert _decide(same) == (None, 1, False)
    assert _decide(same, unchanged=1) == ("stuck", 2, False)
    assert _decide(more, iteration=5) == ("max_iterations", 0, False)
    assert _decide(more, tokens=1000) == ("context_threshold", 0, False)
    assert _decide(done, iteration=5) == ("completion", 0, False)  # done beats the limit
