"""Hostile and broken files on disk: each gives a clear finding or a clean result, fast.

These are hang detectors, not performance tests: every case runs under a generous watchdog
and must come back as findings from `baton check` (exit code 0 or 1), never an exception,
a traceback or an "internal error". Files are real files in a temporary `.claude/`
workspace so discovery, the index and the CLI are exercised, not just the parsers.

The watchdog arms SIGALRM in the main thread instead of joining a worker thread: a
backtracking regex holds the GIL for its whole run, so `Thread.join(timeout)` cannot return
until the regex finishes, while the regex engine does check for signals and stops.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from baton_lsp.cli.main import main
from baton_lsp.model import BatonConfig, Kind, Plan
from baton_lsp.parse import parse_text
from baton_lsp.parse.text import MAX_LINE_CHARS
from baton_lsp.rules.engine import check_text

T = TypeVar("T")
WATCHDOG_SECONDS = 20.0
PLAN = ".claude/specs/001_feature/plans/001_plan.md"
AGENT = ".claude/agents/worker.md"
COMMAND = ".claude/commands/go.md"
STATE = ".claude/tmp/workflow_state.sh"
ERRORS = ".claude/data/logs/errors.jsonl"
INTERNAL = {"BTN000"}


class Hung(BaseException):
    """Raised by the watchdog; a BaseException so `except Exception` guards cannot eat it."""


def within(seconds: float, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn(*args, **kwargs)`, failing the test if it has not returned after `seconds`."""
    if threading.current_thread() is not threading.main_thread() or sys.platform == "win32":
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # re-raised in the test thread below
                box["error"] = exc

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(seconds)
        assert not worker.is_alive(), f"did not finish within {seconds:.0f} s: a hang"
        if "error" in box:
            raise box["error"]
        return box["value"]

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hung(f"did not finish within {seconds:.0f} s: a hang")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kwargs)
    except Hung as exc:
        pytest.fail(str(exc))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / ".claude").mkdir()
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[dict[str, Any]]]:
    """`baton check --format json` under the watchdog: (exit code, findings)."""
    capsys.readouterr()
    argv = ["check", "--no-shellcheck", "--format", "json", *map(str, paths)]
    code = within(WATCHDOG_SECONDS, main, argv)
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    assert code in (0, 1), (code, err)
    findings = json.loads(out)
    assert not [f for f in findings if f["code"] in INTERNAL], findings
    return code, findings


def by_file(findings: list[dict[str, Any]], rel: str) -> list[dict[str, Any]]:
    return [f for f in findings if f["filename"].replace(os.sep, "/").endswith(rel)]


def codes(findings: list[dict[str, Any]], rel: str) -> set[str]:
    return {f["code"] for f in by_file(findings, rel)}


def unreadable(findings: list[dict[str, Any]], rel: str) -> str:
    """The BTN400 message for `rel`, asserting it is the file's only finding."""
    mine = by_file(findings, rel)
    assert [f["code"] for f in mine] == ["BTN400"], mine
    return mine[0]["message"]


# -- files that are not text ------------------------------------------------------------


