"""The `baton` CLI end to end: formats, exit codes, rule docs, graph, schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp import __version__
from baton_lsp.cli.main import main
from baton_lsp.rules.base import all_rules
from tests.conftest import EXAMPLE, REPO

CYCLE_PLAN = ("# C\n\n## Implementation Phases\n\n### Phase 1: A\n**Dependencies**: [3]\n\n"
              "### Phase 2: B\n**Dependencies**: [1]\n\n### Phase 3: C\n**Dependencies**: [2]\n")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_example_text_output_and_exit_code(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run(capsys, "check", "examples/workspace", "--no-shellcheck")
    assert code == 1
    lines = out.strip().split("\n")
    assert lines[-1].startswith("Found ") and "error" in lines[-1]
    assert ("examples/workspace/.claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"
            ":30:19: BTN101 Phase 3 (Notifications) depends on phase 7") in out
    # The clean plan of the example has no findings at all.
    assert "001-auth-login-plan.md" not in out


def test_select_and_ignore(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run(capsys, "check", "examples/workspace", "--select", "BTN11",
                       "--ignore", "BTN112", "--no-shellcheck")
    codes = {line.split(": ")[1].split()[0] for line in out.strip().split("\n")[:-1]}
    assert codes and all(c.startswith("BTN11") and c != "BTN112" for c in codes)
    assert code == 0  # no error-severity rule selected


def test_json_format(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    _, out, _ = run(capsys, "check", "examples/workspace", "--format", "json",
                    "--select", "BTN101,BTN116")
    data = json.loads(out)
    assert {d["code"] for d in data} == {"BTN101", "BTN116"}
    dep = next(d for d in data if d["code"] == "BTN101")
    assert dep["location"] == {"line": 30, "column": 19}
    assert dep["fix"]["edits"][0]["content"] == ""
    assert dep["severity"] == "error" and dep["url"].endswith("/BTN101")


def test_sarif_is_2_1_0_shaped(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    _, out, _ = run(capsys, "check", "examples/workspace", "--format", "sarif",
                    "--no-shellcheck")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0" and "sarif" in sarif["$schema"]
    run0 = sarif["runs"][0]
    rules = run0["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    assert all(r["defaultConfiguration"]["level"] in {"error", "warning", "note"}
               for r in rules)
    assert run0["results"]
    for res in run0["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in {"error", "warning", "note"}
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"],
                                                             region["startColumn"])
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("examples/workspace/.claude/")
    fixes = [r for r in run0["results"] if "fixes" in r]
    assert fixes and fixes[0]["fixes"][0]["artifactChanges"][0]["replacements"]


def test_github_annotations_escape(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    _, out, _ = run(capsys, "check", "examples/workspace", "--format", "github",
                    "--select", "BTN101")
    line = out.strip().split("\n")[0]
    assert line.startswith("::error file=examples/workspace/.claude/specs/002_payment_retry/")
    assert ",line=30,col=19," in line and "title=BTN101 unknown-dependency::" in line


def test_clean_workspace_exits_zero(capsys, make_workspace) -> None:
    root = make_workspace({".claude/agents/a.md": "---\nname: a\ndescription: does a\n---\n# A\n"})
    code, out, _ = run(capsys, "check", str(root))
    assert code == 0 and out.startswith("All checks passed (1 file checked)")


def test_a_plugin_repository_is_checked_like_a_claude_tree(capsys, tmp_path: Path) -> None:
    """A marketplace repository: no `.claude/`, each plugin's components at its own root."""
    plugin = tmp_path / "plugins" / "review-kit"
    files = {
        ".claude-plugin/marketplace.json":
            '{"name": "m", "owner": {"name": "Team"}, "plugins": []}',
        "plugins/review-kit/.claude-plugin/plugin.json": '{"name": "review-kit"}',
        "plugins/review-kit/agents/reviewer.md":
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Reed\n---\n# R\n",
        "plugins/review-kit/skills/tdd/SKILL.md":
            "---\nname: tdd\ndescription: Test first\n---\n# TDD\n",
        "plugins/review-kit/commands/review.md":
            "---\ndescription: Review\ndependent-agents: reviewer, reviewr\n---\n# Review\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    code, out, _ = run(capsys, "check", str(tmp_path), "--no-shellcheck")
    assert f"{plugin / 'agents' / 'reviewer.md'}:4:" in out and "unknown tool `Reed`" in out
    # the plugin's agents are where its commands' agent references resolve
    assert "`reviewr` does not exist: expected agents/reviewr.md; did you mean `reviewer`" in out
    assert "`reviewer` does not" not in out
    # the two manifests are checked too (and are clean)
    assert code == 1 and "in 2 of 5 files" in out


def test_missing_path_and_bad_config_exit_2(capsys, make_workspace) -> None:
    code, _, err = run(capsys, "check", "/nonexistent/path/xyz")
    assert code == 2 and "no such file or directory" in err
    root = make_workspace({".claude/baton.toml": "severity = { BTN101 = \"fatal\" }\n",
                           ".claude/agents/a.md": "x"})
    code, _, err = run(capsys, "check", str(root))
    assert code == 2 and "baton.toml" in err and "severity.BTN101" in err
    (root / ".claude/baton.toml").write_text("nonsense = [\n")
    code, _, err = run(capsys, "check", str(root))
    assert code == 2 and "invalid TOML" in err


def test_config_in_pyproject_applies(capsys, make_workspace) -> None:
    root = make_workspace({
        "pyproject.toml": "[tool.baton]\nignore = [\"BTN101\"]\n",
        ".claude/specs/001_x/plans/p.md": "# P\n### Phase 1: A\ndependencies: [4]\n"})
    code, out, _ = run(capsys, "check", str(root), "--select", "BTN101")
    assert code == 0 and "BTN101" not in out


def test_single_file_outside_layout_is_guessed(capsys, tmp_path: Path) -> None:
    plan = tmp_path / "my-plan.md"
    plan.write_text(CYCLE_PLAN)
    code, out, _ = run(capsys, "check", str(plan), "--select", "BTN103")
    assert code == 1 and "dependency cycle: 1 → 3 → 2 → 1" in out


def test_rule_docs(capsys) -> None:
    code, out, _ = run(capsys, "rule", "BTN103")
    assert code == 0 and out.startswith("BTN103 dependency-cycle\n")
    assert "Default severity: error" in out and "1 → 3 → 2 → 1" in out
    code, out, _ = run(capsys, "rule", "unknown-dependency")
    assert code == 0 and "BTN101" in out
    code, out, _ = run(capsys, "rule", "--list")
    assert len(out.strip().split("\n")) == len(all_rules())
    code, out, _ = run(capsys, "rule")
    assert out.count("Default severity:") == len(all_rules())
    code, _, err = run(capsys, "rule", "BTN999")
    assert code == 2 and "unknown rule" in err


def test_every_rule_is_documented_with_unique_code_and_name() -> None:
    rules = all_rules()
    assert len({r.code for r in rules}) == len(rules) == len({r.name for r in rules})
    for r in rules:
        assert r.code[:3] == "BTN" and r.code[3:].isdigit() and len(r.code) == 6
        assert r.name == r.name.lower() and " " not in r.name
        assert len(r.doc.split("\n")) >= 3, f"{r.code} needs a why/how docstring"


def test_graph_text_mermaid_json(capsys, tmp_path: Path) -> None:
    diamond = tmp_path / "d.md"
    diamond.write_text("# D\n### Phase 1: A\ndependencies: []\n### Phase 2: B\n"
                       "dependencies: [1]\n### Phase 3: C\ndependencies: [1]\n"
                       "### Phase 4: D\ndependencies: [2, 3]\n")
    code, out, _ = run(capsys, "graph", str(diamond))
    assert code == 0
    assert "4 phases · 3 waves · critical path 3 phases" in out
    assert "Wave 2 [parallel]: Phase 2 (B), Phase 3 (C)" in out
    code, out, _ = run(capsys, "graph", str(diamond), "--format", "mermaid")
    assert out.startswith("flowchart TD") and "P2 --> P4" in out
    code, out, _ = run(capsys, "graph", str(diamond), "--format", "json")
    assert json.loads(out)["waves"] == [["1"], ["2", "3"], ["4"]]
    cyc = tmp_path / "c.md"
    cyc.write_text(CYCLE_PLAN)
    code, out, _ = run(capsys, "graph", str(cyc))
    assert code == 1 and "Cycle: 1 → 3 → 2 → 1" in out


def test_graph_of_binary_file_is_an_error_not_a_traceback(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\x00\x01\x02")
    code, _, err = run(capsys, "graph", str(bad))
    assert code == 2 and "NUL bytes" in err


def test_committed_schemas_are_fresh(capsys) -> None:
    code, out, _ = run(capsys, "schema", "--check", "--out", str(REPO / "schemas"))
    assert code == 0, f"stale schemas, run `baton schema --write`: {out}"


def test_schema_write_and_print(capsys, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "schema", "--write", "--out", str(tmp_path))
    assert code == 0
    config = json.loads((tmp_path / "baton-config.schema.json").read_text())
    assert "required-metadata" in config["properties"]
    (tmp_path / "baton-config.schema.json").write_text("{}")
    code, out, _ = run(capsys, "schema", "--check", "--out", str(tmp_path))
    assert code == 1 and "baton-config.schema.json" in out


def test_real_console_script_runs_as_subprocess() -> None:
    exe = Path(sys.executable).parent / "baton"
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == f"baton {__version__}"
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "check", str(EXAMPLE),
                           "--select", "BTN122"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 and "2026-11-31" in proc.stdout and proc.stderr == ""


def test_graph_of_a_fifo_is_refused_not_a_hang(capsys, tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "plan.md"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "graph", str(fifo))
    assert code == 2 and "not a regular file" in err


# A rule that fails on every plan, registered in a fresh interpreter: it stands for any bug
# a hostile input may still reach. What is under test is how `baton check` reports it.
_FAILING_RULE = """
import sys
from baton_lsp.cli.main import main
from baton_lsp.model.base import Kind, Severity
from baton_lsp.rules.base import rule

@rule("BTN999", "always-fails", Severity.WARNING, (Kind.PLAN,))
def always_fails(doc, ctx):
    '''Fails, to show how a failing rule is reported.'''
    def down(n):
        return down(n + 1)
    down(0)
    yield from ()

sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_failing_rule_is_one_line_on_stderr_never_a_traceback(tmp_path: Path,
                                                                jobs: str) -> None:
    """A rule that raised printed its whole traceback (a RecursionError: 2,981 lines) from
    `baton check`; the finding (BTN000) already says what failed. `-v` still shows it."""
    ws = tmp_path / "ws"
    plans = ws / ".claude" / "specs" / "001_x" / "plans"
    plans.mkdir(parents=True)
    for n in range(3):
        (plans / f"00{n}_plan.md").write_text("# Plan\n\n### Phase 1: A\n", encoding="utf-8")
    argv = [sys.executable, "-c", _FAILING_RULE, "check", "--jobs", jobs, "--format", "json",
            str(ws)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr and "File \"" not in proc.stderr, proc.stderr[:2000]
    lines = [line for line in proc.stderr.splitlines() if "BTN999" in line]
    assert len(lines) == 3 and all("RecursionError" in line for line in lines), proc.stderr
    assert sum(f["code"] == "BTN000" for f in json.loads(proc.stdout)) == 3
    verbose = subprocess.run([*argv[:3], "-v", *argv[3:]], capture_output=True, text=True,
                             timeout=120)
    assert "Traceback" in verbose.stderr


def test_a_check_loads_no_workflow_command_nor_markdown_it(make_workspace) -> None:
    """`baton check` parses its own options only: the workflow commands' module and
    markdown-it-py are start-up a check never uses (a small tree's check is mostly start-up).
    Its help and usage errors are unchanged."""
    root = make_workspace({".claude/agents/a.md": "---\nname: a\ndescription: A.\n---\n\n"
                                                    "# A\n\n<div>\nx\n</div>\n"})
    probe = ("import sys\nfrom baton_lsp.cli.main import main\n"
             "code = main(['check', '--no-cache', '--no-shellcheck', sys.argv[1]])\n"
             "print(code, sorted(m for m in sys.modules if m == 'baton_lsp.cli.workflow' "
             "or m.split('.')[0] == 'markdown_it'))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.stdout.strip().splitlines()[-1] in ("0 []", "1 []"), out.stdout + out.stderr
    bad = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "yaml"],
                         capture_output=True, text=True, check=False, timeout=300)
    assert bad.returncode == 2 and "baton check: error: argument --format" in bad.stderr
    usage = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--help"],
                           capture_output=True, text=True, check=False, timeout=300)
    assert usage.returncode == 0 and "--no-shellcheck" in usage.stdout


GC_PROBE = """import gc, sys
import baton_lsp.rules.checker as checker
from baton_lsp.cli.main import main
seen = []
gc.callbacks.append(lambda phase, info: seen.append(info["generation"])
                    if phase == "start" and checking else None)
checking = False
real = checker.check_paths
def check_paths(*args, **kwargs):
    global checking
    checking = True
    return real(*args, **kwargs)
checker.check_paths = check_paths
code = main(['check', '--no-cache', '--no-shellcheck', sys.argv[1]])
checking = False
print(code, seen, gc.isenabled(), gc.get_freeze_count() > 0)
"""


def test_a_one_shot_check_never_runs_the_cyclic_collector(corpus: Path) -> None:
    """From the check's start to its output no collection runs: the one that followed the
    checker's pause walked every object the check had made and freed none (parse records are
    acyclic). The collector is on again afterwards, those objects frozen out of its way."""
    out = subprocess.run([sys.executable, "-c", GC_PROBE, str(corpus)], capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.stdout.strip().splitlines()[-1] in ("0 [] True True", "1 [] True True"), \
        out.stdout + out.stderr


def test_a_check_that_logs_nothing_never_imports_logging(corpus: Path, tmp_path: Path) -> None:
    """`logging` (with `traceback`, `string`, `threading` and `weakref`) was set up for every
    check; the corpus's check logs nothing. The first record still gets the CLI's handler:
    a failing rule is one `baton: ERROR:` line, serially and from forked workers."""
    probe = ("import sys\nfrom baton_lsp.cli.main import main\n"
             "code = main(['check', '--no-cache', '--no-shellcheck', '--format', 'json', "
             "sys.argv[1]])\n"
             "print(code, 'logging' in sys.modules, file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(corpus)], capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.stderr.strip().splitlines()[-1] == "1 False", out.stderr
    plans = tmp_path / ".claude" / "specs" / "001_x" / "plans"
    plans.mkdir(parents=True)
    for n in range(2):
        (plans / f"00{n}_plan.md").write_text("# Plan\n\n### Phase 1: A\n", encoding="utf-8")
    for jobs in ("1", "2"):
        proc = subprocess.run([sys.executable, "-c", _FAILING_RULE, "check", "--jobs", jobs,
                               "--no-cache", "--format", "json", str(tmp_path)],
                              capture_output=True, text=True, timeout=120, check=False)
        lines = proc.stderr.splitlines()
        assert len(lines) == 2 and all(line.startswith("baton: ERROR: rule BTN999 failed on ")
                                       and "RecursionError" in line for line in lines), lines


def test_a_check_imports_no_shutil(corpus: Path) -> None:
    """argparse's formatter, built for every option added, imported `shutil` (with `bz2`,
    `lzma` and `zlib`) for the terminal's width, and so did the ShellCheck lookup at import:
    a check with ShellCheck off needs neither."""
    probe = ("import sys\nfrom baton_lsp.cli.main import main\n"
             "code = main(['check', '--no-cache', '--no-shellcheck', '--format', 'json', "
             "sys.argv[1]])\n"
             "print(code, sorted({'shutil', 'bz2', 'lzma'} & set(sys.modules)), "
             "file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(corpus)], capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.stderr.strip().splitlines()[-1] == "1 []", out.stderr


@pytest.mark.parametrize("columns", [None, "40", "200", "0", "wide"])
def test_the_light_help_formatter_wraps_as_argparse(monkeypatch: pytest.MonkeyPatch,
                                                    columns: str | None) -> None:
    """`LightHelpFormatter` sizes help and usage as argparse's own (`COLUMNS`, else the
    terminal, else 80), so `baton check`'s usage errors read as before."""
    import argparse

    from baton_lsp.cli.main import LightHelpFormatter, add_check_arguments

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    texts = []
    for formatter in (argparse.HelpFormatter, LightHelpFormatter):
        parser = argparse.ArgumentParser(prog="baton check", formatter_class=formatter)
        add_check_arguments(parser)
        texts.append(parser.format_help())
    assert texts[0] == texts[1] and "--no-shellcheck" in texts[1]
