"""The rules' fast paths held to the simple forms they replace (kept here as oracles), over
the text of every file of the shared corpus and over generated text."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.model.base import Kind
from baton_lsp.parse.shell import CODE, COMMENT, BashLine, lexed
from baton_lsp.rules import command_bash
from baton_lsp.rules.base import RuleContext


def _corpus_texts(corpus: Path) -> list[str]:
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(corpus.rglob("*")) if p.suffix in (".md", ".sh") and p.is_file()]
    assert len(texts) > 100
    return texts


# -- BTN328: library calls found by a word scan, not an alternation of the names ---------------

_OLD_LIB_CALL_RE = re.compile(
    r"(?<![^\s;&|(`{!])(" + "|".join(sorted(command_bash._OWNER, key=len, reverse=True))
    + r")\b(?!\s*\()")
"""The pattern `_library_calls` replaced."""


def _old_calls(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(1), m.end(1), m.group(1)) for m in _OLD_LIB_CALL_RE.finditer(text)]


def _old_lines_naming(content: str, names: list[str]) -> list[int]:
    """The per-line test `_lines_naming` replaced."""
    return [no for no, text in enumerate(content.split("\n"))
            if any(name in text for name in names)]


_NAMES = sorted(command_bash._OWNER)
_pieces = st.sampled_from([
    *_NAMES[:6], "sm_init", "sm_initx", "xsm_init", "sm_init_", " ", "\t", "\u00a0", "\u2003",
    "(", " (", "()", ";", "&", "|", "`", "{", "!", "$", "=", "\"", "'", "\n", "é", "\u0663",
    "_", "a", "-", ".", "/", "#",
])
_texts = st.lists(_pieces, max_size=12).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_texts)
def test_library_calls_are_the_patterns_matches(text: str) -> None:
    assert list(command_bash._library_calls(text)) == _old_calls(text)


@settings(max_examples=1500, deadline=None)
@given(_texts, st.lists(st.sampled_from([*_NAMES[:6], "sm_init", "sm_init_x"]), max_size=4))
def test_lines_naming_are_the_lines_that_name(content: str, names: list[str]) -> None:
    assert command_bash._lines_naming(content, names) == _old_lines_naming(content, names)


def test_library_fast_paths_on_the_corpus(corpus: Path) -> None:
    calls = 0
    for text in _corpus_texts(corpus):
        named = [fn for fn in command_bash._OWNER if fn in text]
        # `_lines_naming` numbers the lines as the lexer splits them
        assert [line.text for line in lexed(text)] == text.split("\n")
        assert command_bash._lines_naming(text, named) == _old_lines_naming(text, named)
        for line in text.split("\n"):
            found = list(command_bash._library_calls(line))
            assert found == _old_calls(line), line
            calls += len(found)
    assert calls > 0  # the corpus calls the libraries: the comparison saw real calls


@pytest.mark.parametrize("text", ["sm_init x", "a; sm_init", "sm_init ()", "(sm_init)",
                                  "xsm_init", "sm_init_x", "!sm_init", "\u00a0sm_init"])
def test_library_calls_examples(text: str) -> None:
    assert list(command_bash._library_calls(text)) == _old_calls(text)


# -- BTN320/BTN329: where an assigned value ends -------------------------------------------------

def _old_value_end(line: BashLine, start: int) -> int:
    """`_value_end` as it was: every character visited."""
    depth = 0
    text, classes = line.text, line.classes
    i = start
    while i < len(text):
        ch, cls = text[i], classes[i]
        if cls == CODE:
            if ch in "({":
                depth += 1
            elif ch in ")}":
                if depth == 0:
                    return i
                depth -= 1
            elif depth == 0 and ch in " \t;&|":
                return i
        elif cls == COMMENT:
            return i
        i += 1
    return i


_bash = st.lists(st.sampled_from([
    "A=", "x", "$(", ")", "${", "}", "(", "{", " ", "\t", ";", "&", "|", "#", " # c", "\"",
    "'", "\\", "`", "$x", "<<EOF", "\n", "EOF", "=",
]), max_size=14).map("".join)


def _every_start(content: str) -> int:
    checked = 0
    for line in lexed(content):
        for start in range(len(line.text) + 1):
            assert command_bash._value_end(line, start) == _old_value_end(line, start), \
                (line.text, start)
            checked += 1
    return checked


@settings(max_examples=1500, deadline=None)
@given(_bash)
def test_value_end_is_the_character_scan(content: str) -> None:
    _every_start(content)


def test_value_end_on_the_corpus(corpus: Path) -> None:
    """From every position of every line of the corpus's bash blocks (the files' lines
    lexed as bash: a superset), not only where an assignment's value starts."""
    assert sum(_every_start(text) for text in _corpus_texts(corpus)
               if "```bash" in text or text.startswith("#!")) > 100_000


