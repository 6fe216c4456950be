"""The conventions a ruff user relies on (issue 38, item 7): unknown selectors are errors,
`graph` names a dependency on a missing phase, `cancel` of an unknown workflow and a check
that finds no workspace fail with a message, `--jobs` is documented."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.cli.main import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, main
from tests.conftest import EXAMPLE, REPO

AGENT = "---\nname: a\ndescription: does a\n---\n# A\n"
MISSING_DEP_PLAN = ("# M\n\n### Phase 1: A\ndependencies: []\n\n### Phase 2: B\n"
                    "dependencies: [1, 7]\n")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_an_unknown_selector_on_the_command_line_is_an_error(capsys, flag: str) -> None:
    """ruff: `error: … Unknown rule selector`, exit 2. Before, `--select BTN999` selected
    nothing and said "All checks passed"."""
    code, out, err = run(capsys, "check", "--no-cache", str(EXAMPLE), flag, "BTN1,BTN999")
    assert code == EXIT_ERROR, out
    assert "BTN999" in err and flag in err and "unknown rule selector" in err
    assert "BTN1," not in err and out == ""
    # a real prefix and a full code stay accepted
    code, out, _ = run(capsys, "check", "--no-cache", str(EXAMPLE), flag, "btn10,BTN101")
    assert code in (EXIT_OK, EXIT_FINDINGS) and " files" in out.splitlines()[-1]


@pytest.mark.parametrize("where", ["pyproject.toml", ".claude/baton.toml"])
@pytest.mark.parametrize("setting", ["select", "ignore"])
def test_an_unknown_selector_in_the_configuration_is_an_error(
        capsys, make_workspace, where: str, setting: str) -> None:
    body = f'{setting} = ["BTN1", "BTN1O1"]\n'
    text = f"[tool.baton]\n{body}" if where == "pyproject.toml" else body
    root = make_workspace({".claude/agents/a.md": AGENT, where: text})
    code, out, err = run(capsys, "check", "--no-cache", str(root))
    assert code == EXIT_ERROR, out
    assert "BTN1O1" in err and f"`{setting}`" in err and where.split("/")[-1] in err
    assert "Traceback" not in err
    # the same setting with a real code checks as before
    (root / where).write_text(text.replace("BTN1O1", "BTN101"), encoding="utf-8")
    code, out, err = run(capsys, "check", "--no-cache", str(root))
    assert code == EXIT_OK and out.startswith("All checks passed"), err


def test_graph_names_a_dependency_on_a_missing_phase(capsys, tmp_path: Path) -> None:
    plan = tmp_path / "plan.md"
    plan.write_text(MISSING_DEP_PLAN, encoding="utf-8")
    code, out, _ = run(capsys, "graph", str(plan))
    assert code == EXIT_OK  # drawn without it, as the engine runs it; `check` fails on it
    assert "Phase 2 (B) depends on phase 7, which does not exist (BTN101)" in out
    code, out, _ = run(capsys, "graph", str(plan), "--format", "json")
    assert code == EXIT_OK and json.loads(out)["missing"] == {"2": ["7"]}
    code, out, err = run(capsys, "graph", str(plan), "--format", "mermaid")
    assert out.startswith("flowchart TD") and "phase 7" not in out
    assert "depends on phase 7, which does not exist" in err
    # a sound plan says nothing of the kind
    plan.write_text(MISSING_DEP_PLAN.replace("[1, 7]", "[1]"), encoding="utf-8")
    code, out, _ = run(capsys, "graph", str(plan))
    assert code == EXIT_OK and "does not exist" not in out


def test_cancel_of_an_unknown_workflow_fails_with_a_message(make_workspace) -> None:
    """A real process: the exit status is what a script sees."""
    root = make_workspace({".claude/agents/a.md": AGENT})
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "cancel", "nosuch",
                           "--workspace", str(root)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == EXIT_ERROR
    assert "no workflow 'nosuch'" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_check_where_no_workspace_is_found_is_an_error(capsys, tmp_path: Path,
                                                       fmt: str) -> None:
    """No `.claude/`, `specs/`, `.opencode/` or plugin at or below the paths (the discovery's
    markers): said on stderr, exit 2, for every format."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.md").write_text("# Notes\n", encoding="utf-8")
    code, out, err = run(capsys, "check", "--format", fmt, str(tmp_path))
    assert code == EXIT_ERROR and "no workspace found" in err and out == ""


def test_a_plain_workspace_with_nothing_to_report_exits_zero(capsys, make_workspace) -> None:
    root = make_workspace({"CLAUDE.md": "# Project\n"})  # a bare `.claude/`, nothing in it
    code, out, err = run(capsys, "check", str(root))
    assert code == EXIT_OK and out.startswith("All checks passed"), err


def test_jobs_is_documented_and_checked(capsys) -> None:
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert "--jobs N" in proc.stdout and "processes that check files" in proc.stdout
    cli_doc = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "-j, --jobs N" in cli_doc
    with pytest.raises(SystemExit) as exited:
        main(["check", "--jobs", "0", str(EXAMPLE)])
    assert exited.value.code == EXIT_ERROR
    assert "at least 1 process" in capsys.readouterr().err
