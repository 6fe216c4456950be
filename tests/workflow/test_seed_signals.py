"""Issue 35, items 3, 5 and 6 and the one definition of a return signal: the seeds' own
signal text, `append_workflow_state` run by real bash, and a `--runner command` agent written
as the seeds' agents behave (tests/workflow/data/seed_agent.sh) running a whole
full-implementation workflow."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from baton_lsp.parse import agent as parse_agent_module
from baton_lsp.parse.agent import parse_agent
from baton_lsp.parse.text import Source
from baton_lsp.rules import command_tasks
from baton_lsp.runs.record import StepRecord, paths_outside, read_record
from baton_lsp.runs.records import state_file_path, write_state_file
from baton_lsp.workflow import signals as engine_signals
from baton_lsp.workflow.plans import PlanFiles
from baton_lsp.workflow.signals import SignalReader

from .conftest import Workspace

# Names this change adds are imported in the tests using them, so every other test runs
# (and fails on its assertions) against the code before it.

SEED_AGENT = Path(__file__).parent / "data" / "seed_agent.sh"

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


# -- item 6: ERROR_CONTEXT before TASK_ERROR -------------------------------------------------


def test_the_seeds_error_order_keeps_the_structured_details() -> None:
    reader = SignalReader()
    for line in SEED_004_ERROR.splitlines():
        reader.feed(line)
    assert len(reader.errors) == 1, reader.errors
    err = reader.errors[0]
    assert (err.error_type, err.message) == ("file_error",
                                             "Cannot access codebase directory: /invalid/path")
    assert err.context["details"] == {"path": "/invalid/path"}


def test_each_error_gets_its_own_context_in_either_order() -> None:
    reader = SignalReader()
    for line in ['ERROR_CONTEXT: {"n": 1}', "TASK_ERROR: file_error - first",
                 "PROGRESS: going on", "TASK_ERROR: agent_error - second",
                 'ERROR_CONTEXT: {"n": 2}']:
        reader.feed(line)
    assert [(e.error_type, e.context) for e in reader.errors] == [
        ("file_error", {"n": 1}), ("agent_error", {"n": 2})]


def test_a_seed_agent_failing_the_seeds_way_logs_the_details(ws: Workspace) -> None:
    """The agent prints seed 004's text and exits 1: errors.jsonl has `details.path`."""
    ws.config(f'runner = "command"\ncommand = ["bash", "{SEED_AGENT}"]\n')
    r = ws.baton("run", "Research auth", "--scope", "research-only", "--complexity", "1",
                 env={"SEED_AGENT_FAIL": "research"})
    assert r.returncode == 1, r.stdout + r.stderr
    err = next(e for e in ws.errors() if e["source"] == "research.1")
    assert err["error_type"] == "file_error", err
    assert err["context"]["details"] == {"path": "/invalid/path"}
    assert err["context"]["error_type"] == "file_error"


def test_an_agent_that_exits_0_without_its_artifact_logs_its_error_context(
        ws: Workspace) -> None:
    """Seed 004's text then exit 0 and no report: the barrier fails, and the agent's own
    account (type, message, details) is in errors.jsonl beside it."""
    ws.config(f'runner = "command"\ncommand = ["bash", "{SEED_AGENT}"]\n')
    r = ws.baton("run", "Research auth", "--scope", "research-only", "--complexity", "1",
                 env={"SEED_AGENT_FAIL": "research", "SEED_AGENT_EXIT": "0"})
    assert r.returncode == 1, r.stdout + r.stderr
    err = next(e for e in ws.errors() if e["source"] == "research.1")
    assert err["error_type"] == "validation_error" and "HARD BARRIER" in err["error_message"]
    assert err["context"]["task_error"] == ("file_error - Cannot access codebase directory: "
                                            "/invalid/path")
    assert err["context"]["error_context"]["details"] == {"path": "/invalid/path"}


