"""`baton run` / `baton resume` at the front door (issue 30, "Runs that are safe together"):
what is decided and refused before anything is written or paid for, which runner a run uses
and that a resume keeps it. Real `baton` processes with the scripted agents."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.workflow.git import ref_format_problem
from tests.agents.clis import cli_path
from tests.workflow.conftest import Workspace

CLASSIFIER = '[workflow.agents]\nclassifier = "workflow-classifier"\n'


def _with_classifier(ws: Workspace) -> None:
    (ws.root / ".claude" / "agents" / "workflow-classifier.md").write_text(
        "---\nname: workflow-classifier\ndescription: classifies workflows\n---\nClassify.\n")
    ws.config(CLASSIFIER)


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


# -- defect 10: nothing left to classify -------------------------------------------------------


def test_implement_only_on_a_plan_runs_no_classifier(ws: Workspace) -> None:
    """`--scope implement-only --plan P` settles everything the classifier would answer:
    no classify step runs, and the record says the flags decided."""
    _with_classifier(ws)
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Implement the feature", "--scope", "implement-only", "--plan",
                 str(plan), check=True)
    assert ws.started("classify") == [], r.stdout
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    cls = cp["state_machine"]["classification"]
    assert cls["source"] == "flags" and cls["workflow_type"] == "implement-only"
    assert "nothing is left to classify" in cls["reasoning"]
    assert cp["baton"]["classify"]["agent"] is False
    assert "classify" not in cp["baton"]["steps"]
    assert "classified (flags): implement-only" in r.stdout
    assert ws.started("implement") == ["implement.phase-1"]


def test_research_scope_with_a_plan_still_asks_the_classifier_for_topics(ws: Workspace) -> None:
    """research-and-revise researches: its topics are still the classifier's to choose."""
    _with_classifier(ws)
    plan = ws.write_plan([[]])
    ws.baton("run", "Revise the feature plan", "--scope", "research-and-revise", "--plan",
             str(plan), check=True)
    assert ws.started("classify") == ["classify"]


# -- what a refused run leaves: nothing ---------------------------------------------------------


