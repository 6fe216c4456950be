"""The check side reads only inside the workspace and never waits on a file: `baton check`
and `baton graph` as real processes on workspaces holding real FIFOs and real symbolic
links to files outside the workspace (a directory of `tmp_path` beside it, holding
recognisable secrets).

A FIFO is opened `O_NONBLOCK` and judged by `fstat`, so it is reported or skipped, never
waited on; a link leaving the workspace is one BTN400 naming the link, and nothing of its
target (a title, phase names, `tools:` values, an `error_type`) reaches any output format.
Hangs are caught by generous subprocess timeouts, not by timing assertions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.workflow.conftest import make_ws

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32",
                                reason="needs FIFOs and POSIX symlinks")

HANG_TIMEOUT = 120.0
"""Generous for a loaded machine: a check that waits on a FIFO never ends at all."""

OUTSIDE = "is a symbolic link to a file outside the workspace"

PLAN = ".claude/specs/001_feature/plans/001_plan.md"
AGENT = ".claude/agents/worker.md"
COMMAND = ".claude/commands/go.md"
SKILL = ".claude/skills/helper/SKILL.md"
ERRORS = ".claude/data/logs/errors.jsonl"
REGISTRY = "specs/state.json"
CHECKPOINT = ".claude/data/checkpoints/implement_demo_20250101_000000.json"

SECRETS = {
    PLAN: "# SECRETTITLE Plan\n\n## Phase 1: SECRETPHASE one\ndependencies: [7]\n\n"
          "- [ ] do it\n",
    AGENT: "---\nname: worker\ndescription: SECRETDESCRIPTION\ntools: Read, SECRETTOOL\n"
           "---\n\nWork.\n",
    COMMAND: "---\ndescription: SECRETCOMMAND\nallowed-tools: SECRETALLOWED\n---\n\nRun.\n",
    SKILL: "---\nname: helper\ndescription: SECRETSKILL\nallowed-tools: SECRETSKILLTOOL\n"
           "---\n\nHelp.\n",
    ERRORS: json.dumps({"timestamp": "2025-01-01T00:00:00Z", "error_type": "SECRETERRORTYPE",
                        "error_message": "SECRETMESSAGE", "status": "SECRETSTATUS"}) + "\n",
    REGISTRY: json.dumps({"tasks": [{"id": "SECRETTASK", "status": "SECRETREGISTRY"}]}),
    CHECKPOINT: json.dumps({"schema_version": "SECRETSCHEMA", "workflow_id": "demo"}),
}


def baton(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`baton ARGS` as a real process; a hang fails the test (TimeoutExpired)."""
    return subprocess.run([sys.executable, "-m", "baton_lsp", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=HANG_TIMEOUT)


def check_json(root: Path, *paths: str, cache: bool = False) -> list[dict[str, Any]]:
    r = baton(root, "check", "--no-shellcheck", "--format", "json",
              *(() if cache else ("--no-cache",)), *(paths or (".",)))
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    found: list[dict[str, Any]] = json.loads(r.stdout)
    return found


def of(findings: list[dict[str, Any]], rel: str) -> list[dict[str, Any]]:
    return [f for f in findings if f["filename"].replace(os.sep, "/").endswith(rel)]


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, outside): every kind of file the checker reads is a symlink from the
    workspace to a secret-holding file in `outside`."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / ".claude").mkdir(parents=True)
    for rel, text in SECRETS.items():
        target = outside / rel.replace("/", "_")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        link = root / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(target, link.parent) if rel == AGENT else target)
    return root, outside


def assert_no_secret(text: str) -> None:
    assert "SECRET" not in text, text


def test_links_out_of_the_workspace_are_reported_not_read(planted: tuple[Path, Path]) -> None:
    root, _ = planted
    findings = check_json(root)
    for rel in SECRETS:
        mine = of(findings, rel)
        assert [f["code"] for f in mine] == ["BTN400"], (rel, mine)
        assert mine[0]["message"].startswith(f"{rel} {OUTSIDE}"), mine[0]
        assert "it was not read" in mine[0]["message"]
    assert len(findings) == len(SECRETS), findings
    assert_no_secret(json.dumps(findings))
    for fmt in ("text", "sarif", "github"):
        r = baton(root, "check", "--no-shellcheck", "--no-cache", "--format", fmt, ".")
        assert r.returncode == 1, r.stderr
        assert_no_secret(r.stdout + r.stderr)
        assert OUTSIDE in r.stdout
    sarif = json.loads(baton(root, "check", "--no-cache", "--format", "sarif", ".").stdout)
    results = sarif["runs"][0]["results"]
    assert len(results) == len(SECRETS) and {r["ruleId"] for r in results} == {"BTN400"}
    for rel in SECRETS:  # named on the command line: the same one finding
        [named] = check_json(root, rel)
        assert named["code"] == "BTN400" and OUTSIDE in named["message"], named


