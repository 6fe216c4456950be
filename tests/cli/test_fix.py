"""`baton check --fix` / `--unsafe-fixes` / `--diff` (issue 38): the CLI applies what the
editor's fix-all applies, repeats until nothing is left to fix, writes through
`runs.confine`, and `--diff` writes nothing.

"The editor" here is the language server's own fix-all path: the findings of a document,
`rules.fixes.fix_all_edits` (what `lsp.code_actions` offers as `source.fixAll.baton`),
converted by `lsp.convert.edits_to_workspace_edit` into LSP edits in UTF-16 columns, and
applied to the text as an editor applies a `WorkspaceEdit`, then saved; repeated, as a user
would run fix-all again, until it offers nothing."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton_lsp.lsp.convert import edits_to_workspace_edit
from baton_lsp.lsp.wire import uri_path
from baton_lsp.model.base import Finding, Kind, Range, Severity, TextEdit
from baton_lsp.parse.text import split_lines
from baton_lsp.rules.base import RuleContext, rule, unregister
from baton_lsp.rules.checker import check_paths
from baton_lsp.rules.fixes import apply_edits, fix_all_edits, fix_paths

_BREAK = re.compile(r"\r\n|\r|\n")

CONVERGING_PLAN = """# Plan

## Metadata
- **Date**: 2026-01-01
- **Feature**: x
- **Status**: [IN PROGRESS]
- **Estimated Hours**: 1
- **Standards File**: none
- **Research Reports**: none

### Phase 1: A [COMPLETE]
dependencies: []
- [x] one

### Phase 2: B [COMPLETE]
dependencies: [1]
- [x] two