def tree(root: Path) -> dict[str, str]:
    """Every path under `root` but `.git/` with what it is: a file's SHA-256, a link's
    target, `dir` — two listings are equal only when nothing was created, changed or
    removed."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) == root and d == ".git")]
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def assert_untouched(ws: Workspace, before: dict[str, str]) -> None:
    assert tree(ws.root) == before
    r = ws.baton("status")
    assert r.returncode == 0 and r.stdout.strip() == "no workflows in this workspace", r.stdout


GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(ws: Workspace, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=ws.root, check=True,
                          capture_output=True, text=True).stdout


# -- defect 11: ids git refuses, dirty trees -----------------------------------------------------

TRICKY_REFS = [
    "baton/a/phase-1", "baton/a.lock/phase-1", "baton/a.lockx/phase-1", "baton/.a/phase-1",
    "baton/a./phase-1", "baton/a.", "baton/a..b/phase-1", "baton/a@{1}/phase-1",
    "baton/a@b/phase-1", "baton/a{b/phase-1", "baton/@/phase-1", "@", "a", "baton/a",
    "baton//a", "/baton/a", "baton/a/", "baton/a b/p", "baton/a\tb/p", "baton/a\x7fb/p",
    "baton/a\x01b/p", "baton/a~1/p", "baton/a^/p", "baton/a:b/p", "baton/a?/p", "baton/a*/p",
    "baton/a[1/p", "baton/a\\b/p", "baton/ü/phase-1", "baton/a.lock", "baton/lock/x",
    "baton/.lock/x", "baton/-a/phase-1", "baton/a/phase-1.lock", "baton/a}/p", "baton/a@/{b",
    "baton/a/.", "baton/a/..", "baton/a./.b", "baton/x.lock.lock/y", "baton/a@{/p",
]


@pytest.mark.parametrize("ref", TRICKY_REFS)
def test_ref_rules_agree_with_git_check_ref_format(ref: str) -> None:
    git_ok = subprocess.run(["git", "check-ref-format", ref], capture_output=True,
                            check=False).returncode == 0
    assert (ref_format_problem(ref) is None) == git_ok, (ref, ref_format_problem(ref))


@pytest.mark.parametrize("wid", ["a.lock", "feature.lock", "a.", "x..y", ".a", "a b"])
def test_an_id_git_refuses_is_a_usage_error_before_anything_runs(ws: Workspace,
                                                                  wid: str) -> None:
    before = tree(ws.root)
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation", "--id", wid)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"invalid workflow id {wid!r}" in r.stderr and "Traceback" not in r.stderr
    assert ws.started() == []
    assert_untouched(ws, before)


def test_a_good_dotted_id_still_runs(ws: Workspace) -> None:
    ws.baton("run", "Research caching", "--scope", "research-only", "--complexity", "1",
             "--id", "release-2.1_rc", check=True)
    assert ws.only_workflow() == "release-2.1_rc"


def test_uncommitted_changes_refuse_the_run_before_anything_is_written(ws: Workspace) -> None:
    """The errors log is tracked (a repository that commits its `.claude/data/logs`): a
    refused run must not append to it, nor leave a workflow behind."""
    plan = ws.write_plan([[], []])
    (ws.root / "app.py").write_text("x = 1\n")
    log = ws.root / ".claude" / "data" / "logs" / "errors.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    (ws.root / "app.py").write_text("x = 2  # mine, not committed\n")
    before = tree(ws.root)
    r = ws.baton("run", "Implement the plan", "--scope", "implement-only", "--plan", str(plan))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "uncommitted changes to tracked files" in r.stderr and "app.py" in r.stderr
    assert "then run it again" in r.stderr
    assert ws.started() == []
    assert_untouched(ws, before)
    assert git(ws, "status", "--porcelain").strip() == "M app.py"
    # research-only commits nothing: a dirty tree is no reason to refuse it
    ws.baton("run", "Research caching", "--scope", "research-only", "--complexity", "1",
             check=True)


# -- defect 13: usage errors and preflight write nothing -----------------------------------------


@pytest.mark.parametrize(("args", "said"), [
    (("--runner", "bogus"), "unknown runner 'bogus'; valid runners: auto, claude"),
    (("--set", "workflow.runner=bogus"), "unknown runner 'bogus'; valid runners: auto, claude"),
    (("--set", "workflow.agents.plan={agent = \"plan-architect\", runner = \"bogus\"}"),
     "[workflow.agents] plan runner: unknown runner 'bogus'"),
    (("--runner", "command"), "runner `command` needs [workflow] command"),
])
def test_an_unusable_runner_is_a_usage_error_with_nothing_written(
        ws: Workspace, args: tuple[str, str], said: str) -> None:
    before = tree(ws.root)
    r = ws.baton("run", "Add a health endpoint", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert said in r.stderr and "Traceback" not in r.stderr
    assert_untouched(ws, before)


def test_a_failed_preflight_leaves_no_workflow(ws: Workspace) -> None:
    before = tree(ws.root)
    r = ws.baton("run", "Add a health endpoint", "--runner", "claude", "--set",
                 "workflow.claude.executable=baton-test-no-such-claude")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "preflight: the claude CLI (`baton-test-no-such-claude`) is not on PATH" in r.stderr
    assert "nothing was started" in r.stderr
    assert_untouched(ws, before)


def test_real_claude_without_credentials_fails_preflight_and_writes_nothing(
        ws: Workspace, tmp_path: Path) -> None:
    """The real claude binary, found and answering `--version`, but no login at all."""
    claude = cli_path("claude")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(HOME=str(home), PATH=f"{Path(claude).parent}{os.pathsep}{env['PATH']}")
    before = tree(ws.root)
    r = subprocess.run([sys.executable, "-m", "baton_lsp", "run", "Add a health endpoint",
                        "--runner", "claude", "--workspace", str(ws.root)], env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the claude CLI has no credentials" in r.stderr
    assert_untouched(ws, before)


# -- defect 12: no fake agents on a real repository; skipped tests are not passed tests ---------


def bare_project(tmp_path: Path) -> Workspace:
    """A real project: some code, a git commit, and an empty `.claude/` — no Baton
    configuration at all."""
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / "app.py").write_text("def main() -> None:\n    print('hi')\n")
    ws = Workspace(Path(os.path.realpath(root)))
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    return ws


def no_agent_cli_env(tmp_path: Path) -> dict[str, str]:
    """PATH without claude, codex, gemini or opencode; a HOME with no login."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if p and not any(os.access(Path(p) / cli, os.X_OK)
                                            for cli in ("claude", "codex", "gemini",
                                                        "opencode")))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_",
                                "GOOGLE_", "OPENCODE_", "OPENROUTER_", "XDG_CONFIG_",
                                "XDG_DATA_"))}
    env.update(HOME=str(home), PATH=path)
    return env