def test_a_link_leaving_through_a_directory_is_reported(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (outside / "plans").mkdir(parents=True)
    (outside / "plans" / "001_plan.md").write_text(SECRETS[PLAN])
    (root / ".claude" / "specs" / "001_x").mkdir(parents=True)
    (root / ".claude" / "specs" / "001_x" / "plans").symlink_to(outside / "plans")
    named = check_json(root, ".claude/specs/001_x/plans/001_plan.md")
    assert [f["code"] for f in named] == ["BTN400"], named
    assert "reached through .claude/specs/001_x/plans, a symbolic link" in named[0]["message"]
    assert_no_secret(json.dumps(named))


def test_links_inside_the_workspace_keep_working(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    real = root / ".claude" / "shared" / "plan.md"
    real.parent.mkdir(parents=True)
    real.write_text(SECRETS[PLAN].replace("SECRET", "INSIDE"))
    link = root / PLAN
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(real, link.parent))
    absolute = root / ".claude" / "specs" / "002_abs" / "plans" / "002_plan.md"
    absolute.parent.mkdir(parents=True)
    absolute.symlink_to(real)
    findings = check_json(root)
    for rel in (PLAN, ".claude/specs/002_abs/plans/002_plan.md"):
        mine = of(findings, rel)
        assert [f["code"] for f in mine] == ["BTN101"], mine
        assert "INSIDETITLE" not in mine[0]["message"] and "INSIDEPHASE" in mine[0]["message"]
    graph = baton(root, "graph", PLAN)
    assert graph.returncode == 0 and "INSIDEPHASE" in graph.stdout, graph.stderr


def linked_plan_checked(root: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """A plan reached through a link to a file inside the workspace, checked once with the
    cache (its BTN101 stored): the real file, the link, the findings."""
    real = root / ".claude" / "shared" / "plan.md"
    real.parent.mkdir(parents=True)
    real.write_text(SECRETS[PLAN])
    link = root / PLAN
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    first = check_json(root, cache=True)
    assert [f["code"] for f in of(first, PLAN)] == ["BTN101"]
    return real, link, first


def test_a_link_retargeted_out_of_the_workspace_is_not_replayed(tmp_path: Path) -> None:
    """The result cache keys a file by its content: a link retargeted at a copy of the
    same bytes outside must not get the findings stored for the inside file (neither from
    the whole-check replay nor from the per-file cache)."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    real, link, first = linked_plan_checked(root)
    assert check_json(root, cache=True) == first  # replayed whole
    outside.mkdir()
    shutil.copy2(real, outside / "plan.md")
    link.unlink()
    link.symlink_to(outside / "plan.md")
    for _ in range(2):  # after the change, and replayed after that
        again = check_json(root, cache=True)
        assert [f["code"] for f in of(again, PLAN)] == ["BTN400"], again
        assert_no_secret(json.dumps(of(again, PLAN)))
    named = check_json(root, PLAN, cache=True)
    assert [f["code"] for f in named] == ["BTN400"], named


def test_graph_does_not_follow_a_link_out_of_the_workspace(planted: tuple[Path, Path]) -> None:
    root, _ = planted
    r = baton(root, "graph", PLAN)
    assert r.returncode == 2
    assert f"{PLAN} {OUTSIDE}" in r.stderr and "it was not read" in r.stderr
    assert_no_secret(r.stdout + r.stderr)
    for fmt in ("json", "mermaid"):
        r = baton(root, "graph", PLAN, "--format", fmt)
        assert r.returncode == 2 and r.stdout == "", r.stdout
        assert_no_secret(r.stderr)


# -- FIFOs ---------------------------------------------------------------------------------


def test_fifos_where_plans_are_sniffed_do_not_hang_check_or_graph(tmp_path: Path) -> None:
    """`PLAN.md`, `docs/**/plans/` and `.claude/TODO.md` are read to tell a plan from a
    note: that read opened a FIFO and waited for a writer for ever."""
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    (root / "docs" / "plans").mkdir(parents=True)
    for rel in ("PLAN.md", "docs/plans/next.md", ".claude/TODO.md"):
        os.mkfifo(root / rel)
    (root / ".claude" / "plans").mkdir()
    (root / ".claude" / "plans" / "real.md").write_text(SECRETS[PLAN])
    findings = check_json(root)
    assert [f["code"] for f in findings] == ["BTN101"], findings
    r = baton(root, "graph", "PLAN.md")
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr


def test_a_fifo_in_a_workflow_history_does_not_hang_check(tmp_path: Path) -> None:
    """A real run's history with `000099.json` a FIFO: the run's findings are still
    reported, and the FIFO named on the command line is one BTN400 (not "0 files")."""
    ws = make_ws(tmp_path)
    ws.write_plan([[], [1]])
    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    wid = ws.only_workflow()
    history = ws.root / ".claude" / "data" / "checkpoints" / wid
    os.mkfifo(history / "000099.json")
    os.mkfifo(ws.root / ".claude" / "data" / "checkpoints" / "implement_x_20250101_0.json")
    for cache in (False, True, True):
        findings = check_json(ws.root, cache=cache)
        assert "BTN501" in {f["code"] for f in findings}, findings
    named = check_json(ws.root, str(history / "000099.json"))
    assert [f["code"] for f in named] == ["BTN400"], named
    assert "not a regular file" in named[0]["message"]


def test_a_linked_out_error_log_is_not_quoted_in_run_findings(tmp_path: Path) -> None:
    """The run-state rules read `errors.jsonl` too (BTN50x's related lines name each
    record's `error_type`): a log linked out of the workspace is read by neither."""
    ws = make_ws(tmp_path)
    ws.write_plan([[], [1]])
    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    log = ws.root / ERRORS
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records
    for record in records:
        record["error_type"], record["error_message"] = "SECRETTYPE", "SECRETMESSAGE"
    outside = tmp_path / "outside" / "errors.jsonl"
    outside.parent.mkdir()
    outside.write_text("".join(json.dumps(r) + "\n" for r in records))
    log.unlink()
    log.symlink_to(outside)
    findings = check_json(ws.root)
    assert "BTN501" in {f["code"] for f in findings}, findings
    [mine] = of(findings, ERRORS)
    assert mine["code"] == "BTN400" and OUTSIDE in mine["message"], mine
    assert_no_secret(json.dumps(findings))


def test_a_link_retargeted_through_an_outside_alias_is_not_replayed(tmp_path: Path) -> None:
    """Retargeted at the same inside file spelled through a directory outside the workspace
    (a link back in): every `stat` through the link is what it was, but the link now
    leaves the workspace, so the stored check must not be replayed."""
    root = tmp_path / "ws"
    real, link, _ = linked_plan_checked(root)
    alias = tmp_path / "alias"
    alias.symlink_to(real.parent)
    replaced = link.with_name("new")
    replaced.symlink_to(alias / "plan.md")
    os.replace(replaced, link)
    again = check_json(root, cache=True)
    assert [f["code"] for f in of(again, PLAN)] == ["BTN400"], again


def test_fifos_planted_in_a_cache_directory_inside_the_tree_do_not_hang(
        tmp_path: Path) -> None:
    """CI may keep the result cache in the checkout: every cache file replaced by a FIFO
    is a damaged cache (checked afresh, same output), not a wait."""
    root = tmp_path / "ws"
    plan = root / PLAN
    plan.parent.mkdir(parents=True)
    plan.write_text(SECRETS[PLAN])
    cache = root / ".cache" / "baton"
    args = ("check", "--no-shellcheck", "--format", "json", "--cache-dir", str(cache), ".")
    first = baton(root, *args)
    files = [p for p in cache.rglob("*.json")]
    assert files, list(cache.rglob("*"))
    for path in files:
        path.unlink()
        os.mkfifo(path)
    again = baton(root, *args)
    assert (again.returncode, json.loads(again.stdout)) == \
        (first.returncode, json.loads(first.stdout)), again.stderr