### Phase 3: C [COMPLETD]
dependencies: [2]
- [x] three
"""
PLAN_PATH = ".claude/specs/001_x/plans/001-plan.md"
NO_SHELLCHECK: dict[str, object] = {"shellcheck": "off"}


def baton(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """ShellCheck off: its findings carry no fixes, and it is most of a corpus check."""
    return subprocess.run([sys.executable, "-m", "baton_lsp", *args, "--no-shellcheck"], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _apply_lsp_edits(text: str, edits: list[object]) -> str:
    """Apply LSP `TextEdit`s (UTF-16 columns) as an editor does."""
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    ends = [m.start() for m in _BREAK.finditer(text)] + [len(text)]

    def offset(pos: object) -> int:
        line, col = pos.line, pos.character  # type: ignore[attr-defined]
        if line >= len(starts):
            return len(text)
        at, units = starts[line], 0
        while at < ends[line] and units < col:
            units += 2 if ord(text[at]) > 0xFFFF else 1
            at += 1
        return at

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text)  # type: ignore[attr-defined]
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def editor_fix_all(root: Path) -> int:
    """Fix-all on every document of `root` until it offers nothing; returns the rounds."""
    rounds = 0
    while True:
        by_doc: dict[str, list[Finding]] = {}
        for f in check_paths([root], NO_SHELLCHECK, jobs=1).findings:
            by_doc.setdefault(f.path, []).append(f)
        changes: dict[str, list[object]] = {}
        for doc, findings in sorted(by_doc.items()):
            edits = fix_all_edits(findings)
            assert all(e.path == doc for e in edits), "a cross-file fix: emulate per document"
            if not edits:
                continue

            def lines_of(path: str) -> list[str]:
                return split_lines(Path(path).read_text(encoding="utf-8").removeprefix("\ufeff"))

            workspace_edit = edits_to_workspace_edit(edits, lines_of)
            for uri, lsp_edits in (workspace_edit.changes or {}).items():
                changes.setdefault(str(uri_path(uri)), []).extend(lsp_edits)
        if not changes:
            return rounds
        rounds += 1
        assert rounds < 10, "the editor's fix-all does not converge"
        for path, lsp_edits in changes.items():
            raw = Path(path).read_bytes().decode("utf-8")
            bom = "\ufeff" if raw.startswith("\ufeff") else ""
            fixed = _apply_lsp_edits(raw.removeprefix("\ufeff"), lsp_edits)
            Path(path).write_bytes((bom + fixed).encode("utf-8"))


def tree_texts(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def test_fix_all_converges_on_a_misspelt_complete_marker(make_workspace) -> None:
    """BTN113's fix of `[COMPLETD]` in a plan that writes `[COMPLETE]` is `[COMPLETE]`: the
    old `[COMPLETED]` raised BTN114 at once, so fix-all needed a second round."""
    root = make_workspace({PLAN_PATH: CONVERGING_PLAN})
    codes = [f.code for f in check_paths([root], jobs=1).findings if f.fix is not None]
    assert "BTN113" in codes
    assert editor_fix_all(root) == 1
    left = check_paths([root], jobs=1).findings
    assert not [f for f in left if (f.fix is not None and f.fix.safe) or f.code in (
        "BTN113", "BTN114")], [f.message for f in left]
    assert "### Phase 3: C [COMPLETE]" in (root / PLAN_PATH).read_text(encoding="utf-8")


def test_fix_and_diff_equal_the_editors_fix_all_on_the_corpus(corpus: Path,
                                                              tmp_path: Path) -> None:
    original, by_cli, by_editor = (tmp_path / n for n in ("original", "cli", "editor"))
    for copy in (original, by_cli, by_editor):
        shutil.copytree(corpus, copy, symlinks=True)
    before = tree_texts(by_cli)
    safe_before = [f for f in check_paths([by_cli], NO_SHELLCHECK, jobs=1).findings
                   if f.fix is not None and f.fix.safe]
    assert len(safe_before) >= 5  # the corpus has safe fixes to make

    diff = baton("check", "--no-cache", "--diff", ".", cwd=by_cli)
    assert diff.returncode == 1, diff.stderr
    assert tree_texts(by_cli) == before, "--diff wrote something"
    assert re.search(r"Would fix \d+ problems in \d+ files\.", diff.stderr)

    assert editor_fix_all(by_editor) >= 1
    fixed = baton("check", "--no-cache", "--fix", ".", cwd=by_cli)
    assert fixed.returncode in (0, 1), fixed.stderr
    assert fixed.stdout.startswith("Fixed ") and "Traceback" not in fixed.stderr
    assert tree_texts(by_cli) == tree_texts(by_editor)

    # the diff is the editor's change, file by file
    expected = []
    for rel, text in sorted(tree_texts(by_editor).items()):
        old = (original / rel).read_bytes()
        if old != text:
            expected += difflib.unified_diff(
                old.decode().splitlines(keepends=True), text.decode().splitlines(keepends=True),
                fromfile=rel, tofile=rel)
    assert diff.stdout == "".join(expected)

    # nothing safe left to fix; a second --fix / --diff has nothing to do
    after = json.loads(baton("check", "--no-cache", "--format", "json", ".", cwd=by_cli).stdout)
    assert not [f for f in after if f["fix"] and f["fix"]["safe"]]
    again = baton("check", "--no-cache", "--diff", ".", cwd=by_cli)
    assert again.returncode == 0 and again.stdout == ""
    # --unsafe-fixes goes further, and is shown before it is applied
    unsafe = baton("check", "--no-cache", "--diff", "--unsafe-fixes", ".", cwd=by_cli)
    assert unsafe.returncode == 1 and unsafe.stdout.startswith("--- ")
    baton("check", "--no-cache", "--fix", "--unsafe-fixes", ".", cwd=by_cli)
    after = json.loads(baton("check", "--no-cache", "--format", "json", ".", cwd=by_cli).stdout)
    assert not [f for f in after if f["fix"]]


AGENT = "---\nname: {name}\ndescription: does things\nmodel: sonnet-4.5\n---\n# 🚀 {name}\n"


def test_fix_keeps_line_ends_bom_and_wide_characters(make_workspace, tmp_path_factory) -> None:
    """A CRLF file stays CRLF, a BOM stays, columns after a non-BMP character are right (the
    editor counts them in UTF-16, the rules in code points): the same bytes as the editor's."""
    plan = CONVERGING_PLAN.replace("### Phase 3: C", "### Phase 3: 🚀 C")
    files = {PLAN_PATH: plan.replace("\n", "\r\n"),
             ".claude/agents/a.md": "\ufeff" + AGENT.format(name="a")}
    root = make_workspace(files)
    editor_root = tmp_path_factory.mktemp("editor") / "ws"
    shutil.copytree(root, editor_root)
    r = baton("check", "--no-cache", "--fix", ".", cwd=root)
    assert r.stdout.startswith("Fixed 2 problems in 2 files."), r.stdout + r.stderr
    editor_fix_all(editor_root)
    assert tree_texts(root) == tree_texts(editor_root)
    data = (root / PLAN_PATH).read_bytes()
    assert b"### Phase 3: \xf0\x9f\x9a\x80 C [COMPLETE]\r\n" in data and b"\n" not in \
        data.replace(b"\r\n", b"")
    assert (root / ".claude/agents/a.md").read_bytes().startswith(b"\xef\xbb\xbf---")


