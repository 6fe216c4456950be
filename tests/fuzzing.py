"""Hypothesis strategies for hostile `.claude/` trees, documents, edits and requests.

Shared by the bounded fuzz tests of the suite (`tests/test_fuzz.py`,
`tests/lsp/test_fuzz.py`) and the long run (`benchmarks/fuzz.py`). Documents are built
from the lines real plans, agents and commands are made of, with hostile fillers (YAML
and shell indicators, brackets repeated thousands of times, control characters and terminal
escape sequences, lone surrogates for editor text, invalid bytes for files) and mutations (a
line repeated, a token bombed, the text cut anywhere).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

KINDS = ("plan", "agent", "command", "skill", "state", "errors", "checkpoint", "registry")
"""What a generated file is; `REL_PATHS` says where it goes in a workspace."""

REL_PATHS = {
    "plan": ".claude/specs/001_fuzz/plans/001_fuzz_plan.md",
    "agent": ".claude/agents/fuzz-agent.md",
    "command": ".claude/commands/fuzz.md",
    "skill": ".claude/skills/fuzz/SKILL.md",
    "state": ".claude/tmp/workflow_fuzz.sh",
    "errors": ".claude/data/logs/errors.jsonl",
    "checkpoint": ".claude/data/checkpoints/implement_fuzz_20260101_000000.json",
    "registry": "specs/state.json",
}

_TOKENS = ["[", "]", "(", ")", "{", "}", "$((", "$(", "`", "'", '"', ":", ": ", "- ", "? ",
           "#", "&a ", "*a", "!", "|", ">", "<", "%", "@", ",", "\\", "\t", " ", "[[",
           "<!--", "-->", "```", "~~~", "**", "__", "\r", "\r\n", "\u2028", "\x85",
           "\u00e9", "\U0001f600", "\ufeff", "\x00", "\x1b", "Phase ", "- [ ] ", "---",
           *["\x1b]0;pwned\x07", "\x1b[2J", "\x1b[31m", "\x9b1;1H", "\x1b]8;;http://x\x1b\\",
             "\u202e", "\u2066", "\x07", "\x08", "\x7f", "\x9b31m"]]  # terminal escapes
_WORDS = ["a", "plan", "Setup", "fuzz-agent", "research-specialist", "Read", "Write", "Bash",
          "Task", "sonnet", "opus", "haiku", "claude-sonnet-4-5", "gpt-5", "true", "null",
          "COMPLETE", "IN PROGRESS", "BLOCKED", "1", "2", "7", "0", "-1", "99999999999999999999",
          "1.5", "x.md", "../../etc/passwd", "/abs/path.md", "$VAR", "${X}", "~", "*", "**/*.md",
          "REPORT_CREATED", "PLAN_CREATED", "STATE_FILE", "append_workflow_state"]


def _bomb(draw: st.DrawFn, max_chars: int = 60_000) -> str:
    """One token repeated up to thousands of times: nesting and backtracking bait."""
    token = draw(st.sampled_from(_TOKENS + _WORDS))
    count = draw(st.sampled_from([2, 10, 50, 200, 1000, 5000, 20000]))
    return token * max(1, min(count, max_chars // len(token)))


@st.composite
def filler(draw: st.DrawFn, surrogates: bool = False) -> str:
    """Text to put where a document expects a value."""
    choice = draw(st.integers(0, 9))
    if choice <= 3:
        return draw(st.sampled_from(_WORDS))
    if choice <= 5:
        return "".join(draw(st.lists(st.sampled_from(_TOKENS + _WORDS), max_size=12)))
    if choice == 6:
        return _bomb(draw, 5_000)
    if choice == 7:
        return draw(st.text(st.characters(codec="utf-8"), max_size=30))
    if choice == 8 and surrogates:
        return draw(st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
                            min_size=1, max_size=3))
    return ", ".join(draw(st.lists(st.sampled_from(_WORDS), max_size=6)))


_PLAN_LINES = [
    "# Plan: {f}", "# {f}", "## Metadata", "- **Date**: {f}", "- **Status**: [{f}]",
    "- **Feature**: {f}", "- **Estimated Hours**: {f}", "- **Parent Plan**: {f}",
    "- **Research Reports**: [{f}]({f})", "## Implementation Phases", "## Overview",
    "### Phase {f}: {f}", "### Phase {f}: {f} [{f}]", "## Phase {f}", "#### Phase {f}: {f}",
    "dependencies: [{f}]", "dependencies: [{f}, {f}]", "**Dependencies**: {f}",
    "**Status**: [{f}]", "- [ ] {f}", "- [x] {f}", "- [X] {f}", "  - [ ] {f}", "- {f}",
    "[{f}]({f})", "<!-- baton: ignore {f} -->", "<!-- baton: ignore-file -->", "```bash",
    "```", "~~~", "{f}", "", "> {f}", "| {f} | {f} |", "Expanded: [{f}]({f})",
    "**Objective**: {f}", "Phase {f} depends on Phase {f}",
]
_FRONT_LINES = [
    "name: {f}", "description: {f}", "tools: {f}", "tools: [{f}]", "allowed-tools: {f}",
    "model: {f}", "fallback-model: {f}", "color: {f}", "argument-hint: {f}",
    "dependent-agents: {f}", "  - {f}", "  {f}", "{f}: {f}", "{f}", "description: |",
    "description: >", "description: \"{f}", "tools:", "disallowedTools: [{f}]",
    "permissionMode: {f}", "hooks: {{{f}}}",
]
_BODY_LINES = [
    "# {f}", "## {f}", "{f}", "", "REPORT_CREATED: {f}", "PLAN_CREATED: {f}",
    "PHASE_COMPLETE: {f}", "TASK_ERROR: {f}", "Read and follow .claude/agents/{f}.md",
    "Read and follow ALL instructions in: .claude/agents/{f}.md", "Task {{",
    "  subagent_type: {f}", "  description: {f}", "  prompt: {f}", "  prompt: |", "}}",
    "```bash", "```", "```zsh", "source .claude/lib/core/{f}.sh",
    "source \"${{CLAUDE_PROJECT_DIR}}/.claude/lib/core/state-persistence.sh\"",
    "append_workflow_state \"{f}\" \"{f}\"", "if [ \"$A\" > {f} ]; then", "fi",
    "echo {f}", "for x in {f}; do", "done", "case {f} in", "esac", "cat <<EOF", "EOF",
    "$ {f}", "{f}() {{", "local {f}={f}", "STATE_FILE={f}", "export {f}={f}",
    "<example>{f}</example>", "/{f} [OPTIONS]", "# Pseudo-code",
]
_STATE_LINES = ["export {f}=\"{f}\"", "export {f}='{f}", "{f}={f}", "# {f}", "{f}",
                "export PLAN_PATH=\"{f}\"", "export WORKFLOW_ID={f}"]


def _render(draw: st.DrawFn, templates: list[str], count: int, surrogates: bool) -> list[str]:
    lines = []
    for _ in range(count):
        template = draw(st.sampled_from(templates))
        while "{f}" in template:
            template = template.replace("{f}", draw(filler(surrogates)).replace("{", "{{")
                                        .replace("}", "}}"), 1)
        lines.append(template.replace("{{", "{").replace("}}", "}"))
    return lines


def _json_value(draw: st.DrawFn, surrogates: bool) -> Any:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | \
        st.builds(str, filler(surrogates))
    return draw(st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["workflow_id", "status", "current_state", "version", "phase",
                         "plan_path", "steps", "baton", "error_type", "timestamp", "tasks",
                         "schema_version", "completed_phases", "x"]) | st.text(max_size=8),
        inner, max_size=5), max_leaves=20))


@st.composite
def document(draw: st.DrawFn, kind: str, surrogates: bool = False) -> str:
    """The text of one file of `kind`; lone surrogates only if `surrogates` (editor text,
    which JSON-RPC can carry but no UTF-8 file can)."""
    size = draw(st.integers(0, 40))
    if kind == "plan":
        lines = _render(draw, _PLAN_LINES, size, surrogates)
    elif kind in ("agent", "command", "skill"):
        lines = []
        if draw(st.integers(0, 5)):
            front = _render(draw, _FRONT_LINES, draw(st.integers(0, 10)), surrogates)
            lines = ["---", *front, *(["---"] if draw(st.integers(0, 6)) else [])]
        lines += _render(draw, _BODY_LINES, size, surrogates)
    elif kind == "state":
        lines = _render(draw, _STATE_LINES, size, surrogates)
    elif kind == "errors":
        lines = [json.dumps(_json_value(draw, surrogates)) if draw(st.integers(0, 3)) else
                 draw(filler(surrogates)) for _ in range(min(size, 12))]
    else:  # checkpoint, registry: one JSON value, sometimes broken
        text = json.dumps(_json_value(draw, surrogates))
        cut = draw(st.integers(0, len(text))) if draw(st.integers(0, 4)) == 0 else len(text)
        lines = [text[:cut]]
    if lines and draw(st.integers(0, 4)) == 0:  # a mutation
        at = draw(st.integers(0, len(lines) - 1))
        how = draw(st.integers(0, 2))
        if how == 0:
            lines.insert(at, _bomb(draw))
        elif how == 1 and len(lines[at]) < 500:
            lines[at:at] = [lines[at]] * draw(st.sampled_from([10, 100, 1000]))
        elif how == 2:
            lines[at] = _bomb(draw) + lines[at]
    ending = draw(st.sampled_from(["\n", "\n", "\n", "\r\n", "\r"]))
    text = ending.join(lines) + (ending if draw(st.booleans()) else "")
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@st.composite
def file_bytes(draw: st.DrawFn, kind: str) -> bytes:
    """A file on disk: usually UTF-8 text, sometimes with a BOM, invalid bytes or NULs."""
    data = draw(document(kind)).encode("utf-8", errors="surrogatepass")
    twist = draw(st.integers(0, 11))
    if twist == 0:
        data = b"\xef\xbb\xbf" + data
    elif twist == 1 and data:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    elif twist == 2:
        data = draw(st.binary(max_size=200))
    return data


@st.composite
def tree(draw: st.DrawFn) -> dict[str, bytes]:
    """A workspace: relative path → file bytes (a `.claude/` tree and its specs)."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=5, unique=True))
    files = {REL_PATHS[k]: draw(file_bytes(k)) for k in kinds}
    if draw(st.integers(0, 5)) == 0:
        files[".claude/baton.toml"] = draw(st.sampled_from([
            b'shellcheck = "all"\n', b'conventions = { plan-standard = "on" }\n',
            b"max-file-size = 1\n", b"[[[\n", b'select = ["BTN"]\nignore = 5\n']))
    return files