def test_the_seeds_trap_handler_context_on_stderr_reaches_the_log(ws: Workspace) -> None:
    """Seed 002's ERR trap prints ERROR_CONTEXT on stderr (with a trailing comma) and
    TASK_ERROR on stdout: the logged error carries the context's fields."""
    ws.config(f'runner = "command"\ncommand = ["bash", "{SEED_AGENT}"]\n')
    r = ws.baton("run", "Research auth", "--scope", "research-only", "--complexity", "1",
                 env={"SEED_AGENT_TRAP": "research"})
    assert r.returncode == 1, r.stdout + r.stderr
    err = next(e for e in ws.errors() if e["source"] == "research.1")
    assert err["error_type"] == "agent_error" and \
        "Research coordinator failed" in err["error_message"]
    assert err["context"]["message"].startswith("Research coordinator failed at line ")
    assert err["context"]["exit_code"] == 1


def test_the_scripted_agent_prints_the_seeds_order(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1")
    assert r.returncode == 1
    wid = ws.only_workflow()
    log = (ws.root / ".claude/data/checkpoints" / wid / "logs" / "plan.attempt-1.log")
    lines = [ln.split(":")[0] for ln in log.read_text().splitlines()]
    assert lines.index("ERROR_CONTEXT") < lines.index("TASK_ERROR")
    err = ws.errors()[-1]
    assert err["error_type"] == "validation_error" and err["context"]["injected"] is True


# -- item 3: DOCUMENTATION_UPDATED --------------------------------------------------------


@pytest.mark.parametrize(("value", "paths"), [
    ("[/ws/README.md, /ws/docs/api.md]", ["/ws/README.md", "/ws/docs/api.md"]),
    ('["README.md", "docs/my guide.md"]', ["README.md", "docs/my guide.md"]),
    ("[\n  README.md,\n  `docs/api.md`\n]", ["README.md", "docs/api.md"]),
    ("README.md, docs/api.md", ["README.md", "docs/api.md"]),
    ("/ws/README.md", ["/ws/README.md"]),
    ("[]", []),
])
def test_documentation_updated_lists_in_the_seeds_shapes(value: str, paths: list[str]) -> None:
    from baton_lsp.workflow.signals import listed_paths
    assert listed_paths(value) == paths


def test_a_multi_line_list_is_one_signal() -> None:
    reader = SignalReader()
    for line in ["DOCUMENTATION_UPDATED: [", "  /ws/README.md,", "  /ws/docs/api.md", "]",
                 "PROGRESS: done"]:
        reader.feed(line)
    from baton_lsp.workflow.signals import listed_paths
    sig = reader.first("DOCUMENTATION_UPDATED")
    assert sig is not None and listed_paths(sig.value) == ["/ws/README.md", "/ws/docs/api.md"]


def test_a_bullet_list_after_the_signal_is_its_list() -> None:
    from baton_lsp.workflow.signals import listed_paths
    reader = SignalReader()
    for line in ["DOCUMENTATION_UPDATED:", "", "- README.md", "* `docs/my guide.md`", "",
                 "- not part of it", "PROGRESS: done"]:
        reader.feed(line)
    sig = reader.first("DOCUMENTATION_UPDATED")
    assert sig is not None and listed_paths(sig.value) == ["README.md", "docs/my guide.md"]
    assert [s.name for s in reader.signals] == ["DOCUMENTATION_UPDATED", "PROGRESS"]


def test_listed_files_must_be_regular_non_empty_and_inside(tmp_path: Path) -> None:
    from baton_lsp.workflow.barrier import check_listed
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Readme\n")
    (root / "docs" / "empty.md").write_text("")
    os.mkfifo(root / "docs" / "fifo.md")
    (tmp_path / "outside.md").write_text("x\n")
    (root / "docs" / "link.md").symlink_to(tmp_path / "outside.md")
    files, failure = check_listed(root, ["README.md"], "DOCUMENTATION_UPDATED")
    assert files == [root / "README.md"] and failure is None
    for listed, kind in [(["README.md", "docs/missing.md"], "missing"),
                         (["docs/empty.md"], "empty"), (["docs/fifo.md"], "not-a-file"),
                         (["docs"], "not-a-file"), ([str(tmp_path / "outside.md")], "outside"),
                         (["../outside.md"], "outside"), (["docs/link.md"], "outside")]:
        _, failure = check_listed(root, listed, "DOCUMENTATION_UPDATED")
        assert failure is not None and failure.kind == kind, (listed, failure)
        assert "DOCUMENTATION_UPDATED" in failure.message


# -- item 5: values appended the seeds' way survive --------------------------------------------

# Seed 001, "state-persistence.sh" (verbatim)
APPEND = '''append_workflow_state() {
  local key="$1"
  local value="$2"
  echo "export ${key}=\\"${value}\\"" >> "$STATE_FILE"
}
'''

VALUES = {"PLAN_FILE": "/ws/specs/001_x/plans/001_plan.md",
          "CONTINUATION_CONTEXT": "phase 1 done; it's phase 2's turn",
          "RESEARCH_TOPICS_X": '["auth","db"]',  # unescaped quotes: bash reads [auth,db]
          "BACKSLASH": r"C:\temp\new",
          "CURRENT_STATE": "agent-says-research"}


def _bash_values(state_file: Path, keys: list[str], cwd: Path) -> dict[str, str]:
    """What `source "$STATE_FILE"` gives each key, asked of real bash."""
    script = f'source "{state_file}"\n' + "".join(
        f'printf "%s\\0" "${{{k}-<unset>}}"\n' for k in keys)
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True, cwd=cwd)
    return dict(zip(keys, out.stdout.decode().split("\0")[:-1], strict=True))