# -- the registry: a rule's name tested against a set of the names -----------------------------

def test_registered_names_are_the_registry_s_names() -> None:
    """`register` refuses a name found in `_NAMES` where it looked through every rule for
    it: the same answer while `_NAMES` holds exactly the registered rules' names, through
    registrations, refusals and `unregister`."""
    from baton_lsp.model.base import Finding, Severity
    from baton_lsp.rules import base

    def names() -> set[str]:
        return {r.name for r in base._REGISTRY.values()}

    def check(doc: object, ctx: RuleContext) -> list[Finding]:
        """A test rule."""
        return []

    base.all_rules()
    assert names() == base._NAMES and len(names()) > 100
    taken = next(iter(base._REGISTRY.values())).name
    with pytest.raises(ValueError, match="duplicate rule name"):
        base.rule("TST951", taken, Severity.INFO, (Kind.PLAN,))(check)
    try:
        base.rule("TST951", "test-fast-name", Severity.INFO, (Kind.PLAN,))(check)
        assert names() == base._NAMES and "test-fast-name" in base._NAMES
        with pytest.raises(ValueError, match="duplicate rule name"):
            base.rule("TST952", "test-fast-name", Severity.INFO, (Kind.PLAN,))(check)
    finally:
        base.unregister("TST951")
        base.unregister("TST952")  # never registered: nothing to drop
    assert names() == base._NAMES and "test-fast-name" not in base._NAMES
    base.rule("TST952", "test-fast-name", Severity.INFO, (Kind.PLAN,))(check)  # free again
    base.unregister("TST952")
    assert names() == base._NAMES


# -- BTN315: the folders of a missing target listed once for all of them ------------------------

def _old_folder_files(ctx: RuleContext, root: Path, rel: str) -> list[str] | None:
    """`_folder_files` as it was: the folders listed again for every missing target."""
    parts = PurePosixPath(rel).parts
    if len(parts) < 3:
        return None
    top = root / parts[0] / parts[1]
    suffix = PurePosixPath(rel).suffix or ".sh"
    folders = [top, root / PurePosixPath(rel).parent]
    found: list[str] = []
    seen: set[Path] = set()
    while folders:
        folder = folders.pop(0)
        if folder in seen:
            continue
        seen.add(folder)
        ctx.depends_on.add(str(folder))
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and folder == top:
                folders.append(Path(entry.path))
            elif entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path).relative_to(root).as_posix())
    return sorted(found) or None


def _targets_of(root: Path) -> list[str]:
    """Missing targets in every folder of `root/.claude` (and a few that are no folder)."""
    rels = [".claude/x.sh", ".claude/lib", ".claude/nowhere/deeper/x.sh"]
    for folder in sorted(p for p in (root / ".claude").rglob("*") if p.is_dir()):
        rel = folder.relative_to(root).as_posix()
        rels += [f"{rel}/missing.sh", f"{rel}/missing.py", f"{rel}/missing", f"{rel}/.sh"]
    return rels