def test_fix_never_writes_through_a_link(make_workspace) -> None:
    """An agent file that is a symbolic link (to a file inside the workspace) is reported,
    not fixed: replacing it would turn the link into a copy, writing through it would change
    a file nobody named. Its target, checked in its own right, is fixed in place."""
    root = make_workspace({".claude/agents/real.md": AGENT.format(name="real")})
    shared = root / "shared" / "linked.md"
    shared.parent.mkdir()
    shared.write_text(AGENT.format(name="linked"), encoding="utf-8")
    link = root / ".claude/agents/linked.md"
    os.symlink(os.path.relpath(shared, link.parent), link)
    r = baton("check", "--no-cache", "--fix", ".", cwd=root)
    assert "linked.md: not fixed: it is a symbolic link" in r.stderr, r.stderr
    assert link.is_symlink() and "model: sonnet-4.5" in shared.read_text(encoding="utf-8")
    assert "model: claude-sonnet-4-5" in (root / ".claude/agents/real.md").read_text(
        encoding="utf-8")


@pytest.mark.parametrize("flag", ["--fix", "--diff"])
def test_nothing_to_fix(make_workspace, flag: str) -> None:
    root = make_workspace({".claude/agents/a.md": "---\nname: a\ndescription: does a\n---\n"
                           "# A\n"})
    r = baton("check", "--no-cache", flag, ".", cwd=root)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert r.stdout == "" if flag == "--diff" else r.stdout.startswith("All checks passed")


def _flip(doc: object, ctx: RuleContext) -> Iterator[Finding]:
    """Test rule: `PING` is fixed to `PONG` and `PONG` back to `PING` (fixes that never
    settle), `SAME` to itself (a fix that changes nothing)."""
    for no, line in enumerate(ctx.lines):
        for word, new in (("PING", "PONG"), ("PONG", "PING"), ("SAME", "SAME")):
            at = line.find(word)
            if at >= 0:
                rng = Range.of_line(no, at, at + 4)
                yield ctx.finding(rng, f"{word} here", fix=ctx.fix(f"Write {new}",
                                                                    ctx.edit(rng, new)))


@pytest.fixture
def flip_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """TST901 registered for this test; the engine's per-kind rule lists (computed once per
    process) start empty so that it is seen, and are restored after."""
    from baton_lsp.rules import engine

    monkeypatch.setattr(engine, "_BY_KIND", {})
    rule("TST901", "test-flip", Severity.WARNING, (Kind.PLAN,))(_flip)
    try:
        yield
    finally:
        unregister("TST901")


def test_fix_passes_stop_on_a_no_op_and_give_up_on_fixes_that_never_settle(
        make_workspace, flip_rule: None) -> None:
    root = make_workspace({PLAN_PATH: "# Plan\n\n### Phase 1: SAME\n- [ ] a\n"})
    checked = check_paths([root], {"select": ["TST901"]}, jobs=1)
    assert [f.code for f in checked.findings] == ["TST901"]
    fixes = fix_paths(checked.targets, checked.findings)
    assert fixes.converged and fixes.passes == 1 and fixes.files == {}
    (root / PLAN_PATH).write_text("# Plan\n\n### Phase 1: PING\n- [ ] a\n", encoding="utf-8")
    checked = check_paths([root], {"select": ["TST901"]}, jobs=1)
    fixes = fix_paths(checked.targets, checked.findings, max_passes=5)
    assert not fixes.converged and fixes.passes == 5
    assert fixes.files[str(root / PLAN_PATH)].fixed.count("PONG") == 1  # odd passes
    assert "PING" in (root / PLAN_PATH).read_text(encoding="utf-8")  # nothing written


def test_apply_edits_counts_lines_as_the_rules_do() -> None:
    """`\\r\\n`, a lone `\\r` and `\\n` each end a line; a column past a line's end is its end;
    a CRLF file's inserted line ends are CRLF."""
    def edit(line: int, start: int, end: int, text: str) -> TextEdit:
        return TextEdit(path="/x", range=Range(start_line=line, start_char=start,
                                               end_line=line, end_char=end), new_text=text)

    assert apply_edits("a\rb\nc", [edit(1, 0, 1, "B"), edit(2, 0, 9, "C")]) == "a\rB\nC"
    assert apply_edits("a\r\nb\r\n", [edit(0, 1, 1, "\nx")]) == "a\r\nx\r\nb\r\n"
    assert apply_edits("ab", [edit(5, 0, 0, "!")]) == "ab!"
    with pytest.raises(ValueError):
        apply_edits("abcd", [edit(0, 0, 2, "x"), edit(0, 1, 3, "y")])