def test_binary_files_are_reported_not_parsed(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = bytes(range(256)) * 64  # NUL bytes and everything else
    for rel in (PLAN, AGENT, COMMAND, STATE, ERRORS):
        write(ws, rel, blob)
    code, findings = check(capsys, ws)
    assert code == 1
    for rel in (PLAN, AGENT, COMMAND, STATE, ERRORS):
        assert "NUL bytes" in unreadable(findings, rel)


def test_nul_byte_late_in_an_otherwise_text_file(ws: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, PLAN, "# Plan\n" + "text line\n" * 5000 + "\x00\n")
    _, findings = check(capsys, ws)
    assert "NUL bytes" in unreadable(findings, PLAN)


def test_invalid_utf8_names_the_byte_and_line(ws: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, PLAN, b"# Plan\n\n## Phase 1: caf\xe9\n")  # Latin-1, not UTF-8
    write(ws, AGENT, b"---\nname: worker\ndescription: trunc \xe2\x82\n---\n")
    _, findings = check(capsys, ws)
    assert unreadable(findings, PLAN) == "file is not valid UTF-8 (byte 0xe9 at line 3)"
    assert "not valid UTF-8 (byte 0xe2 at line 3)" in unreadable(findings, AGENT)


def test_ten_megabyte_single_line_plan_is_refused_by_size(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, PLAN, b"# " + b"x" * 10_000_000)
    code, findings = check(capsys, ws)
    assert code == 1
    message = unreadable(findings, PLAN)
    assert "9.5 MiB" in message and "limit" in message


def test_one_megabyte_line_is_skipped_not_parsed(ws: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Under the size limit but over the line limit: the line is blanked, the rest parsed."""
    long_line = "## Phase 2: " + "[" * 400_000 + "`" * 300_000 + " \t" * 150_000
    write(ws, PLAN, f"# Plan\n\n## Phase 1: Setup\ndependencies: []\n{long_line}\n- [ ] a\n")
    _, findings = check(capsys, ws)
    assert "BTN400" not in codes(findings, PLAN)
    plan = parse_text(Kind.PLAN, (ws / PLAN).read_text(), str(ws / PLAN))
    assert isinstance(plan, Plan) and [p.id for p in plan.phases] == ["1"]
    assert [t.text for t in plan.phases[0].tasks] == ["a"]


def test_a_plan_that_is_one_megabyte_on_one_line(ws: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, PLAN, "## Phase 1 " + "dependencies: [1, " * 60_000)
    code, findings = check(capsys, ws)
    assert code in (0, 1) and "BTN400" not in codes(findings, PLAN)


# Lines just under MAX_LINE_CHARS are parsed: none of them may make a regex backtrack.
ADVERSARIAL_LINES = [
    "## Phase 1 a" + " " * 150_000 + "b",
    "## Phase 1" + " \t" * 75_000 + "x",
    "## Phase 1 " + "[See: a.md]" * 13_000,
    "## Phase 1 " + "[" * 150_000,
    "# " + "#" * 150_000 + " x",
    "- [ ] a" + " " * 150_000 + "b",
    "- **Date**: a" + " " * 150_000 + "b",
    "  - sub a" + " " * 150_000 + "b",
    "dependencies: a" + " " * 150_000 + "b",
    "**Dependencies**: [" + "1, " * 10_000 + " " * 100_000 + "2",
    "**Status**: -" + " " * 150_000 + "1",
    "**Status**: " + " " * 150_000 + "x",
    "[" * 150_000 + "](x",
    "[a](b \"x" * 18_000,
    "[a](" + " " * 150_000,
    "`" * 150_000 + "(",
    "<example>" + "`" * 150_000,  # prose, not a fence: BTN308's code-span regex was cubic
    "`a" * 75_000,
    "``a`" * 37_000,
    "Read and follow" + " " * 150_000 + "x",
    "A_" * 75_000 + ":",
    "{{" * 75_000,
    "Task {" + " " * 150_000 + "x",
    "  prompt: a" + " " * 150_000 + "b",
    "export A=" + " " * 150_000,
    "export A='" + "x" * 150_000,
    "<!-- baton: ignore " + " " * 150_000,
    "<a" + " b" * 70_000,
    "<a" + " b=c" * 40_000 + " x",
    "a: b" + " " * 150_000 + "c",
    "  - b" + " " * 150_000 + "c",
    "{file:" * 25_000,  # opencode.json's substitution token
    '"/*' * 50_000,  # JSONC comments and strings
]


JSON_KINDS = {Kind.OPENCODE_CONFIG, Kind.SETTINGS, Kind.MCP_CONFIG, Kind.PLUGIN_MANIFEST}


def _json_texts(kind: Kind, line: str) -> list[str]:
    """The line as every string a JSON kind's rules read (paths, commands, env, hooks), so
    their regexes see it: a file that is not JSON at all is refused before any of them."""
    if kind is Kind.MCP_CONFIG:
        server = {"command": line, "args": [line, "node", line], "env": {"K": line},
                  "headers": {"Authorization": line}, "url": line}
        return [json.dumps({"mcpServers": {"s": server, "t": {"type": "http", "url": line,
                                                              "headers": {"X": line}}}})]
    if kind is Kind.PLUGIN_MANIFEST:
        return [json.dumps({"name": line, "commands": [line, "./" + line], "hooks": line,
                            "skills": line, "plugins": [{"name": line, "source": line,
                                                         "skills": [line]}]})]
    if kind is Kind.SETTINGS:
        hook = {"type": "command", "command": line}
        return [json.dumps({"permissions": {"allow": [line], "deny": [line]},
                            "hooks": {"PreToolUse": [{"matcher": line, "hooks": [hook]}],
                                      "Stop": [{"matcher": line, "hooks": [hook]}]}})]
    return []


@pytest.mark.parametrize("kind", [Kind.PLAN, Kind.AGENT, Kind.COMMAND, Kind.STATE,
                                  Kind.OPENCODE_AGENT, Kind.OPENCODE_COMMAND,
                                  Kind.OPENCODE_CONFIG, Kind.SETTINGS, Kind.MCP_CONFIG,
                                  Kind.MEMORY, Kind.PLUGIN_MANIFEST], ids=str)
@pytest.mark.parametrize("line", ADVERSARIAL_LINES, ids=lambda line: repr(line[:14]))
def test_adversarial_long_lines_do_not_backtrack(kind: Kind, line: str) -> None:
    assert len(line) < MAX_LINE_CHARS, "the line must be parsed, not blanked"
    config = BatonConfig(shellcheck="off")
    path = {Kind.PLAN: "/ws/" + PLAN, Kind.AGENT: "/ws/" + AGENT,
            Kind.COMMAND: "/ws/" + COMMAND, Kind.STATE: "/ws/" + STATE,
            Kind.OPENCODE_AGENT: "/ws/.opencode/agent/a.md",
            Kind.OPENCODE_COMMAND: "/ws/.opencode/commands/c.md",
            Kind.OPENCODE_CONFIG: "/ws/opencode.json",
            Kind.SETTINGS: "/ws/.claude/settings.json",
            Kind.MCP_CONFIG: "/ws/.mcp.json",
            Kind.MEMORY: "/ws/CLAUDE.md",
            Kind.PLUGIN_MANIFEST: "/ws/.claude-plugin/plugin.json"}[kind]
    # In a phase body, in front matter and in a Task block, so every line regex sees it;
    # a JSON kind's values too. A memory file's `@` imports read the line as a path.
    texts = [f"# P\n## Phase 1\n{line}\n", f"---\n{line}\n---\nTask {{\n{line}\n}}\n",
             *_json_texts(kind, line)]
    if kind is Kind.MEMORY:
        texts.append(f"# Project\nSee @{line} and @docs/{line}.md\n")
    for text in texts:
        findings = within(WATCHDOG_SECONDS, check_text, kind, text, path, config=config)
        assert not [f for f in findings if f.code in INTERNAL], findings


# -- YAML and nesting -------------------------------------------------------------------


def test_yaml_alias_bomb_in_agent_frontmatter(ws: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    write(ws, AGENT, "---\nname: worker\ndescription: d\n" + "\n".join(lines) + "\n---\n# W\n")
    code, findings = check(capsys, ws)
    assert code == 1
    [finding] = [f for f in by_file(findings, AGENT) if f["code"] == "BTN202"]
    assert "aliases" in finding["message"] and finding["location"]["line"] == 5


def test_deeply_nested_yaml_flow_list(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    depth = 10_000
    write(ws, AGENT, f"---\nname: worker\ntools: {'[' * depth}{']' * depth}\n---\n# W\n")
    write(ws, COMMAND, f"---\ndescription: d\nallowed-tools: {'[' * depth}\n---\n# C\n")
    write(ws, ".claude/agents/other.md", f"---\nx: {'{a: ' * depth}1{'}' * depth}\n---\n")
    _, findings = check(capsys, ws)
    for rel in (AGENT, ".claude/agents/other.md"):
        messages = [f["message"] for f in by_file(findings, rel) if f["code"] == "BTN202"]
        assert len(messages) == 1 and "nests deeper than" in messages[0], findings
    assert by_file(findings, COMMAND), "the command's broken front matter must be reported"


def test_deeply_nested_markdown_lists(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    depth = 5_000
    nested = "".join(" " * i + "- [ ] task\n" for i in range(depth))  # ~12.5 MB of indentation
    # Raise the size limit so the file is parsed rather than refused as too large.
    write(ws, ".claude/baton.toml", "max-file-size = 67108864\n")
    write(ws, PLAN, f"# Plan\n\n## Phase 1: Deep\ndependencies: []\n{nested}")
    write(ws, AGENT, "---\nname: worker\ndescription: d\n---\n" + "- " * depth + "x\n"
          + "> " * depth + "quote\n" + "".join("\t" * (i % 50) + "* item\n" for i in range(depth)))
    write(ws, COMMAND, "---\ndescription: d\n---\n" + nested)
    _, findings = check(capsys, ws)
    assert not {"BTN400"} & (codes(findings, PLAN) | codes(findings, AGENT))
    plan = parse_text(Kind.PLAN, (ws / PLAN).read_text(), str(ws / PLAN))
    assert isinstance(plan, Plan)
    tasks = plan.phases[0].tasks
    assert len(tasks) == depth and tasks[-1].depth == depth - 1


def test_unclosed_fence_at_the_top_of_a_50k_line_plan(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = "".join(f"## Phase {i}\ndependencies: [{i + 1}]\n- [ ] t\n" for i in range(16_667))
    write(ws, PLAN, "```bash\n" + body)
    _, findings = check(capsys, ws)
    assert not {"BTN101", "BTN400"} & codes(findings, PLAN)  # all of it is code
    plan = parse_text(Kind.PLAN, (ws / PLAN).read_text(), "p.md")
    assert isinstance(plan, Plan) and plan.phases == [] and plan.line_count > 50_000


# -- data files -------------------------------------------------------------------------


def test_errors_log_with_a_100k_deep_json_array(ws: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    good = '{"timestamp": "2026-11-21T00:00:00Z", "error_type": "state_error", ' \
           '"error_message": "m", "status": "ERROR"}'
    deep = "[" * 100_000 + "]" * 100_000
    write(ws, ERRORS, "\n".join([good, deep, '{"a":' * 30_000, "{" * 100_000, good]) + "\n")
    code, findings = check(capsys, ws)
    assert code == 1
    bad = [f for f in by_file(findings, ERRORS) if f["code"] == "BTN401"]
    assert [f["location"]["line"] for f in bad] == [2, 3, 4]
    assert "too deeply" in bad[0]["message"]


def test_state_file_with_unterminated_quote_then_100k_lines(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, STATE, 'export PLAN_PATH="/tmp/plan.md\n' + "".join(
        f"export K{i}=v{i}\n" for i in range(100_000)))
    _, findings = check(capsys, ws)
    quotes = [f for f in by_file(findings, STATE) if f["code"] == "BTN405"]
    assert [f["location"]["line"] for f in quotes] == [1]


def test_state_file_where_every_line_opens_a_quote(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each scan for a closing quote is bounded, so 100k openers stay linear."""
    write(ws, STATE, "".join(f"export K{i}='x\nexport J{i}=\"y\\\"\n" for i in range(50_000)))
    check(capsys, ws)


# -- encodings and line endings ---------------------------------------------------------


SAMPLE_PLAN = """# Plan

## Metadata
- **Date**: 2026-13-45
- **Status**: [IN PROGRESS]

## Implementation Phases

### Phase 1: Setup [COMPLETE]
dependencies: [2]
- [ ] open task
- [X] done

### Phase 2: Build
dependencies: [1, 7]
"""
SAMPLE_AGENT = """---
name: worker
description: Does work
tools: Read, Wirte
---
# Worker
"""


def _shape(findings: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((Path(f["filename"]).name, f["code"], f["location"]["line"],
                   f["location"]["column"], f["end_location"]["column"]) for f in findings)


@pytest.mark.parametrize("variant", ["crlf", "bom", "bom+crlf", "cr"])
def test_crlf_bom_and_cr_give_the_same_findings_as_lf(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], variant: str) -> None:
    results = []
    for name, transform in (("lf", lambda s: s), (variant, _ENCODINGS[variant])):
        root = tmp_path / name
        (root / ".claude").mkdir(parents=True)
        write(root, PLAN, transform(SAMPLE_PLAN))
        write(root, AGENT, transform(SAMPLE_AGENT))
        results.append(check(capsys, root)[1])
    assert results[0], "the sample must produce findings for the comparison to mean anything"
    assert _shape(results[1]) == _shape(results[0])


_ENCODINGS: dict[str, Callable[[str], bytes]] = {
    "crlf": lambda s: s.replace("\n", "\r\n").encode(),
    "bom": lambda s: b"\xef\xbb\xbf" + s.encode(),
    "bom+crlf": lambda s: b"\xef\xbb\xbf" + s.replace("\n", "\r\n").encode(),
    "cr": lambda s: s.replace("\n", "\r").encode(),  # classic Mac line endings
}


def test_empty_files(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for rel in (PLAN, AGENT, COMMAND, STATE, ERRORS):
        write(ws, rel, b"")
    _, findings = check(capsys, ws)
    for rel in (PLAN, AGENT, COMMAND, STATE, ERRORS):
        assert "BTN400" not in codes(findings, rel)
    assert codes(findings, AGENT), "an agent without front matter deserves a finding"


# -- things that are not files ----------------------------------------------------------


def test_directory_named_like_a_markdown_file(ws: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    for rel in (PLAN, AGENT, COMMAND):
        (ws / rel).mkdir(parents=True)
    write(ws, ".claude/agents/real.md", SAMPLE_AGENT)
    code, findings = check(capsys, ws)
    assert {Path(f["filename"]).name for f in findings} == {"real.md"}
    code, findings = check(capsys, ws / AGENT)  # named on the command line
    assert code == 0 and findings == []


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32",
                    reason="needs POSIX symlinks")
def test_symlink_loops(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plans = ws / PLAN
    plans.parent.mkdir(parents=True)
    os.symlink("b_plan.md", plans.parent / "a_plan.md")
    os.symlink("a_plan.md", plans.parent / "b_plan.md")
    agents = ws / ".claude" / "agents"
    agents.mkdir()
    os.symlink("self.md", agents / "self.md")
    os.symlink("..", agents / "up")  # a directory loop: never descended into
    write(ws, ".claude/agents/real.md", SAMPLE_AGENT)
    code, findings = check(capsys, ws)
    assert code == 1
    for name in ("a_plan.md", "b_plan.md", "self.md"):
        [finding] = [f for f in findings if Path(f["filename"]).name == name]
        assert finding["code"] == "BTN400" and "symbolic link" in finding["message"], finding
    capsys.readouterr()
    assert within(WATCHDOG_SECONDS, main, ["check", str(agents / "self.md")]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and "internal error" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_named_like_a_plan_does_not_block(ws: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (ws / PLAN).parent.mkdir(parents=True)
    os.mkfifo(ws / PLAN)  # opening it for reading would wait for a writer forever
    _, findings = check(capsys, ws)
    assert "not a regular file" in unreadable(findings, PLAN)


# -- baton graph on bad input -----------------------------------------------------------


@pytest.mark.parametrize("data", [b"\x00\x01binary", b"# P\n" + b"x" * 5_000_000,
                                  b"\xff\xfe", b""], ids=["binary", "huge", "utf16", "empty"])
def test_graph_on_unusable_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 data: bytes) -> None:
    path = write(tmp_path, "plan.md", data)
    code = within(WATCHDOG_SECONDS, main, ["graph", str(path)])
    out, err = capsys.readouterr()
    assert "internal error" not in err
    if data:
        assert code == 2 and err.startswith(f"baton: {path}: ")
    else:
        assert code == 0 and "No phases found" in out