def test_folder_files_are_the_folders_listing(corpus: Path) -> None:
    """For every folder of the corpus's workspaces, asked from two files in turn: the same
    files and the same inputs as a listing made for each target."""
    from baton_lsp.rules.command_paths import _folder_files
    from baton_lsp.workspace.index import WorkspaceIndex

    roots = [corpus, *sorted(p for p in (corpus / "other").glob("*") if (p / ".claude").is_dir())]
    compared = 0
    for root in roots:
        index = WorkspaceIndex(root)
        for rel in _targets_of(root):
            for name in ("a.md", "b.md"):
                path = str(root / ".claude" / "commands" / name)
                new = RuleContext(path=path, kind=Kind.COMMAND, index=index, root=root)
                old = RuleContext(path=path, kind=Kind.COMMAND, index=index, root=root)
                assert _folder_files(new, root, rel) == _old_folder_files(old, root, rel), rel
                assert new.depends_on == old.depends_on, rel
                compared += 1
    assert compared > 200


def test_folder_files_list_each_folder_once(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Two commands sourcing missing libraries of one folder: BTN315 lists `.claude/lib/`
    and its subfolder once, not once for each target; the findings are as before."""
    from baton_lsp.model.config import BatonConfig
    from baton_lsp.rules.engine import check_file
    from baton_lsp.workspace.index import WorkspaceIndex

    (tmp_path / ".claude" / "lib" / "core").mkdir(parents=True)
    (tmp_path / ".claude" / "lib" / "core" / "state.sh").write_text("f() { :; }\n")
    (tmp_path / ".claude" / "commands").mkdir()
    for name in ("a", "b"):
        (tmp_path / ".claude" / "commands" / f"{name}.md").write_text(
            "---\ndescription: Build\n---\n```bash\nsource .claude/lib/state.sh\n"
            "source .claude/lib/other.sh\nf\n```\n")
    listed: list[str] = []
    scandir = os.scandir

    def counting(path: Any) -> Any:
        listed.append(os.fspath(path))
        return scandir(path)

    index = WorkspaceIndex(tmp_path, BatonConfig(shellcheck="off"))
    monkeypatch.setattr(os, "scandir", counting)
    found = [f for name in ("a", "b")
             for f in check_file(index, tmp_path / ".claude" / "commands" / f"{name}.md")
             if f.code == "BTN315"]
    monkeypatch.undo()
    assert [f.message for f in found] == [
        "the block sources .claude/lib/state.sh, which does not exist; "
        ".claude/lib/core/state.sh has that name",
        "the block sources .claude/lib/other.sh, which does not exist"] * 2
    lib = str(tmp_path / ".claude" / "lib")
    assert sorted(p for p in listed if p.startswith(lib)) == [lib, f"{lib}/core"]


# -- BTN319: the lines naming `subagent_type`, found in the joined text -------------------------

def _old_lines_with(lines: list[str], word: str) -> list[int]:
    """The per-line test `lines_with` replaced."""
    return [no for no, line in enumerate(lines) if word in line]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["subagent_type", "subagent", "_type", "s", "x", "\r",
                                          ""]), max_size=5).map("".join), min_size=1,
                max_size=8),
       st.sampled_from(["subagent_type", "x", "s", ""]))  # a word holds no line break
def test_lines_with_are_the_lines_that_hold_the_word(lines: list[str], word: str) -> None:
    from baton_lsp.rules.base import lines_with

    assert lines_with("\n".join(lines), word) == _old_lines_with(lines, word)


def test_lines_with_on_the_corpus(corpus: Path) -> None:
    from baton_lsp.parse.text import split_lines
    from baton_lsp.rules.base import lines_with

    hits = 0
    for text in _corpus_texts(corpus):
        lines = split_lines(text)
        for word in ("subagent_type", "Task", "source", "$"):
            found = lines_with("\n".join(lines), word)
            assert found == _old_lines_with(lines, word)
            hits += len(found)
    assert hits > 1000


# -- BTN318/BTN320: the expansions of a line, read with `BashLine.expands` inline ---------------

def _old_record_uses(info: Any, no: int, line: BashLine) -> None:
    """`_record_uses` as it was."""
    for m in command_bash._USE_RE.finditer(line.text):
        if not line.expands(m.start()):
            continue
        if m.start() > 0 and line.text[m.start() - 1] == "\\":
            continue
        var = m.group(1) or m.group(2)
        info.uses.setdefault(var, (no, m.start(), m.end()))


def _uses_both_ways(content: str) -> int:
    new, old = command_bash._BlockVars(), command_bash._BlockVars()
    for no, line in enumerate(lexed(content)):
        command_bash._record_uses(new, no, line)
        _old_record_uses(old, no, line)
    assert new.uses == old.uses and list(new.uses) == list(old.uses), content
    return len(new.uses)


def test_expanding_classes_are_bashline_expands() -> None:
    for cls in "cdse#hH":
        assert (cls in command_bash._EXPANDS) == BashLine("$x", cls * 2).expands(0), cls


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(["$x", "${y}", "$x", "\\", "'", "\"", "#", " ", "$(", ")",
                                 "<<EOF\n", "<<'EOF'\n", "EOF", "\n", "`", "a"]),
                max_size=14).map("".join))
def test_record_uses_is_the_method_call_form(content: str) -> None:
    _uses_both_ways(content)


def test_record_uses_on_the_corpus(corpus: Path) -> None:
    assert sum(_uses_both_ways(text) for text in _corpus_texts(corpus)
               if "```bash" in text or text.startswith("#!")) > 500


def test_rule_contexts_text_is_their_lines_joined(corpus: Path, tmp_path: Path) -> None:
    """The text a check's contexts carry (`joined`, read by `lines_with` and `markdown`) is
    their lines joined, for every file of the corpus and for a file with `\r\n` and `\r`
    line ends (whose lines are joined again)."""
    from baton_lsp.rules.engine import read_for_rules
    from baton_lsp.workspace.index import WorkspaceIndex

    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "a.md").write_bytes(
        b"---\r\nname: a\r\ndescription: A.\r\n---\r\n\r\n# A\rtext\n")
    carried = 0
    for root in (corpus, tmp_path):
        index = WorkspaceIndex(root)
        for path, kind in sorted(index.files().items()):
            found = read_for_rules(index, path, kind)
            assert found is not None
            ctx = found[1]
            had = ctx.text is not None
            carried += had
            assert ctx.joined() == "\n".join(ctx.lines), path
            if root == tmp_path:  # a `\r` ends a line: the text is not carried
                assert not had and ctx.lines[5:] == ["# A", "text", ""]
    assert carried > 50


# -- BTN307/BTN308: the prose lines holding what their patterns need ----------------------------

def _old_prose_lines(ctx: RuleContext) -> list[tuple[int, str, bool]]:
    """`_prose_lines` as it was: every line after the front matter."""
    md = ctx.markdown()
    fenced = [False] * len(ctx.lines)
    for fence in md.fences:
        fenced[fence.start_line:fence.end_line + 1] = [True] * (
            fence.end_line + 1 - fence.start_line)
    return [(i, ctx.lines[i], fenced[i]) for i in range(md.frontmatter_end + 1, len(ctx.lines))]


_WORD_SETS = (("!`",), ("$", "{{"), ("{{",))


def _prose_both_ways(text: str) -> int:
    from baton_lsp.parse.text import split_lines
    from baton_lsp.rules.command_frontmatter import _prose_lines

    ctx = RuleContext(path="/w/.claude/commands/c.md", kind=Kind.COMMAND,
                      lines=split_lines(text))
    every = _old_prose_lines(ctx)
    kept = 0
    for words in _WORD_SETS:
        found = list(_prose_lines(ctx, *words))
        assert found == [t for t in every if any(w in t[1] for w in words)], (text, words)
        kept += len(found)
    return kept


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["---\n", "name: x\n", "```\n", "```bash\n", "~~~\n", "$1 ",
                                 "{{ARGUMENTS}}", "!`ls`", "text ", "\n", "  ", "$$", "{{"]),
                max_size=16).map("".join))
def test_prose_lines_with_words_are_the_lines_holding_them(text: str) -> None:
    _prose_both_ways(text)


def test_prose_lines_on_the_corpus(corpus: Path) -> None:
    assert sum(_prose_both_ways(text) for text in _corpus_texts(corpus)) > 1000