# -- hostile file system objects ---------------------------------------------------------

SECRET = b"BATON-FUZZ-SECRET-7f3a91"
"""Written in the file outside symlinks point at: it must never appear in any output."""

SPECIALS = ("fifo", "link-out", "link-in", "link-dangling", "link-loop", "dir")
"""What `hostile_tree` may plant instead of a file: a FIFO (reading it would block), a
symlink out of the workspace (to a file holding `SECRET`), one staying inside, a dangling
one, a loop, a directory where a file is expected."""

RUN_PATHS = (".claude/data/checkpoints/fuzz_wf/000001.json",
             ".claude/data/checkpoints/fuzz_wf/000099.json",
             ".claude/data/checkpoints/fuzz_wf/run.json",
             ".claude/data/checkpoints/fuzz_wf/lock",
             ".claude/baton.toml")
"""Paths Baton's own run record and configuration live at, besides the documents'."""


@st.composite
def hostile_tree(draw: st.DrawFn) -> tuple[dict[str, bytes], dict[str, str]]:
    """A `tree` plus special objects planted at document and run-record paths."""
    files = draw(tree())
    if draw(st.integers(0, 2)) == 0:  # a real, valid-looking checkpoint to list beside them
        files[RUN_PATHS[0]] = json.dumps({
            "version": "2.1", "workflow_id": "fuzz_wf", "status": "failed",
            "workflow_description": draw(filler()), "current_state": "implement"}).encode()
    where = st.sampled_from(sorted({*REL_PATHS.values(), *RUN_PATHS}))
    specials = draw(st.dictionaries(where, st.sampled_from(SPECIALS), min_size=1, max_size=4))
    for rel in specials:
        files.pop(rel, None)
    return files, specials