def test_values_appended_the_seeds_way_read_as_bash_reads_them(tmp_path: Path) -> None:
    from baton_lsp.parse.exports import read_exports
    state = tmp_path / "state.sh"
    state.write_text('export WORKFLOW_ID="w1"\n')
    script = f'STATE_FILE="{state}"\n{APPEND}' + "".join(
        f"append_workflow_state {k} {_sq(v)}\n" for k, v in VALUES.items())
    subprocess.run(["bash", "-c", script], check=True)
    keys = list(VALUES)
    assert read_exports(state.read_text()) == {"WORKFLOW_ID": "w1",
                                               **_bash_values(state, keys, tmp_path)}


def test_the_state_file_rewrite_keeps_keys_baton_does_not_own(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    path = write_state_file(root, "w1", {"CURRENT_STATE": "research", "WORKFLOW_STATUS": None})
    assert path == state_file_path(root, "w1")
    script = f'source "{path}"\n{APPEND}' + "".join(
        f"append_workflow_state {k} {_sq(v)}\n" for k, v in VALUES.items()) + \
        'append_workflow_state WORKFLOW_STATUS "agent"\n'
    subprocess.run(["bash", "-c", script], check=True, cwd=root)
    before = _bash_values(path, list(VALUES), root)
    write_state_file(root, "w1", {"CURRENT_STATE": "plan", "WORKFLOW_STATUS": None})
    after = _bash_values(path, [*VALUES, "WORKFLOW_STATUS"], root)
    for key in ("PLAN_FILE", "CONTINUATION_CONTEXT", "RESEARCH_TOPICS_X", "BACKSLASH"):
        assert after[key] == before[key], key
    assert after["RESEARCH_TOPICS_X"] == "[auth,db]"
    assert after["CURRENT_STATE"] == "plan"  # Baton's own keys win
    assert after["WORKFLOW_STATUS"] == "<unset>"  # Baton's key, not set now: not the agent's


def test_numbered_keys_of_baton_are_never_carried(tmp_path: Path) -> None:
    """`REPORT_PATH_<n>` is Baton's whatever the number: one it no longer writes goes."""
    root = tmp_path / "ws"
    root.mkdir()
    path = write_state_file(root, "w1", {"REPORT_PATH_0": "/r0", "REPORT_PATH_1": "/r1"},
                            ("REPORT_PATH_",))
    with path.open("a") as f:
        f.write('export REPORT_PATH_7="/stale"\nexport REPORT_PATHS_NOTE="kept"\n')
    write_state_file(root, "w1", {"REPORT_PATH_0": "/r0"}, ("REPORT_PATH_",))
    assert _bash_values(path, ["REPORT_PATH_0", "REPORT_PATH_1", "REPORT_PATH_7",
                               "REPORT_PATHS_NOTE"], root) == {
        "REPORT_PATH_0": "/r0", "REPORT_PATH_1": "<unset>", "REPORT_PATH_7": "<unset>",
        "REPORT_PATHS_NOTE": "kept"}


def test_an_expansion_left_in_a_carried_value_stays_text(tmp_path: Path) -> None:
    """A value holding `$(…)` (a state file a repository planted, or a line written by hand)
    is carried as text: Baton's rewrite never makes a sourced file run it."""
    root = tmp_path / "ws"
    (root / ".claude" / "tmp").mkdir(parents=True)
    path = state_file_path(root, "w1")
    path.write_text('export PLANTED="$(touch pwned)"\nexport OK=\'single quoted\'\n'
                    'export BAD="x"; touch pwned2\nexport BASH_ENV="/tmp/x"\n'
                    'export LD_PRELOAD="/tmp/x.so"\n')
    write_state_file(root, "w1", {"CURRENT_STATE": "plan"})
    got = _bash_values(path, ["PLANTED", "OK", "BAD", "BASH_ENV", "LD_PRELOAD"], root)
    assert got == {"PLANTED": "$(touch pwned)", "OK": "single quoted", "BAD": "<unset>",
                   "BASH_ENV": "<unset>", "LD_PRELOAD": "<unset>"}
    assert not (root / "pwned").exists() and not (root / "pwned2").exists()


def _sq(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


# -- the seeds' agents, end to end ---------------------------------------------------------


def _checkpoint(ws: Workspace, wid: str) -> dict:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def test_a_seed_style_command_agent_completes_a_full_implementation(ws: Workspace) -> None:
    """Research, plan, two phases, test and a documentation agent returning
    `DOCUMENTATION_UPDATED: [files]` (no workflow summary), with values appended to the
    state file by the seeds' function surviving every transition."""
    ws.config(f'runner = "command"\ncommand = ["bash", "{SEED_AGENT}"]\n')
    (ws.root / "README.md").write_text("# Project\n")
    r = ws.baton("run", "Add a login flow", "--scope", "full-implementation",
                 "--complexity", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "complete"
    assert cp["state_machine"]["completed_states"] == [
        "research", "plan", "implement", "test", "document", "complete"]
    readme, usage = ws.root / "README.md", ws.root / "docs" / "usage.md"
    doc = cp["baton"]["steps"]["document"]
    assert doc["updated_files"] == [str(readme), str(usage)]
    assert doc["artifact"] == str(readme) and doc["status"] == "done"
    assert not list(Path(cp["baton"]["paths"]["summaries_dir"]).glob("*workflow_summary*"))
    status = ws.status(wid)
    assert status["steps"]["document"]["updated_files"] == [str(readme), str(usage)]
    assert "updated   README.md" in r.stdout and "updated   docs/usage.md" in r.stdout
    assert ws.errors() == []
    state = state_file_path(ws.root, wid)
    got = _bash_values(state, ["PLAN_FILE", "IMPLEMENTATION_STATUS", "SEED_TOPICS_JSON",
                               "SUPERVISOR_METADATA_PATH", "CONTINUATION_CONTEXT",
                               "CURRENT_STATE"], ws.root)
    assert got == {"PLAN_FILE": cp["baton"]["paths"]["plan"], "IMPLEMENTATION_STATUS":
                   "complete", "SEED_TOPICS_JSON": "[auth,sessions]",
                   "SUPERVISOR_METADATA_PATH": f"{ws.root}/.claude/tmp/supervisor_metadata.json",
                   "CONTINUATION_CONTEXT": "phase 1 first, then phase 2's routes",
                   "CURRENT_STATE": "complete"}
    # the listed files stand for the step's artifact: deleting one makes it run again
    plans = PlanFiles(ws.root)
    typed = StepRecord.model_validate(doc)
    assert plans.invalid_reason(typed) is None
    usage.unlink()
    assert plans.invalid_reason(typed) == f"the file {usage} it updated was deleted"
    # a checkpoint naming an updated file outside the workspace is never resumed
    doc["updated_files"] = ["/etc/hostname"]
    outside = paths_outside(ws.root, read_record(cp))
    assert [p for p in outside if p.startswith("baton.steps.document.updated_files[0]:")]


GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def test_the_seed_style_agent_finds_its_state_from_a_phase_worktree(ws: Workspace) -> None:
    """In a git repository each phase runs in its own worktree, whose `CLAUDE_PROJECT_DIR`
    is the worktree: the seeds' `load_workflow_state "$WORKFLOW_ID"` finds the run's values
    there (a copy that keeps the agent in its tree), and `append_workflow_state` reaches the
    run's own state file through `STATE_FILE`. Before, agents had neither `WORKFLOW_ID` nor
    `STATE_FILE`, and the worktree had no state file."""
    ws.config(f'runner = "command"\ncommand = ["bash", "{SEED_AGENT}"]\n')
    (ws.root / "README.md").write_text("# Project\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *GIT_ID, *args], cwd=ws.root, check=True, capture_output=True)
    r = ws.baton("run", "Add a login flow", "--scope", "full-implementation",
                 "--complexity", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "complete"
    phase = cp["baton"]["steps"]["implement.phase-1"]
    assert phase["git"]["mode"] == "worktree"
    state = state_file_path(ws.root, wid)
    got = _bash_values(state, ["IMPLEMENTATION_STATUS", "CLAUDE_PROJECT_DIR"], ws.root)
    assert got == {"IMPLEMENTATION_STATUS": "complete", "CLAUDE_PROJECT_DIR": str(ws.root)}
    assert (ws.root / "src" / "phase_2.txt").read_text() == "phase 2\n"  # merged back
    tracked = subprocess.run(["git", "ls-files", ".claude/tmp", ".claude/worktrees"],
                             cwd=ws.root, check=True, capture_output=True, text=True).stdout
    assert tracked == ""  # the copies are Baton's, never in a phase's commit


@pytest.mark.parametrize(("docs", "expect"), [
    ("[/etc/hostname]", "lies outside the workspace"),
    ("[README.md, docs/never-written.md]", "docs/never-written.md listed in "
                                           "DOCUMENTATION_UPDATED does not exist"),
    ("[]", "DOCUMENTATION_UPDATED listed no files"),
])
def test_a_documentation_list_that_fails_the_barrier(ws: Workspace, docs: str,
                                                     expect: str) -> None:
    ws.config(f'runner = "command"\ncommand = ["bash", "{SEED_AGENT}"]\n')
    (ws.root / "README.md").write_text("# Project\n")
    r = ws.baton("run", "Add a login flow", "--scope", "full-implementation",
                 "--complexity", "1", env={"SEED_AGENT_DOCS": docs})
    assert r.returncode == 1 and "FAILED in document" in r.stdout, r.stdout
    cp = _checkpoint(ws, ws.only_workflow())
    assert expect in cp["baton"]["steps"]["document"]["message"]


@pytest.mark.parametrize(("role", "signal"), [("document", "DOCUMENTATION_UPDATED: [file, ...]"),
                                              ("research-supervisor", "SUPERVISOR_COMPLETE:")])
def test_the_prompt_offers_the_seeds_return_for_the_role(tmp_path: Path, role: str,
                                                         signal: str) -> None:
    """A real agent whose own file follows the seeds (DOCUMENTATION_UPDATED, or a supervisor
    returning SUPERVISOR_COMPLETE) is not told only the opposite by Baton's contract."""
    from baton_lsp.model.config import WorkflowSettings
    from baton_lsp.workflow.prompt import build_prompt

    contract = {"BATON_WORKFLOW_ID": "w1", "BATON_DESCRIPTION": "Document the login flow"}
    text = build_prompt(tmp_path, WorkflowSettings(), None, role, "s1",
                        tmp_path / "artifact.md", contract).text
    assert signal in text
