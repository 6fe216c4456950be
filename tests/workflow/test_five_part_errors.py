"""The seeds' five-part error (issue 35, item 2), one formatter behind every surface: the
end-of-run summary, `baton status` (text and JSON) and `errors.jsonl`'s context — through the
real engine, a scripted agent that misses its artifact, and real files.

Seed 000 (000_74d69530aa70a5ea.txt, "5. Error Handling Architecture"):

    ✗ ERROR in state 'research': Research phase failed verification - 1 reports not created
    Expected behavior: …   Diagnostic commands: …   Context: …
    Recommended action:
      - Retry 1/2 available for state 'research'

and "6. Verification Architecture", `verify_file_created`'s failure:

    DIAGNOSTIC INFORMATION:
      - Expected path: /path/to/report.md
      - Parent directory: /path/to/reports/
      - Directory status: ✓ Exists (3 files)
      - Recent files:
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.runs import confine
from baton_lsp.runs.diagnosis import barrier_diagnostic, newest_entries

from .conftest import Workspace

SECTIONS = ("Expected behavior:", "Diagnostic commands:", "Context:", "Recommended action:")


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def _barrier_run(ws: Workspace) -> tuple[str, Path, str]:
    """Phase 3 of a three-phase plan writes no summary: the hard barrier fails with the two
    earlier summaries beside the missing one."""
    ws.behave({"implement.phase-3": {"write": "nothing"}})
    plan = ws.write_plan([[], [1], [2]])
    r = ws.baton("run", "Implement the feature", "--scope", "implement-only", "--plan",
                 str(plan))
    assert r.returncode == 1, r.stdout + r.stderr
    wid = ws.only_workflow()
    artifact = Path(_checkpoint(ws, wid)["baton"]["steps"]["implement.phase-3"]["artifact"])
    return wid, artifact, r.stdout


def test_a_barrier_failure_reads_like_verify_file_created_everywhere(ws: Workspace) -> None:
    wid, artifact, out = _barrier_run(ws)
    rel = artifact.relative_to(ws.root)
    parent = f"{rel.parent}/"
    # the CLI summary
    block = out.split("━━ Error")[1].split("━━ Phases")[0]
    assert "✗ ERROR in state 'implement': wave 3: HARD BARRIER FAILED" in block, block
    for section in SECTIONS:
        assert section in block
    assert "DIAGNOSTIC INFORMATION:" in block
    assert f"  - Expected path: {rel}" in block
    assert f"  - Parent directory: {parent}" in block
    assert "  - Directory status: ✓ Exists (2 entries)" in block
    recent = block.split("Recent files:\n")[1].splitlines()
    assert [ln.strip() for ln in recent[:2]] == ["phase_2_summary.md", "phase_1_summary.md"]
    assert f"ls -la {parent}" in block
    assert f"tail -n 50 .claude/data/checkpoints/{wid}/logs/implement.phase-3.attempt-1.log" \
        in block
    assert "  - Scope: implement-only" in block and "  - Current State: implement" in block
    assert "  - Retry 1/2 available for state 'implement'" in block
    assert f"  - Resume: baton resume {wid}" in block
    # baton status --json: the same words, and the parts
    info = ws.status(wid)
    diag = info["diagnosis"]
    assert diag["recommended_action"][0] == "Retry 1/2 available for state 'implement'"
    assert diag["barrier"]["recent_files"] == ["phase_2_summary.md", "phase_1_summary.md"]
    assert diag["barrier"]["parent_exists"] is True
    assert diag["context"]["Current State"] == "implement"
    assert diag["text"] in "\n".join(ln[2:] for ln in block.splitlines())
    # baton status ID (text)
    text = ws.baton("status", wid, check=True).stdout
    assert "  ✗ ERROR in state 'implement'" in text and "Recent files:" in text
    assert "Retry 1/2 available for state 'implement'" in text
    # errors.jsonl: the failing step's line carries the diagnosis in its context
    # (the phase's line, then the wave's that ends the workflow)
    lines = [e for e in ws.errors() if e["workflow_id"] == wid]
    assert [e["source"] for e in lines[-2:]] == ["implement.phase-3", "implement"]
    for line in lines[-2:]:
        logged = line["context"]["diagnosis"]
        assert logged["barrier"]["expected_path"] == str(rel)
        assert logged["barrier"]["recent_files"] == ["phase_2_summary.md",
                                                     "phase_1_summary.md"]
        assert logged["recommended_action"][0] == "Retry 1/2 available for state 'implement'"
        assert logged["expected_behavior"] and logged["diagnostic_commands"]
        assert logged["text"].startswith("✗ ERROR in state 'implement': ")
    # failing again in the same state: the seeds' counter reaches its limit
    again = ws.baton("resume", wid)
    assert again.returncode == 1
    assert "Max retries (2) reached for state 'implement' (2 failures)" in again.stdout
    assert ws.status(wid)["diagnosis"]["recommended_action"][0].startswith("Max retries (2)")


def test_a_failure_without_a_barrier_has_the_five_parts_too(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1")
    assert r.returncode == 1
    block = r.stdout.split("━━ Error")[1].split("━━ Phases")[0]
    assert "✗ ERROR in state 'plan': agent exited with code 3" in block
    assert "DIAGNOSTIC INFORMATION:" not in block
    for section in SECTIONS:
        assert section in block
    assert "  - The plan agent writes the plan at specs/" in block
    assert "Retry 1/2 available for state 'plan'" in block
    wid = ws.only_workflow()
    assert ws.errors()[-1]["context"]["diagnosis"]["context"]["Workflow ID"] == wid


# -- the directory listing: bounded, confined, never blocking --------------------------------


def test_newest_entries_are_bounded_and_newest_first(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    d = root / "many"
    d.mkdir()
    for i in range(12):
        (d / f"f{i:02d}.md").write_text("x")
        os.utime(d / f"f{i:02d}.md", (1_000_000 + i, 1_000_000 + i))
    seen, more, names = newest_entries(root, d)
    assert (seen, more) == (12, False)
    assert names == ("f11.md", "f10.md", "f09.md", "f08.md", "f07.md")
    seen, more, names = newest_entries(root, d, limit=2, scan=4)
    assert seen == 4 and more is True and len(names) == 2
    (d / "forged\n  - Recent files:.md").write_text("x")  # a name cannot start a line
    assert newest_entries(root, d)[2][0] == "forged\\n  - Recent files:.md"


def test_a_fifo_is_named_not_opened_and_a_link_out_is_refused(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    d = root / "reports"
    d.mkdir(parents=True)
    os.mkfifo(d / "pipe")
    outside = Path(os.path.realpath(tmp_path)) / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("x")
    (d / "out.md").symlink_to(outside / "secret.md")
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(newest_entries(root, d)), daemon=True)
    t.start()
    t.join(60)  # a blocking open of the FIFO would hang here
    assert result, "listing blocked"
    assert set(result[0][2]) == {"pipe", "out.md"}
    (root / "linked").symlink_to(outside)
    with pytest.raises(confine.UnsafePath):
        newest_entries(root, root / "linked")


def test_the_barrier_block_says_when_the_parent_is_missing_or_a_link_out(tmp_path: Path
                                                                         ) -> None:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    gone = barrier_diagnostic(root, {"error": "missing",
                                     "artifact_path": str(root / "specs/x/reports/001.md")})
    assert gone is not None and gone.parent == "specs/x/reports/" and not gone.parent_exists
    assert "Directory status: ✗ Does not exist" in "\n".join(
        ln for ln in _render(gone).splitlines())
    outside = Path(os.path.realpath(tmp_path)) / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("x")
    (root / "reports").symlink_to(outside)
    refused = barrier_diagnostic(root, {"error": "missing",
                                        "artifact_path": str(root / "reports/001.md")})
    assert refused is not None and refused.newest == () and refused.problem
    assert "outside the workspace" in refused.problem and "secret.md" not in _render(refused)
    assert barrier_diagnostic(root, {"artifact_path": str(root / "x.md")}) is None


def _render(barrier: Any) -> str:
    from baton_lsp.runs.diagnosis import Diagnosis

    return Diagnosis("research", "m", (), (), (), (), barrier).text()