def plant(root: Path, outside: Path, files: dict[str, bytes], specials: dict[str, str]) -> None:
    """Write a `hostile_tree` under `root`; `outside` (not below `root`) holds the target
    of the links that leave the workspace."""
    outside.mkdir(parents=True, exist_ok=True)
    secret = outside / "secret.md"
    secret.write_bytes(b"# " + SECRET + b"\n\n### Phase 1: " + SECRET + b"\n"
                       b"tools: " + SECRET + b"\n" + b'{"error_type": "' + SECRET + b'"}\n')
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel, what in specials.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if what == "fifo":
            os.mkfifo(path)
        elif what == "link-out":
            path.symlink_to(secret)
        elif what == "link-in":
            inside = root / "inside.md"
            inside.write_bytes(b"# inside\n")
            path.symlink_to(os.path.relpath(inside, path.parent))
        elif what == "link-dangling":
            path.symlink_to(root / "no-such-file")
        elif what == "link-loop":
            path.symlink_to(path.name)
        else:
            path.mkdir()


def hostile_commands(root: Path) -> list[tuple[list[str], bool]]:
    """The `baton` command lines a `hostile_tree` goes through, each with whether its
    output is for a terminal (text) or a machine format."""
    runs: list[tuple[list[str], bool]] = [
        (["check", "--jobs", "1", "--no-cache", "--format", fmt, str(root)], fmt == "text")
        for fmt in ("text", "json", "sarif")]
    runs += [(["status", "--workspace", str(root)], True),
             (["status", "--json", "--workspace", str(root)], False),
             (["status", "--workspace", str(root), "fuzz_wf"], True)]
    plan = root / REL_PATHS["plan"]
    if os.path.lexists(plan):
        runs.append((["graph", str(plan)], True))
    return runs


# -- editor traffic ----------------------------------------------------------------------

