"""Issue 35, items 3, 5 and 6 and the one definition of a return signal: the seeds' own
signal text, `append_workflow_state` run by real bash, and a `--runner command` agent written
as the seeds' agents behave (tests/workflow/data/seed_agent.sh) running a whole
full-implementation workflow."""

from __future__ import annotations

from baton_lsp.parse import agent as parse_agent_module
from baton_lsp.parse.agent import parse_agent
from baton_lsp.parse.text import Source
from baton_lsp.rules import command_tasks
from baton_lsp.workflow import signals as engine_signals
from baton_lsp.workflow.signals import SignalReader

# Names this change adds are imported in the tests using them, so every other test runs
# (and fails on its assertions) against the code before it.


# Seed 004, "Error Return Protocol" (the context first, then the error):
SEED_004_ERROR = """\
ERROR_CONTEXT: {
  "error_type": "file_error",
  "message": "Cannot access codebase directory",
  "details": {"path": "/invalid/path"}
}

TASK_ERROR: file_error - Cannot access codebase directory: /invalid/path"""

# Seed 000, "7. Documentation Phase" (the prompt's last line) and the other seeds' returns:
SEED_RETURNS = [
    ("Return: DOCUMENTATION_UPDATED: [list of updated files]", "DOCUMENTATION_UPDATED"),
    ("Return: REPORT_CREATED: [exact absolute path to report file]", "REPORT_CREATED"),
    ("Return: PLAN_CREATED: [absolute path to plan file]", "PLAN_CREATED"),
    ("Return: DEBUG_REPORT_CREATED: [absolute path to debug report]", "DEBUG_REPORT_CREATED"),
    ("Return: SUPERVISOR_COMPLETE: {supervisor_id, aggregated_metadata}", "SUPERVISOR_COMPLETE"),
]
SEED_LINES = [
    ("REPORT_CREATED: /home/user/.claude/specs/028_lean/reports/001-mathlib-theorems.md",
     "REPORT_CREATED"),
    ("PLAN_CREATED: /home/user/.claude/specs/027_auth/plans/027_implementation.md",
     "PLAN_CREATED"),
    ("PHASE_COMPLETE: SUCCESS", "PHASE_COMPLETE"),
    ("RESEARCH_COORDINATOR_COMPLETE: SUCCESS", "RESEARCH_COORDINATOR_COMPLETE"),
    ("RESEARCH_COMPLETE: 3", "RESEARCH_COMPLETE"),
    ("DOCUMENTATION_UPDATED: [/ws/README.md, /ws/docs/api.md]", "DOCUMENTATION_UPDATED"),
]


# -- one definition of a return signal -----------------------------------------------------


def test_rules_editor_and_engine_read_the_seeds_signals_alike() -> None:
    """Seed 000's documentation agent returns `DOCUMENTATION_UPDATED: [files]`: the agent
    parser (rules, hover), the prompt rule and the engine's reader all know it."""
    text = "# Doc agent\n\n" + "\n".join(f"{line}\n" for line, _ in SEED_RETURNS)
    doc = parse_agent(Source.from_text(text), ".claude/agents/doc-writer.md")
    assert doc.emitted_signals == {name for _, name in SEED_RETURNS}
    from baton_lsp.parse import signals as one
    for line, name in SEED_RETURNS:
        assert [m.group(1) for m in one.RETURN_SIGNAL_RE.finditer(line)] == [name]
    reader = SignalReader()
    for line, _ in SEED_LINES:
        reader.feed(line)
    assert [s.name for s in reader.signals] == [name for _, name in SEED_LINES]
    # one definition: the three readers use the patterns of parse.signals
    assert parse_agent_module.SIGNAL_RE is one.SIGNAL_RE
    assert command_tasks.RETURN_SIGNAL_RE is one.RETURN_SIGNAL_RE
    assert engine_signals.SIGNAL_LINE_RE is one.SIGNAL_LINE_RE


def test_the_engine_no_longer_takes_bare_words_for_signals() -> None:
    """Changed: `ERROR: …` or `COMPLETE: …` (no subject) were signals to the engine only."""
    reader = SignalReader()
    for line in ["ERROR: connection refused", "COMPLETE: yes", "CONTEXT: none",
                 "- **PLAN_CREATED**: /ws/p.md"]:
        reader.feed(line)
    assert [s.name for s in reader.signals] == ["PLAN_CREATED"]
