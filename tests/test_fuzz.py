"""Fuzzing the checker: generated hostile documents and whole trees through `baton check`.

Bounded to a few seconds in the suite; `benchmarks/fuzz.py` runs the same strategies over
100,000+ inputs. The invariants: `baton check` exits 0 or 1, prints no traceback and no
"internal error", no rule reports BTN000 (a rule that raised) on any input, and its text
format passes no control character or escape sequence of the input to the terminal.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from baton_lsp.cli.main import main
from baton_lsp.model import BatonConfig, Kind
from baton_lsp.rules.engine import check_text
from baton_lsp.terminal import terminal_safe
from tests.fuzzing import (
    KINDS,
    REL_PATHS,
    SECRET,
    document,
    hostile_commands,
    hostile_tree,
    plant,
    tree,
)
from tests.test_bad_input import WATCHDOG_SECONDS, within

KIND_OF = {"plan": Kind.PLAN, "agent": Kind.AGENT, "command": Kind.COMMAND,
           "skill": Kind.SKILL, "state": Kind.STATE, "errors": Kind.ERRORS_LOG,
           "checkpoint": Kind.CHECKPOINT, "registry": Kind.REGISTRY}
CONFIGS = [BatonConfig(shellcheck="off"), BatonConfig(shellcheck="all")]


class Failures(logging.Handler):
    """Records every ERROR logged by the core while a check runs (a rule or parser that
    raised logs one, besides its BTN000)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(KINDS).flatmap(lambda k: st.tuples(st.just(k), document(k, True))),
       st.sampled_from(CONFIGS))
@example(("agent", "---\nname: x\n---\n# Title \ud800\n"), CONFIGS[0])  # libyaml: BTN000
@example(("command", "---\ndescription: d\n---\n```bash\nsource .claude/lib/a.sh\n"
          "echo '\udcff'\n```\n"), CONFIGS[1])  # ShellCheck's stdin: BTN000
@example(("agent", "Read and follow .claude/agents/" + "a-b" * 1500 + ".md\n"),
         CONFIGS[0])  # BTN313: OSError "File name too long" (found by benchmarks/fuzz.py)
@example(("plan", "# P\n\n### Phase " + "1" * 5000 + ": x\n"), CONFIGS[0])  # int(): 4,300
@example(("command", "---\ndescription: a: b\nallowed-tools: [" + "1" * 5000 + "]\n---\n"),
         CONFIGS[0])  # digits at most, ValueError in the parser (both found by fuzz.py)
@example(("plan", "# P\n\n## Metadata\n- **Estimated Phases**: " + "1" * 5000
          + "\n- **Structure Level**: " + "2" * 5000 + "\n\n### Phase 1: x\n"), CONFIGS[0])
@example(("agent", "---\nname: a\n---\n### STEP 1." + "1" * 5000 + ": x\n"), CONFIGS[0])
def test_no_document_makes_a_rule_fail(item: tuple[str, str], config: BatonConfig) -> None:
    kind, text = item
    failures = Failures()
    logger = logging.getLogger("baton_lsp")
    logger.addHandler(failures)
    try:
        findings = within(WATCHDOG_SECONDS, check_text, KIND_OF[kind], text,
                          "/ws/" + REL_PATHS[kind], config=config)
    finally:
        logger.removeHandler(failures)
    assert not [f.message for f in findings if f.code == "BTN000"], text[:500]
    assert not failures.records, failures.records


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(tree())
def test_baton_check_on_generated_trees(tmp_path_factory: Any, files: dict[str, bytes],
                                        ) -> None:
    root = tmp_path_factory.mktemp("tree")
    _write(root, files)
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = within(WATCHDOG_SECONDS, main, ["check", "--jobs", "1", "--format", "json",
                                               str(root)])
    stderr = err.getvalue()
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    if code == 2:  # only a broken configuration file may stop the check
        assert stderr.startswith("baton: error: ") and "baton.toml" in stderr, stderr
        return
    assert code in (0, 1), stderr
    findings = json.loads(out.getvalue())
    assert not [f for f in findings if f["code"] == "BTN000"], findings


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(tree())
@example({REL_PATHS["plan"]: b"# P \x1b]0;t\x07\n\n### Phase 1: x\ndependencies: [\xc2\x9b2J]\n",
          REL_PATHS["agent"]: "---\nname: a\ntools: Read, Zap\u202e\x1b[2J\n---\n".encode()})
def test_the_text_format_passes_no_control_character_on(tmp_path_factory: Any,
                                                        files: dict[str, bytes]) -> None:
    """What `baton check` prints for a terminal is a fixed point of `terminal_safe`: nothing
    from a file (a title, a name, a value, a path) reaches the terminal raw."""
    root = tmp_path_factory.mktemp("tree")
    _write(root, files)
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = within(WATCHDOG_SECONDS, main, ["check", "--jobs", "1", "--no-cache",
                                               str(root)])
    assert code in (0, 1, 2), err.getvalue()
    for text in (out.getvalue(), err.getvalue()):
        assert terminal_safe(text, multiline=True) == text, text


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(tree())
def test_the_real_console_script_on_generated_trees(tmp_path_factory: Any,
                                                    files: dict[str, bytes]) -> None:
    """The same through the process boundary (stderr as a terminal reader sees it)."""
    root = tmp_path_factory.mktemp("tree")
    _write(root, files)
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "json",
                           str(root)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1, 2), proc.stderr
    if proc.returncode != 2:
        assert not [f for f in json.loads(proc.stdout) if f["code"] == "BTN000"]


def _cli(argv: list[str]) -> tuple[int, str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = within(WATCHDOG_SECONDS, main, argv)
    finally:
        logging.getLogger().handlers.clear()  # main() adds its stderr handler each run
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(hostile_tree())
@example(({}, {".claude/data/logs/errors.jsonl": "link-out"}))  # error_type quoted from it
@example(({}, {".claude/specs/001_fuzz/plans/001_fuzz_plan.md": "link-out"}))
@example(({}, {".claude/agents/fuzz-agent.md": "link-out", "specs/state.json": "link-out"}))
@example(({".claude/data/checkpoints/fuzz_wf/000001.json": b"{}"},
          {".claude/data/checkpoints/fuzz_wf/000099.json": "fifo"}))  # status hung
@example(({}, {".claude/data/checkpoints/fuzz_wf/run.json": "fifo",
               ".claude/baton.toml": "fifo"}))
@example(({}, {".claude/data/checkpoints/fuzz_wf/000001.json": "link-out"}))
def test_fifos_outside_links_and_escapes_in_generated_trees(
        tmp_path_factory: Any, generated: tuple[dict[str, bytes], dict[str, str]]) -> None:
    """FIFOs, links out of the workspace (to a file holding `SECRET`), dangling and looping
    links and directories at document and run-record paths, in trees whose text carries
    terminal escapes: `baton check` (text, JSON, SARIF), `baton status` (text, JSON) and
    `baton graph` neither hang nor fail, never show the outside file's content, and the text
    formats show no raw escape."""
    files, specials = generated
    base = tmp_path_factory.mktemp("hostile")
    root = base / "ws"
    plant(root, base / "outside", files, specials)
    for argv, text in hostile_commands(root):
        code, out, err = _cli(argv)
        assert "Traceback" not in err and "internal error" not in err, (argv, err)
        assert code in (0, 1, 2), (argv, code, err)
        assert SECRET.decode() not in out + err, (argv, specials)
        if text:  # nothing a terminal would act on (Baton colours nothing: not a tty)
            assert terminal_safe(out + err, multiline=True) == out + err, (argv, out + err)