def test_auto_with_no_agent_cli_stops_naming_the_choices(tmp_path: Path) -> None:
    ws = bare_project(tmp_path)
    before = tree(ws.root)
    r = subprocess.run([sys.executable, "-m", "baton_lsp", "run", "Add a health endpoint",
                        "--workspace", str(ws.root)], env=no_agent_cli_env(tmp_path),
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no agent CLI to run this workflow with" in r.stderr
    for choice in ("claude", "codex", "gemini", "opencode", "--runner", "script"):
        assert choice in r.stderr
    assert "workflow complete" not in r.stdout
    assert not (ws.root / "src").exists()
    assert_untouched(ws, before)
    assert git(ws, "status", "--porcelain").strip() == ""


def test_a_test_state_without_a_test_command_is_skipped_not_passed(ws: Workspace) -> None:
    ws.config("test-command = []")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1", check=True)
    assert "test: skipped — no test command configured" in r.stdout
    assert "test → document (tests skipped: no test command configured)" in r.stdout
    assert "tests passed" not in r.stdout
    (test_line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("  test ")]
    assert "skipped" in test_line and "passed" not in test_line
    assert "no tests ran: set [workflow] test-command" in r.stdout
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["baton"]["steps"]["test.1"]["status"] == "skipped"
    assert cp["tests_passing"] is None
    assert cp["baton"]["history"][-2]["reason"] == "tests skipped: no test command configured"


# -- defect 3, offline: the scripted runner's side of a pinned identity ------------------------


def test_resume_uses_the_settings_the_run_started_with(ws: Workspace) -> None:
    """The configuration changed between the run and its resume (runner and test command):
    the resume runs as the run did, and the dry run says which runner it will use."""
    ws.behave({"plan": {"exit": 3}})
    r = ws.baton("run", "Research caching and plan it", "--scope", "research-and-plan",
                 "--complexity", "1", "--set", "workflow.attempts=1")
    assert r.returncode == 1 and "runner: script (from the configuration)" in r.stdout
    wid = ws.only_workflow()
    ws.behave({})
    ws.config('runner = "claude"\nattempts = 3')
    preview = ws.baton("resume", wid, "--dry-run", check=True)
    assert "runner: script (from the checkpoint)" in preview.stdout
    r = ws.baton("resume", wid, check=True)
    assert "runner: script (from the checkpoint)" in r.stdout
    assert ws.started("plan") == ["plan", "plan"]
    identity = _checkpoint(ws, wid)["baton"]["identity"]
    assert identity["settings"]["attempts"] == 1 and identity["settings"]["runner"] == "script"


def test_resume_with_an_unknown_runner_is_a_usage_error(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 3}})
    ws.baton("run", "Research caching and plan it", "--scope", "research-and-plan",
             "--complexity", "1", "--set", "workflow.attempts=1")
    wid = ws.only_workflow()
    files = sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))
    r = ws.baton("resume", wid, "--runner", "bogus")
    assert r.returncode == 2 and "unknown runner 'bogus'" in r.stderr
    assert sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json")) == files