POSITION = st.fixed_dictionaries({"line": st.sampled_from([0, 1, 2, 5, 30, 10**6]),
                                  "character": st.sampled_from([0, 1, 3, 9, 80, 10**6])})


@st.composite
def edit(draw: st.DrawFn) -> dict[str, Any]:
    """One `contentChanges` item: a range replacement (sometimes out of bounds) or the
    whole text."""
    if draw(st.integers(0, 5)) == 0:
        return {"text": draw(document(draw(st.sampled_from(KINDS)), surrogates=True))}
    start, end = draw(POSITION), draw(POSITION)
    if (end["line"], end["character"]) < (start["line"], start["character"]):
        start, end = end, start
    return {"range": {"start": start, "end": end}, "text": draw(filler(surrogates=True))}


REQUESTS = ["textDocument/hover", "textDocument/definition", "textDocument/references",
            "textDocument/completion", "textDocument/codeLens", "textDocument/documentSymbol",
            "textDocument/foldingRange", "textDocument/inlayHint", "textDocument/codeAction",
            "textDocument/diagnostic", "workspace/symbol", "workspace/executeCommand"]
COMMANDS = ["baton.showGraph", "baton.server.debugInfo", "baton.server.workflow.list",
            "baton.server.workflow.status", "baton.server.checkpoint.show",
            "baton.server.open", "baton.server.workflow.previewResume", "baton.server.nope"]


@st.composite
def request(draw: st.DrawFn, uri: str) -> tuple[str, dict[str, Any]]:
    """(method, params) aimed at `uri`, with odd positions and arguments."""
    method = draw(st.sampled_from(REQUESTS))
    doc = {"uri": uri}
    pos = draw(POSITION)
    rng = {"start": pos, "end": draw(POSITION)}
    if method == "workspace/symbol":
        return method, {"query": draw(filler(surrogates=True))}
    if method == "workspace/executeCommand":
        args = draw(st.lists(st.sampled_from([uri, {}, {"id": "../../x"}, {"path": "/etc"},
                                              {"id": draw(filler())}, None, 5]), max_size=2))
        return method, {"command": draw(st.sampled_from(COMMANDS)), "arguments": args}
    if method == "textDocument/references":
        return method, {"textDocument": doc, "position": pos,
                        "context": {"includeDeclaration": draw(st.booleans())}}
    if method in ("textDocument/codeLens", "textDocument/documentSymbol",
                  "textDocument/foldingRange", "textDocument/diagnostic"):
        return method, {"textDocument": doc}
    if method == "textDocument/inlayHint":
        return method, {"textDocument": doc, "range": rng}
    if method == "textDocument/codeAction":
        only = draw(st.sampled_from([None, ["quickfix"], ["source.fixAll.baton"]]))
        ctx: dict[str, Any] = {"diagnostics": []}
        if only:
            ctx["only"] = only
        return method, {"textDocument": doc, "range": rng, "context": ctx}
    return method, {"textDocument": doc, "position": pos}


ODD_URIS = ["file:///tmp/x%00y.md", "file:///tmp/.claude/agents/%00.md", "untitled:Untitled-1",
            "file://server/share/.claude/plan.md", "file:", "", "file:///" + "a/" * 3000 + "x.md",
            "file:///tmp/%ED%A0%80.md", "file:///tmp/\ud800.md", "file:///tmp/a%zz.md",
            "file:///tmp/.claude/../../../etc/passwd", "http://example.com/.claude/x.md",
            "file:///tmp/.claude/specs/x/plans/p.md?q=1#frag", "file:///dev/zero",
            "file:///proc/self/mem", "file:///tmp/ws/.claude/commands/%2e%2e/x.md"]
"""URIs an editor (or an attacker's client) may send; none may cause an internal error."""


FRAME_BREAKERS = [
    lambda b: b"Content-Length: -3\r\n\r\n" + b,
    lambda b: b"Content-Length: x\r\n\r\n" + b,
    lambda b: b"content-length:%d\r\n\r\n" % (len(b) // 3) + b,
    lambda b: b"Content-Length: %d\r\n\r\n" % (len(b) + 70) + b,
    lambda b: b"Content-Length: 123456789012345678901234567890\r\n\r\n" + b,
    lambda b: b"Content-Type: a\r\n\r\n" + b,
    lambda b: b"\x00\xff junk }{ \r\n" + b"Content-Length: %d\r\n\r\n" % len(b) + b,
    lambda b: b"Content-Length: %d\r\n" % len(b) + b,  # no empty line after the headers
    lambda b: b,
]
"""One JSON-RPC body `b` framed wrongly: a missing, negative, non-numeric, short, long or
huge `Content-Length`, junk before the header, no blank line, no header at all. The body
itself is whole, so the server can still find it (the transport's property tests)."""

