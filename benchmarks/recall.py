"""Recall: inject one known defect at a time into real trees and see whether Baton reports it.

    python benchmarks/recall.py               # every tree found, up to 8 instances per kind
    python benchmarks/recall.py --sample      # the small deterministic subset CI runs
    python benchmarks/recall.py --per-kind 12 --seed 7 --tsv out.tsv
    python benchmarks/recall.py --subprocess  # one `baton check` process per mutation

Each tree (../shared/corpus, the author's trees of scripts/author-trees.sh, the trees of
benchmarks/recall_trees.txt, and $BATON_RECALL_UNSEEN/* (default /work/unseen/*)) is copied
once to a temporary directory. For each injection one file of the copy is rewritten,
`baton check --format json --no-cache` checks the files it touches (in this process through
the CLI's own `main`, or as a real subprocess), and the file is put back. An injection is
*found* when a finding that the un-mutated file did not have lies within 3 lines of the
injected spot; *found by code* when that finding's code is one the kind's table entry claims.
Pre-existing findings never count: they are matched away through the edit's line shift, and
how many injections a naive "any finding nearby" would have counted is reported as
`false found`.

Adding a kind is one `DefectKind(...)` entry in KINDS: a name, which files it applies to, a
function yielding candidate edits of one file's lines, and the codes that claim it. A kind is
*claimed* when one of its codes is a registered rule for that file kind; kinds whose codes are
planned but not yet registered show as `pending`. A range claims a kind as soon as any code in
it is registered, so when a branch's rules land, narrow the range to the code that reports the
kind (a kind another code of the range does not cover otherwise shows as claimed and missed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
UNSEEN = Path(os.environ.get("BATON_RECALL_UNSEEN") or "/work/unseen")
RECALL_TREES = Path(__file__).with_name("recall_trees.txt")
"""Further public trees (owner/name commit), extracted by `AUTHOR_TREES_LIST=benchmarks/
recall_trees.txt scripts/author-trees.sh ~/.cache/baton-recall-trees`."""
NEAR = 3
"""An injection counts as found by a finding at most this many lines from its spot."""
SKIP_DIRS = frozenset({".git", ".lake", "node_modules", ".venv", "__pycache__", ".cache"})
MAX_BYTES = 2_000_000


class MutationError(Exception):
    """A mutator produced no change, or the rewritten file does not hold what it wrote."""


# --------------------------------------------------------------------------- text helpers

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Fence:
    open: int
    close: int | None
    info: str
    indent: int = 0
    """Spaces before the opening fence: an indented one may sit in a list item, which closes
    it when the item ends."""


def fences(lines: Sequence[str]) -> list[Fence]:
    """CommonMark fence pairing: closed only by the same character, at least as long, with
    nothing but blanks after it."""
    out: list[Fence] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i].rstrip("\r\n"))
        if not m or (m.group(2)[0] == "`" and "`" in m.group(3)):
            i += 1
            continue
        mark, info = m.group(2), m.group(3).strip()
        close = None
        for j in range(i + 1, len(lines)):
            c = re.match(r"^ {0,3}(`{3,}|~{3,})\s*$", lines[j].rstrip("\r\n"))
            if c and c.group(1)[0] == mark[0] and len(c.group(1)) >= len(mark):
                close = j
                break
        out.append(Fence(i, close, info, len(m.group(1))))
        if close is None:
            break
        i = close + 1
    return out


def fenced_mask(lines: Sequence[str]) -> list[bool]:
    """True for every line of a fenced block, fence lines included."""
    mask = [False] * len(lines)
    for f in fences(lines):
        for k in range(f.open, (f.close if f.close is not None else len(lines) - 1) + 1):
            mask[k] = True
    return mask


def frontmatter(lines: Sequence[str]) -> tuple[int, int] | None:
    """(index of the opening `---`, index of the closing one), or None."""
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None
    for j in range(1, min(len(lines), 200)):
        if lines[j].rstrip("\r\n") == "---":
            return 0, j
    return None


def eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")):] or "\n"


def typo(word: str) -> str:
    """A transposition typo of `word` (two adjacent letters swapped near its middle), or the
    word unchanged when no such swap changes it."""
    order = sorted(range(len(word) - 1), key=lambda k: (abs(k - (len(word) - 2) // 2), k))
    for k in order:
        a, b = word[k], word[k + 1]
        if a.isalpha() and b.isalpha() and a != b and k > 0:
            return word[:k] + b + a + word[k + 2:]
    return word


def bash_blocks(lines: Sequence[str]) -> list[Fence]:
    return [f for f in fences(lines) if f.close is not None
            and f.info.split()[:1] in (["bash"], ["sh"], ["shell"])]


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Source:
    """One file of a tree, as the mutators see it."""

    tree: Path
    rel: str
    lines: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.tree / self.rel


@dataclass(frozen=True)
class Edit:
    """A candidate injection: the file's new lines and the 0-based spots of the defect in the
    new text (`others`: spots in other files, which are checked too)."""

    lines: tuple[str, ...]
    spots: tuple[int, ...]
    others: tuple[tuple[str, int], ...] = ()
    what: str = ""


Finder = Callable[[Source], Iterator[Edit]]


@dataclass(frozen=True)
class DefectKind:
    name: str
    description: str
    applies: Callable[[str], bool]
    find: Finder
    claims: tuple[str, ...] = ()
    """Codes (`BTN130`) or ranges (`BTN801-BTN819`) of the rules that claim the kind."""
    file_kind: str | None = None
    """Baton's Kind of the files it mutates, when one exists (a rule claims the kind only if
    it runs on that kind)."""


@dataclass
class Injection:
    kind: str
    author: str
    rel: str
    spots: list[tuple[str, int]]
    what: str
    found: bool = False
    found_by_code: bool = False
    false_found: bool = False
    elsewhere: bool = False
    """Not found, but a new finding lies further away in a file it touches."""
    codes: list[str] = field(default_factory=list)


def replaced(src: Source, i: int, new: str | Sequence[str]) -> tuple[str, ...]:
    body = [new] if isinstance(new, str) else list(new)
    return src.lines[:i] + tuple(body) + src.lines[i + 1:]


def inserted(src: Source, i: int, new: Sequence[str]) -> tuple[str, ...]:
    return src.lines[:i] + tuple(new) + src.lines[i:]


def deleted(src: Source, i: int, n: int = 1) -> tuple[str, ...]:
    return src.lines[:i] + src.lines[i + n:]


def resolves(src: Source, target: str) -> Path:
    return (src.path.parent / target).resolve()


# --------------------------------------------------------------------------- file predicates


def _parts(rel: str) -> list[str]:
    return rel.split("/")


def is_plan(rel: str) -> bool:
    p = _parts(rel)
    return rel.endswith(".md") and "plans" in p and ".opencode" not in p


def _under(p: list[str], folder: str) -> bool:
    """`.claude/<folder>/...` or a plugin's `plugins/<name>/<folder>/...`."""
    if folder not in p:
        return False
    k = p.index(folder)
    return k > 0 and (p[k - 1] == ".claude" or "plugins" in p[:k - 1])


def is_agent(rel: str) -> bool:
    p = _parts(rel)
    return rel.endswith(".md") and _under(p, "agents") and "templates" not in p \
        and p[-1] != "README.md"


def is_command(rel: str) -> bool:
    p = _parts(rel)
    return rel.endswith(".md") and _under(p, "commands") and p[-1] != "README.md"


def is_task_file(rel: str) -> bool:
    """Where `Task {` blocks are read: commands and agents."""
    return is_command(rel) or is_agent(rel)


def is_skill(rel: str) -> bool:
    p = _parts(rel)
    return p[-1] == "SKILL.md" and "skills" in p


def is_context(rel: str) -> bool:
    """A context document: `.claude/context/**.md` or `.opencode/context/**.md`."""
    p = _parts(rel)
    return rel.endswith(".md") and "context" in p and p.index("context") > 0 \
        and p[p.index("context") - 1] in (".claude", ".opencode")


def is_settings(rel: str) -> bool:
    p = _parts(rel)
    return len(p) >= 2 and p[-2] == ".claude" and p[-1] in ("settings.json", "settings.local.json")


def is_mcp(rel: str) -> bool:
    return _parts(rel)[-1] == ".mcp.json"


def is_claude_md(rel: str) -> bool:
    return _parts(rel)[-1] == "CLAUDE.md"


def is_checkpoint(rel: str) -> bool:
    p = _parts(rel)
    return rel.endswith(".json") and "checkpoints" in p and ".claude" in p


def is_errors_log(rel: str) -> bool:
    return _parts(rel)[-1] == "errors.jsonl"


def is_registry(rel: str) -> bool:
    p = _parts(rel)
    return p[-1] == "state.json" and len(p) >= 2 and p[-2] == "specs"


def is_opencode_agent(rel: str) -> bool:
    p = _parts(rel)
    return rel.endswith(".md") and ".opencode" in p and ("agent" in p or "agents" in p)


# --------------------------------------------------------------------------- plans

_PHASE = re.compile(r"^(#{2,4})\s+Phase\s+(\d+)\b")
_DEP = re.compile(r"^(\s*(?:[-*]\s+)?(?:\*\*Depends on\*\*:|\*\*Dependencies\*\*:|"
                  r"dependencies:|depends_on:)\s*)(.*?)(\s*)$", re.IGNORECASE)
_DEP_VALUE = re.compile(
    r"^(none|\[\s*\]|\[?\s*(?:phase\s*)?\d+(?:\s*,\s*(?:phase\s*)?\d+)*\s*\]?)$", re.IGNORECASE)


@dataclass(frozen=True)
class Phase:
    number: int
    heading: int
    end: int
    dep: int | None
    deps: tuple[int, ...]


def phases(lines: Sequence[str]) -> list[Phase]:
    """Phase sections (outside fences) with their one unambiguous numeric dependency line."""
    mask = fenced_mask(lines)
    heads = [(i, int(m.group(2)), len(m.group(1))) for i, line in enumerate(lines)
             if not mask[i] and (m := _PHASE.match(line))]
    out: list[Phase] = []
    for n, (i, number, _level) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        deps = [k for k in range(i + 1, end) if not mask[k] and _DEP.match(lines[k])]
        dep, values = None, ()
        if len(deps) == 1:
            m = _DEP.match(lines[deps[0]])
            assert m is not None
            value = m.group(2).strip()
            if _DEP_VALUE.match(value):
                dep = deps[0]
                values = tuple(int(x) for x in re.findall(r"\d+", value))
        out.append(Phase(number, i, end, dep, values))
    return out


def _unique_phases(lines: Sequence[str]) -> list[Phase]:
    found = phases(lines)
    numbers = [p.number for p in found]
    return found if len(numbers) == len(set(numbers)) and len(found) >= 2 else []


def _with_deps(line: str, numbers: Sequence[int]) -> str:
    m = _DEP.match(line)
    assert m is not None
    value = m.group(2).strip()
    if value.startswith("["):
        body = "[" + ", ".join(str(n) for n in numbers) + "]"
    elif re.search(r"phase", value, re.IGNORECASE):
        body = ", ".join(f"Phase {n}" for n in numbers)
    else:
        body = ", ".join(str(n) for n in numbers)
    return m.group(1) + body + eol(line)


def find_unknown_dependency(src: Source) -> Iterator[Edit]:
    found = _unique_phases(src.lines)
    ghost = max((p.number for p in found), default=0) + 10
    for p in found:
        if p.dep is not None:
            new = _with_deps(src.lines[p.dep], [*p.deps, ghost])
            yield Edit(replaced(src, p.dep, new), (p.dep,), what=f"Phase {p.number} -> {ghost}")


def find_self_dependency(src: Source) -> Iterator[Edit]:
    for p in _unique_phases(src.lines):
        if p.dep is not None and p.number not in p.deps:
            new = _with_deps(src.lines[p.dep], [*p.deps, p.number])
            yield Edit(replaced(src, p.dep, new), (p.dep,), what=f"Phase {p.number} on itself")


def find_cycle(src: Source) -> Iterator[Edit]:
    found = _unique_phases(src.lines)
    by_number = {p.number: p for p in found}
    for p in found:
        for q_number in p.deps:
            q = by_number.get(q_number)
            if q is None or q.dep is None or p.dep is None or p.number in q.deps \
                    or q.number == p.number:
                continue
            new = _with_deps(src.lines[q.dep], [*q.deps, p.number])
            yield Edit(replaced(src, q.dep, new), (q.dep, p.dep),
                       what=f"Phase {q.number} <-> Phase {p.number}")
            break


def find_duplicate_phase(src: Source) -> Iterator[Edit]:
    found = _unique_phases(src.lines)
    numbers = {p.number for p in found}
    for p in found[1:]:
        if p.number - 1 in numbers:
            line = src.lines[p.heading]
            new = re.sub(r"(Phase\s+)\d+", rf"\g<1>{p.number - 1}", line, count=1)
            yield Edit(replaced(src, p.heading, new), (p.heading,),
                       what=f"Phase {p.number} renumbered {p.number - 1}")


_MARKER = re.compile(r"\[(COMPLETED?|NOT STARTED|IN PROGRESS|BLOCKED)\]\s*$")


def find_status_typo(src: Source) -> Iterator[Edit]:
    mask = fenced_mask(src.lines)
    for i, line in enumerate(src.lines):
        if mask[i] or not _PHASE.match(line):
            continue
        m = _MARKER.search(line.rstrip("\r\n"))
        if m:
            bad = typo(m.group(1))
            new = line[:m.start(1)] + bad + line[m.end(1):]
            yield Edit(replaced(src, i, new), (i,), what=f"[{m.group(1)}] -> [{bad}]")


def _last_fence_unclosed(src: Source, heading: re.Pattern[str]) -> Iterator[Edit]:
    """Delete the closing fence of the file's last block when a heading matching `heading`
    follows it: the block is never closed and swallows that heading."""
    fs = fences(src.lines)
    if fs and fs[-1].close is not None and fs[-1].indent == 0:
        f = fs[-1]
        assert f.close is not None
        if any(heading.match(src.lines[k]) for k in range(f.close + 1, len(src.lines))):
            yield Edit(deleted(src, f.close), (f.open, f.close),
                       what=f"closing fence of line {f.open + 1} removed (never closed)")


def find_plan_unclosed_fence(src: Source) -> Iterator[Edit]:
    return _last_fence_unclosed(src, _PHASE)


def find_md_unclosed_fence(src: Source) -> Iterator[Edit]:
    return _last_fence_unclosed(src, re.compile(r"^#{1,6}\s"))


def find_fence_swallows_phase(src: Source) -> Iterator[Edit]:
    """Delete a block's closing fence where a phase heading comes before the next fence: a
    later fence closes it, and the phase heading between renders as code."""
    fs = fences(src.lines)
    for n, f in enumerate(fs[:-1]):
        if f.close is None:
            return
        between = range(f.close + 1, fs[n + 1].open)
        if f.indent == 0 and any(_PHASE.match(src.lines[k]) for k in between):
            yield Edit(deleted(src, f.close), (f.open, f.close),
                       what=f"closing fence of line {f.open + 1} removed (a later one closes it)")


# --------------------------------------------------------------------------- links

_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")


def find_broken_link(src: Source) -> Iterator[Edit]:
    mask = fenced_mask(src.lines)
    for i, line in enumerate(src.lines):
        if mask[i]:
            continue
        code_spans = [m.span() for m in re.finditer(r"`[^`]*`", line)]
        for m in _LINK.finditer(line):
            target = m.group(1)
            if any(a <= m.start() < b for a, b in code_spans) or ":" in target \
                    or target.startswith(("#", "/", "~", "<")):
                continue
            path_part = target.split("#", 1)[0]
            if not path_part or not resolves(src, path_part).is_file():
                continue
            head, _, base = path_part.rpartition("/")
            stem, dot, ext = base.rpartition(".")
            bad_stem = typo(stem) if dot else typo(base)
            bad = (head + "/" if head else "") + (bad_stem + dot + ext if dot else bad_stem)
            if bad == path_part or resolves(src, bad).exists():
                continue
            new = line[:m.start(1)] + bad + target[len(path_part):] + line[m.end(1):]
            yield Edit(replaced(src, i, new), (i,), what=f"{path_part} -> {bad}")
            break


# --------------------------------------------------------------------------- front matter


def readable_frontmatter(src: Source) -> tuple[int, int] | None:
    """The front matter's fences when it is a YAML mapping (a defect injected into one that
    is already unreadable would be no new defect)."""
    fm = frontmatter(src.lines)
    if fm is None:
        return None
    try:
        data = yaml.safe_load("".join(src.lines[fm[0] + 1:fm[1]]))
    except yaml.YAMLError:
        return None
    return fm if isinstance(data, dict) else None


def _fm_key(src: Source, key: str) -> Iterator[tuple[int, re.Match[str]]]:
    fm = readable_frontmatter(src)
    if fm is None:
        return
    for i in range(fm[0] + 1, fm[1]):
        m = re.match(rf"^({re.escape(key)}):(\s*)(.*?)(\s*)$", src.lines[i])
        if m:
            yield i, m


def find_model_typo(src: Source) -> Iterator[Edit]:
    for i, m in _fm_key(src, "model"):
        value = m.group(3).strip("'\"")
        if re.fullmatch(r"(sonnet|opus|haiku|claude-[a-z0-9.-]+)", value):
            bad = typo(value)
            yield Edit(replaced(src, i, f"model: {bad}{eol(src.lines[i])}"), (i,),
                       what=f"model {value} -> {bad}")


_TOOLS = ("Read", "Write", "Edit", "Grep", "Glob", "Bash", "WebSearch", "WebFetch", "TodoWrite")


def find_tool_typo(src: Source) -> Iterator[Edit]:
    for i, m in _fm_key(src, "tools"):
        value = m.group(3)
        hit = next((t for t in _TOOLS if re.search(rf"(?<![\w(]){t}(?![\w(])", value)), None)
        if value and hit:
            new = re.sub(rf"(?<![\w(]){hit}(?![\w(])", typo(hit), value, count=1)
            yield Edit(replaced(src, i, f"tools: {new}{eol(src.lines[i])}"), (i,),
                       what=f"tool {hit} -> {typo(hit)}")
            return
        fm = frontmatter(src.lines)
        assert fm is not None
        for k in range(i + 1, fm[1]):
            item = re.match(r"^(\s+-\s+)(['\"]?)(\w+)(['\"]?)\s*$", src.lines[k])
            if not item:
                break
            if item.group(3) in _TOOLS:
                new = item.group(1) + item.group(2) + typo(item.group(3)) + item.group(4)
                yield Edit(replaced(src, k, new + eol(src.lines[k])), (k,),
                           what=f"tool {item.group(3)} -> {typo(item.group(3))}")
                return


def _value_end(src: Source, i: int, end: int) -> int:
    """Index after the key at `i` and its continuation lines (indented or block scalar)."""
    k = i + 1
    while k < end and (src.lines[k].startswith((" ", "\t")) or not src.lines[k].strip()):
        k += 1
    return k


def find_missing_description(src: Source) -> Iterator[Edit]:
    fm = frontmatter(src.lines)
    for i, _m in _fm_key(src, "description"):
        assert fm is not None
        n = _value_end(src, i, fm[1]) - i
        yield Edit(deleted(src, i, n), (fm[0], min(i, fm[1] - n)), what="description removed")


def find_unclosed_frontmatter(src: Source) -> Iterator[Edit]:
    fm = readable_frontmatter(src)
    if fm is not None and fm[1] > 1:
        yield Edit(deleted(src, fm[1]), (fm[0], fm[1]), what="closing --- removed")


def find_duplicate_key(src: Source) -> Iterator[Edit]:
    fm = frontmatter(src.lines)
    for i, m in _fm_key(src, "model"):
        assert fm is not None
        other = "opus" if "opus" not in m.group(3) else "sonnet"
        yield Edit(inserted(src, fm[1], [f"model: {other}\n"]), (fm[1], i),
                   what="second model: key")


def find_agent_hook_event(src: Source) -> Iterator[Edit]:
    """Add a `hooks:` block whose event name Claude Code does not have (an agent without one)."""
    fm = readable_frontmatter(src)
    if fm is None or any(re.match(r"^hooks\s*:", src.lines[k]) for k in range(1, fm[1])):
        return
    block = ["hooks:\n", "  PostToolUses:\n", "    - matcher: \"Bash\"\n", "      hooks:\n",
             "        - type: command\n", "          command: \"echo done\"\n"]
    yield Edit(inserted(src, fm[1], block), (fm[1] + 1,), what="hooks event PostToolUses")


def _agent_names(src: Source) -> dict[str, tuple[str, int]]:
    """name -> (rel, line index) of the other agents in the same directory."""
    out: dict[str, tuple[str, int]] = {}
    for other in sorted(src.path.parent.glob("*.md")):
        if other.name == src.path.name:
            continue
        try:
            lines = other.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError):
            continue
        peer = Source(src.tree, str(Path(src.rel).parent / other.name), tuple(lines))
        for i, m in _fm_key(peer, "name"):
            out.setdefault(m.group(3).strip("'\""), (peer.rel, i))
    return out


def find_duplicate_agent_name(src: Source) -> Iterator[Edit]:
    for i, m in _fm_key(src, "name"):
        mine = m.group(3).strip("'\"")
        for name, (rel, line) in sorted(_agent_names(src).items()):
            if name != mine and name:
                yield Edit(replaced(src, i, f"name: {name}{eol(src.lines[i])}"), (i,),
                           others=((rel, line),), what=f"name {mine} -> {name} (as {rel})")
                return


def find_skill_name(src: Source) -> Iterator[Edit]:
    folder = _parts(src.rel)[-2]
    for i, m in _fm_key(src, "name"):
        if m.group(3).strip("'\"") == folder and typo(folder) != folder:
            yield Edit(replaced(src, i, f"name: {typo(folder)}{eol(src.lines[i])}"), (i,),
                       what=f"name {folder} -> {typo(folder)}")


def find_command_key_typo(src: Source) -> Iterator[Edit]:
    for key in ("allowed-tools", "argument-hint", "description"):
        for i, _m in _fm_key(src, key):
            bad = typo(key)
            yield Edit(replaced(src, i, bad + src.lines[i][len(key):]), (i,),
                       what=f"{key} -> {bad}")
            return


def find_dependent_agent_typo(src: Source) -> Iterator[Edit]:
    for i, m in _fm_key(src, "dependent-agents"):
        names = [n.strip() for n in m.group(3).split(",") if n.strip()]
        agents = _project_root(src) / ".claude" / "agents"
        for name in names:
            bad = typo(name)
            if (agents / f"{name}.md").is_file() and not (agents / f"{bad}.md").exists():
                new = src.lines[i].replace(name, bad, 1)
                yield Edit(replaced(src, i, new), (i,), what=f"{name} -> {bad}")
                return


# --------------------------------------------------------------------------- commands


_STATE_LIBRARY = re.compile(
    r"\b(?:append_workflow_state|load_workflow_state|init_workflow_state|"
    r"state-persistence\.sh|STATE_FILE)\b")
_PROJECT_LIBRARY = re.compile(r"^\s*(?:source|\.)\s+[\"']?\S*\.(?:claude|opencode)/\S+",
                              re.MULTILINE)


def _bash_text(src: Source) -> list[str]:
    return ["".join(src.lines[b.open + 1:b.close]) for b in bash_blocks(src.lines)]


def stateful(src: Source) -> bool:
    """The seeds' workflow-bash convention as README states it: a bash block uses the state
    library (`append_workflow_state`, `STATE_FILE`, …). BTN320 reads these commands."""
    return any(_STATE_LIBRARY.search(text) for text in _bash_text(src))


def scripted(src: Source) -> bool:
    """The script-blocks convention: a bash block uses the state library or sources a file of
    the project's `.claude/` (or `.opencode/`) tree; BTN330 reads these commands' blocks as
    scripts, elsewhere a bash fence may be an example."""
    return any(_STATE_LIBRARY.search(text) or _PROJECT_LIBRARY.search(text)
               for text in _bash_text(src))


def find_bash_syntax_error(src: Source) -> Iterator[Edit]:
    if scripted(src):
        yield from _bash_syntax_error(src)


def find_bash_syntax_error_elsewhere(src: Source) -> Iterator[Edit]:
    if not scripted(src):
        yield from _bash_syntax_error(src)


def _bash_syntax_error(src: Source) -> Iterator[Edit]:
    """`if ...; then` written `if ...; do`: bash refuses the whole block."""
    for b in bash_blocks(src.lines):
        assert b.close is not None
        for k in range(b.open + 1, b.close):
            m = re.match(r"^(\s*if\s.*;\s*)then(\s*)$", src.lines[k])
            if m:
                yield Edit(replaced(src, k, m.group(1) + "do" + m.group(2)), (k,),
                           what="if ...; do")
                break


def _two_blocks(src: Source, follows: Callable[[Source], bool]) -> tuple[Fence, Fence] | None:
    blocks = bash_blocks(src.lines)
    return (blocks[0], blocks[1]) if len(blocks) >= 2 and follows(src) else None


def find_pid_var_across_blocks(src: Source) -> Iterator[Edit]:
    """A state-file path built from `$$` at the top of the first bash block, read at the top
    of the second (a new shell: the variable is empty there)."""
    pair = _two_blocks(src, stateful)
    if pair:
        first, second = pair
        lines = inserted(src, second.open + 1, ['cat "$RECALL_STATE_FILE"\n'])
        lines = (*lines[:first.open + 1], 'RECALL_STATE_FILE="/tmp/recall_state_$$.txt"\n',
                 *lines[first.open + 1:])
        yield Edit(lines, (second.open + 2, first.open + 1), what="$$ path used a block later")


def find_pid_path_rebuilt(src: Source) -> Iterator[Edit]:
    """A literal `/tmp/x_$$.sh` written in the first bash block and sourced again in the
    second, where `$$` is another process's number."""
    pair = _two_blocks(src, scripted)
    if pair:
        first, second = pair
        lines = inserted(src, second.open + 1, ['source "/tmp/recall_vars_$$.sh"\n'])
        lines = (*lines[:first.open + 1], 'echo "PHASE=1" > "/tmp/recall_vars_$$.sh"\n',
                 *lines[first.open + 1:])
        yield Edit(lines, (second.open + 2, first.open + 1), what="/tmp/x_$$.sh rebuilt")


def find_export_across_blocks(src: Source) -> Iterator[Edit]:
    """`export VAR=...` in the first bash block, `$VAR` used at the top of the second: an
    export does not outlive the shell of its block."""
    pair = _two_blocks(src, scripted)
    if pair:
        first, second = pair
        lines = inserted(src, second.open + 1, ['echo "Mode: $RECALL_MODE"\n'])
        lines = (*lines[:first.open + 1], 'export RECALL_MODE="full"\n',
                 *lines[first.open + 1:])
        yield Edit(lines, (second.open + 2, first.open + 1), what="export used a block later")


def find_unclosed_bash_fence(src: Source) -> Iterator[Edit]:
    """Remove the closing fence of the last bash block when no fence follows it."""
    fs = fences(src.lines)
    if fs and fs[-1].close is not None and fs[-1].info.split()[:1] == ["bash"] \
            and fs[-1].indent == 0:
        f = fs[-1]
        assert f.close is not None
        yield Edit(deleted(src, f.close), (f.open, f.close), what="last ```bash never closed")


def find_arguments_in_bash(src: Source) -> Iterator[Edit]:
    """`${ARGUMENTS}` in a bash block: the pinned claude replaces only the literal `$ARGUMENTS`
    (`replaceAll("$ARGUMENTS", ...)`), so the shell sees an empty variable."""
    for b in bash_blocks(src.lines):
        yield Edit(inserted(src, b.open + 1, ['DESCRIPTION="${ARGUMENTS}"\n']), (b.open + 1,),
                   what="${ARGUMENTS} in a bash block")
        return


def is_extension_skill(rel: str) -> bool:
    """A skill of an extension (`.claude/extensions/<name>/skills/<skill>/SKILL.md`), which the
    tree's loader copies into `.claude/skills/`."""
    p = _parts(rel)
    return is_skill(rel) and "extensions" in p and p.index("extensions") > 0 \
        and p[p.index("extensions") - 1] == ".claude"


def find_positional_in_function(src: Source) -> Iterator[Edit]:
    """A shell function reading `$1` in the first bash block of a skill that reads
    `$ARGUMENTS`: the pinned claude replaces `$1` with the invocation's argument."""
    if not any("$ARGUMENTS" in line for line in src.lines):
        return
    for b in bash_blocks(src.lines):
        yield Edit(inserted(src, b.open + 1, ["slug_of() {\n", '  local text="$1"\n', "}\n"]),
                   (b.open + 2,), what="$1 in a shell function")
        return


_RUN = re.compile(r"^(\s*(?:source|\.|bash|sh)\s+[\"']?(?:\$\{?CLAUDE_PROJECT_DIR\}?/)?)"
                  r"(\.claude/[\w./-]+\.sh)\b")


def _project_root(src: Source) -> Path:
    """The directory holding the file's `.claude/` (else the tree's root)."""
    parts = _parts(src.rel)
    if ".claude" in parts:
        return src.tree.joinpath(*parts[:parts.index(".claude")])
    return src.tree


def _find_script(src: Source, verbs: tuple[str, ...]) -> Iterator[Edit]:
    """A fenced line that runs or sources a project script that exists, the script's name
    given a typo."""
    mask = fenced_mask(src.lines)
    for i, line in enumerate(src.lines):
        m = _RUN.match(line)
        if not m or not mask[i] or m.group(1).split()[0] not in verbs:
            continue
        script = m.group(2)
        root = _project_root(src)
        head, _, base = script.rpartition("/")
        bad = f"{head}/{typo(base[:-3])}.sh"
        if (root / script).is_file() and not (root / bad).exists():
            new = line[:m.start(2)] + bad + line[m.end(2):]
            yield Edit(replaced(src, i, new), (i,), what=f"{script} -> {bad}")


def find_missing_source(src: Source) -> Iterator[Edit]:
    return _find_script(src, ("source", "."))


def find_missing_script(src: Source) -> Iterator[Edit]:
    return _find_script(src, ("bash", "sh"))


def _task_blocks(src: Source) -> Iterator[tuple[int, int]]:
    """(line of `Task {`, line of its closing `}`) for blocks closed on a line of their own."""
    for i, line in enumerate(src.lines):
        m = re.match(r"^(\s*)Task\s*\{\s*$", line)
        if not m:
            continue
        for k in range(i + 1, min(len(src.lines), i + 400)):
            if re.match(rf"^{m.group(1)}\}}\s*$", src.lines[k]):
                yield i, k
                break
            if re.match(r"^\s*Task\s*\{", src.lines[k]):
                break


def find_task_missing_field(src: Source) -> Iterator[Edit]:
    for start, end in _task_blocks(src):
        for k in range(start + 1, end):
            if re.match(r"^\s*description:\s*\"[^\"]*\"\s*$", src.lines[k]):
                yield Edit(deleted(src, k), (start, k), what="Task description: removed")
                return


def find_task_unclosed(src: Source) -> Iterator[Edit]:
    for start, end in _task_blocks(src):
        yield Edit(deleted(src, end), (start, end), what="Task { closing } removed")
        return


def find_unknown_subagent(src: Source) -> Iterator[Edit]:
    agents = {p.stem for p in (_project_root(src) / ".claude" / "agents").rglob("*.md")}
    for start, end in _task_blocks(src):
        for k in range(start + 1, end):
            m = re.match(r"^(\s*subagent_type:\s*\")([\w-]+)(\".*)$", src.lines[k], re.DOTALL)
            if m:
                bad = typo(m.group(2))
                if bad not in agents:
                    yield Edit(replaced(src, k, m.group(1) + bad + m.group(3)), (k,),
                               what=f"subagent_type {m.group(2)} -> {bad}")
                    return


_INJECTED = re.compile(r"(\.claude/agents/)([\w-]+)(\.md)")


def find_injected_agent_missing(src: Source) -> Iterator[Edit]:
    for start, end in _task_blocks(src):
        for k in range(start + 1, end):
            m = _INJECTED.search(src.lines[k])
            if not m:
                continue
            root = _project_root(src)
            bad = typo(m.group(2))
            if (root / ".claude/agents" / f"{m.group(2)}.md").is_file() and \
                    not (root / ".claude/agents" / f"{bad}.md").exists():
                line = src.lines[k]
                yield Edit(replaced(src, k, line[:m.start(2)] + bad + line[m.end(2):]), (k,),
                           what=f"{m.group(2)}.md -> {bad}.md")
                return


# --------------------------------------------------------------------------- JSON files


def find_json_comma(src: Source) -> Iterator[Edit]:
    """A comma at the end of a line removed: the file is no longer JSON."""
    for i, line in enumerate(src.lines):
        stripped = line.rstrip("\r\n")
        if stripped.endswith(",") and i > 0:
            yield Edit(replaced(src, i, stripped[:-1] + eol(line)), (i, i + 1),
                       what=f"comma at line {i + 1} removed")


def _json_key_lines(src: Source, key: str) -> Iterator[int]:
    for i, line in enumerate(src.lines):
        if re.match(rf'^\s*"{re.escape(key)}"\s*:', line):
            yield i


def find_settings_hook_event(src: Source) -> Iterator[Edit]:
    events = ("PreToolUse", "PostToolUse", "Stop", "SessionStart", "UserPromptSubmit",
              "SubagentStop", "Notification", "PreCompact", "SessionEnd")
    for event in events:
        for i in _json_key_lines(src, event):
            bad = typo(event)
            yield Edit(replaced(src, i, src.lines[i].replace(f'"{event}"', f'"{bad}"', 1)),
                       (i,), what=f"{event} -> {bad}")
            break


def find_settings_ignored_matcher(src: Source) -> Iterator[Edit]:
    """A tool-name `matcher` on a `Stop` or `UserPromptSubmit` hook (events that take no
    matcher): the hook still runs on every stop or prompt."""
    for event in ("Stop", "UserPromptSubmit"):
        for i in _json_key_lines(src, event):
            window = range(i + 1, min(len(src.lines), i + 4))
            hit = next((k for k in window
                        if re.match(r'^\s*"matcher"\s*:\s*"[^"]*"', src.lines[k])), None)
            if hit is not None:
                m = re.match(r'^(\s*"matcher"\s*:\s*)"[^"]*"(.*)$', src.lines[hit], re.DOTALL)
                assert m is not None
                yield Edit(replaced(src, hit, f'{m.group(1)}"Write|Edit"{m.group(2)}'), (hit,),
                           what=f"{event} matcher Write|Edit")
            elif i + 1 < len(src.lines) and re.match(r"^\s*\{\s*$", src.lines[i + 1]):
                indent = src.lines[i + 1][:len(src.lines[i + 1]) - len(src.lines[i + 1].lstrip())]
                yield Edit(inserted(src, i + 2, [f'{indent}  "matcher": "Write|Edit",\n']),
                           (i + 2,), what=f"{event} matcher Write|Edit added")
            break


def find_settings_permission_typo(src: Source) -> Iterator[Edit]:
    for i, line in enumerate(src.lines):
        m = re.match(r'^(\s*")(Bash|Read|Edit|Write|WebFetch)(\(.*)$', line, re.DOTALL)
        if m:
            bad = typo(m.group(2))
            yield Edit(replaced(src, i, m.group(1) + bad + m.group(3)), (i,),
                       what=f"permission {m.group(2)}(...) -> {bad}(...)")
            return


def find_checkpoint_missing_field(src: Source) -> Iterator[Edit]:
    for key in ("status", "workflow_type", "created_at"):
        for i in _json_key_lines(src, key):
            if src.lines[i].startswith('  "') and src.lines[i].rstrip().endswith(","):
                yield Edit(deleted(src, i), (0, i, max(0, i - 1)), what=f"{key} removed")
                break


def find_errors_not_json(src: Source) -> Iterator[Edit]:
    for i, line in enumerate(src.lines):
        stripped = line.rstrip("\r\n")
        if stripped.startswith("{") and stripped.endswith("}"):
            yield Edit(replaced(src, i, stripped[:-1] + eol(line)), (i,),
                       what=f"line {i + 1} loses its closing brace")


def find_errors_missing_field(src: Source) -> Iterator[Edit]:
    for i, line in enumerate(src.lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "error_type" in record:
            del record["error_type"]
            yield Edit(replaced(src, i, json.dumps(record) + eol(line)), (i,),
                       what=f"line {i + 1} without error_type")


def find_registry_wrong_type(src: Source) -> Iterator[Edit]:
    for i in _json_key_lines(src, "project_number"):
        m = re.match(r'^(\s*"project_number"\s*:\s*)(\d+)(.*)$', src.lines[i], re.DOTALL)
        if m:
            yield Edit(replaced(src, i, f'{m.group(1)}"{m.group(2)}"{m.group(3)}'), (i,),
                       what=f"project_number {m.group(2)} as a string")


_IMPORT = re.compile(r"(?:^|(?<=\s))@([\w.-][\w./-]*\.\w+)")
"""As Claude Code reads imports: `@` at the start or after a blank."""


def find_claude_md_import(src: Source) -> Iterator[Edit]:
    """An `@path` import outside code whose file exists, given a typo. Relative paths resolve
    from the importing file's folder (Claude Code's memory docs: "relative to the file
    containing the import, not the working directory"); the typo exists nowhere near."""
    mask = fenced_mask(src.lines)
    root = _project_root(src)
    for i, line in enumerate(src.lines):
        if mask[i]:
            continue
        spans = [m.span() for m in re.finditer(r"`[^`]*`", line)]
        for m in _IMPORT.finditer(line):
            target = m.group(1)
            if any(a <= m.start() < b for a, b in spans):
                continue
            if not resolves(src, target).is_file():
                continue
            head, _, base = target.rpartition("/")
            stem, _, ext = base.rpartition(".")
            bad = (head + "/" if head else "") + typo(stem) + "." + ext
            if bad == target or resolves(src, bad).exists() or (root / bad).exists():
                continue
            yield Edit(replaced(src, i, line[:m.start(1)] + bad + line[m.end(1):]), (i,),
                       what=f"@{target} -> @{bad}")
            break


def find_context_reference(src: Source) -> Iterator[Edit]:
    """A context document's `@.claude/...` (or `@.opencode/...`) reference outside code whose
    file exists from the project root, where agents read it, given a typo that exists
    neither there nor beside the file."""
    mask = fenced_mask(src.lines)
    parts = _parts(src.rel)
    top = ".claude" if ".claude" in parts else ".opencode"
    root = src.tree.joinpath(*parts[:parts.index(top)]) if top in parts else src.tree
    for i, line in enumerate(src.lines):
        if mask[i]:
            continue
        spans = [m.span() for m in re.finditer(r"`[^`]*`", line)]
        for m in _IMPORT.finditer(line):
            target = m.group(1)
            if any(a <= m.start() < b for a, b in spans) \
                    or not target.startswith((".claude/", ".opencode/")) \
                    or not (root / target).is_file():
                continue
            head, _, base = target.rpartition("/")
            stem, _, ext = base.rpartition(".")
            bad = (head + "/" if head else "") + typo(stem) + "." + ext
            if bad == target or resolves(src, bad).exists() or (root / bad).exists():
                continue
            yield Edit(replaced(src, i, line[:m.start(1)] + bad + line[m.end(1):]), (i,),
                       what=f"@{target} -> @{bad}")
            break


_OPENCODE_TOOLS = ("read", "write", "edit", "glob", "grep", "bash", "list", "patch",
                   "webfetch", "todowrite", "todoread", "task")


def find_opencode_tool(src: Source) -> Iterator[Edit]:
    """A key of an OpenCode agent's `tools:` map given a typo."""
    fm = frontmatter(src.lines)
    for i, _m in _fm_key(src, "tools"):
        assert fm is not None
        for k in range(i + 1, fm[1]):
            m = re.match(r"^(\s+)(\w+)(\s*:.*)$", src.lines[k], re.DOTALL)
            if not m:
                break
            if m.group(2) in _OPENCODE_TOOLS and typo(m.group(2)) != m.group(2):
                bad = typo(m.group(2))
                yield Edit(replaced(src, k, m.group(1) + bad + m.group(3)), (k,),
                           what=f"tool {m.group(2)} -> {bad}")
                return


# --------------------------------------------------------------------------- the table


KINDS: tuple[DefectKind, ...] = (
    DefectKind("plan-broken-link", "a relative link in a plan to a file that is not there",
               is_plan, find_broken_link, ("BTN130",), "plan"),
    DefectKind("plan-unknown-dependency", "a phase depends on a phase number the plan lacks",
               is_plan, find_unknown_dependency, ("BTN101",), "plan"),
    DefectKind("plan-self-dependency", "a phase lists itself as a dependency",
               is_plan, find_self_dependency, ("BTN102",), "plan"),
    DefectKind("plan-dependency-cycle", "two phases depend on each other",
               is_plan, find_cycle, ("BTN103",), "plan"),
    DefectKind("plan-duplicate-phase", "a phase heading renumbered to the previous phase's",
               is_plan, find_duplicate_phase, ("BTN110",), "plan"),
    DefectKind("plan-status-typo", "a phase status marker with two letters swapped",
               is_plan, find_status_typo, ("BTN113",), "plan"),
    DefectKind("plan-unclosed-fence", "the closer of a plan's last fence, before a phase, "
               "removed",
               is_plan, find_plan_unclosed_fence, ("BTN140", "BTN003"), "plan"),
    DefectKind("plan-fence-swallows-phase", "a fence's closer removed; a later one swallows a "
               "phase heading", is_plan, find_fence_swallows_phase, ("BTN003",), "plan"),
    DefectKind("agent-model-typo", "an agent's `model:` with two letters swapped",
               is_agent, find_model_typo, ("BTN207",), "agent"),
    DefectKind("agent-unknown-tool", "a tool in an agent's `tools:` with two letters swapped",
               is_agent, find_tool_typo, ("BTN206",), "agent"),
    DefectKind("agent-missing-description", "an agent's `description:` removed",
               is_agent, find_missing_description, ("BTN204",), "agent"),
    DefectKind("agent-unclosed-frontmatter", "an agent's closing `---` removed",
               is_agent, find_unclosed_frontmatter, ("BTN201", "BTN202", "BTN203"), "agent"),
    DefectKind("agent-duplicate-key", "a second `model:` in an agent's front matter",
               is_agent, find_duplicate_key, ("BTN209",), "agent"),
    DefectKind("agent-hook-event", "an agent `hooks:` block with an event Claude Code lacks",
               is_agent, find_agent_hook_event, ("BTN802",), "agent"),
    DefectKind("agent-duplicate-name", "an agent's `name:` set to another agent's",
               is_agent, find_duplicate_agent_name, ("BTN211",), "agent"),
    DefectKind("agent-unclosed-fence", "the closer of an agent's last fence, before a "
               "heading, removed", is_agent, find_md_unclosed_fence, ("BTN003",), "agent"),
    DefectKind("agent-broken-link", "a relative link in an agent to a file that is not there",
               is_agent, find_broken_link, ("BTN133",), "agent"),
    DefectKind("command-key-typo", "a command front-matter key with two letters swapped",
               is_command, find_command_key_typo, ("BTN301",), "command"),
    DefectKind("command-dependent-agent", "`dependent-agents` names an agent with a typo",
               is_command, find_dependent_agent_typo, ("BTN305",), "command"),
    DefectKind("command-bash-syntax", "`if ...; then` written `if ...; do` in a bash block "
               "of a command whose blocks are scripts", is_command, find_bash_syntax_error,
               ("BTN330",), "command"),
    DefectKind("command-bash-syntax-elsewhere", "the same in a command that neither sources "
               ".claude/lib nor uses the state library (outside ShellCheck's default scope, "
               "where a bash block may be an example: unclaimed by choice)", is_command,
               find_bash_syntax_error_elsewhere, (), "command"),
    DefectKind("command-pid-var-across-blocks", "a `$$` state path set in one bash block, "
               "read in the next (commands that use the state library)", is_command,
               find_pid_var_across_blocks, ("BTN320",), "command"),
    DefectKind("command-pid-path-rebuilt", "`/tmp/x_$$.sh` written in one bash block, sourced "
               "in the next (commands whose blocks are scripts)", is_command,
               find_pid_path_rebuilt, ("BTN317",), "command"),
    DefectKind("command-export-across-blocks", "`export VAR` in one bash block, `$VAR` in "
               "the next (commands whose blocks are scripts)", is_command,
               find_export_across_blocks, ("BTN318",), "command"),
    DefectKind("command-unclosed-bash-fence", "the last ```bash block never closed",
               is_command, find_unclosed_bash_fence, ("BTN325", "BTN003"), "command"),
    DefectKind("command-arguments-in-bash", "`${ARGUMENTS}` inside a bash block",
               is_command, find_arguments_in_bash, ("BTN316",), "command"),
    DefectKind("command-missing-source", "`source .claude/.../x.sh` of a file not there",
               is_command, find_missing_source, ("BTN315",), "command"),
    DefectKind("command-missing-script", "`bash .claude/scripts/x.sh` of a script not there",
               is_command, find_missing_script, ("BTN315",), "command"),
    DefectKind("skill-missing-script", "a skill runs `bash .claude/scripts/x.sh`, not there",
               is_skill, find_missing_script, ("BTN315",), "skill"),
    DefectKind("task-missing-field", "a `Task {` block's `description:` removed",
               is_task_file, find_task_missing_field, ("BTN310",), "command"),
    DefectKind("task-unclosed", "a `Task {` block's closing `}` removed",
               is_task_file, find_task_unclosed, ("BTN311",), "command"),
    DefectKind("task-unknown-subagent", "`subagent_type` names an agent that does not exist",
               is_task_file, find_unknown_subagent, ("BTN319",), "command"),
    DefectKind("task-injected-agent-missing", "a Task prompt's agent file path with a typo",
               is_task_file, find_injected_agent_missing, ("BTN313",), "command"),
    DefectKind("skill-broken-link", "a relative link in a skill to a file that is not there",
               is_skill, find_broken_link, ("BTN133",), "skill"),
    DefectKind("extension-skill-positional", "`$1` in a shell function of an extension's "
               "skill that reads $ARGUMENTS", is_extension_skill, find_positional_in_function,
               ("BTN230",), "skill"),
    DefectKind("skill-name-mismatch", "a skill's `name:` no longer its folder's name (the "
               "pinned claude registers the skill by its folder and invokes it by either name: "
               "unclaimed by choice)", is_skill, find_skill_name, (), "skill"),
    DefectKind("settings-hook-event", "a settings.json hook event with two letters swapped",
               is_settings, find_settings_hook_event, ("BTN802",)),
    DefectKind("settings-invalid-json", "a comma removed from settings.json",
               is_settings, find_json_comma, ("BTN801",)),
    DefectKind("settings-ignored-matcher", "a tool `matcher` on a Stop/UserPromptSubmit hook",
               is_settings, find_settings_ignored_matcher, ("BTN803",)),
    DefectKind("settings-permission-tool", "a permission rule's tool name with two letters "
               "swapped", is_settings, find_settings_permission_typo, ("BTN814",)),
    DefectKind("mcp-invalid-json", "a comma removed from .mcp.json",
               is_mcp, find_json_comma, ("BTN820",)),
    DefectKind("claude-md-missing-import", "a CLAUDE.md `@path` import of a missing file",
               is_claude_md, find_claude_md_import, ("BTN830",)),
    DefectKind("context-broken-link", "a relative link in a context document to a file that "
               "is not there", is_context, find_broken_link, ("BTN133",), "context"),
    DefectKind("context-missing-reference", "a context document's `@.claude/...` reference "
               "to a missing file", is_context, find_context_reference, ("BTN836",), "context"),
    DefectKind("checkpoint-missing-field", "a checkpoint without `status`/`workflow_type`/…",
               is_checkpoint, find_checkpoint_missing_field,
               ("BTN410", "BTN411", "BTN417"), "checkpoint"),
    DefectKind("errors-log-not-json", "an errors.jsonl line that is not JSON",
               is_errors_log, find_errors_not_json, ("BTN401",), "errors_log"),
    DefectKind("errors-log-missing-field", "an errors.jsonl record without `error_type`",
               is_errors_log, find_errors_missing_field, ("BTN402",), "errors_log"),
    DefectKind("registry-invalid-json", "a comma removed from specs/state.json",
               is_registry, find_json_comma, ("BTN600",), "registry"),
    DefectKind("registry-wrong-type", "a registry `project_number` written as a string",
               is_registry, find_registry_wrong_type, (), "registry"),
    DefectKind("opencode-unknown-tool", "a key of an OpenCode agent's `tools:` with a typo",
               is_opencode_agent, find_opencode_tool, ("BTN710",), "opencode-agent"),
)


# --------------------------------------------------------------------------- trees


@dataclass(frozen=True)
class Tree:
    name: str
    path: Path
    authors: Callable[[str], str]
    """Author of a file (by its path relative to the tree)."""


SEEDS_AUTHOR = "benbrastmckie"
"""Whose trees the seeds (the corpus's top level), tests/author_trees.txt and two of
/work/unseen are (FIDELITY.md): one author, whatever the tree."""
UNSEEN_OWNERS = {"BimodalHarness": SEEDS_AUTHOR, "cslib": SEEDS_AUTHOR}


def corpus_author(rel: str) -> str:
    parts = rel.split("/")
    return parts[1].split("__")[0] if parts[0] == "other" and len(parts) > 2 else SEEDS_AUTHOR


def default_trees(sample: bool) -> list[Tree]:
    trees: list[Tree] = []
    if CORPUS.is_dir():
        trees.append(Tree("corpus", CORPUS, corpus_author))
    if sample:
        return trees
    sys.path.insert(0, str(REPO))
    from tests.labels import author_trees

    root, problems = author_trees()
    if not problems:
        for child in sorted(root.iterdir()):
            if child.is_dir():
                trees.append(Tree(child.name, child, lambda _r: SEEDS_AUTHOR))
    base = Path(os.environ.get("BATON_RECALL_TREES") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "baton-recall-trees"))
    for line in RECALL_TREES.read_text(encoding="utf-8").splitlines():
        repo, commit = line.split()
        path = base / repo.split("/", 1)[1]
        stamp = path / ".baton-tree"
        if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == f"{repo}@{commit}":
            owner = repo.split("/")[0]
            trees.append(Tree(path.name, path, lambda _r, o=owner: o))
    if UNSEEN.is_dir():
        for child in sorted(UNSEEN.iterdir()):
            if child.is_dir():
                owner = UNSEEN_OWNERS.get(child.name, child.name)
                trees.append(Tree(child.name, child, lambda _r, o=owner: o))
    return trees


def walk(root: Path) -> Iterator[str]:
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(here) / name
            if path.is_symlink() or not path.is_file():
                continue
            yield path.relative_to(root).as_posix()


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True,
                    ignore=shutil.ignore_patterns(*SKIP_DIRS))


# --------------------------------------------------------------------------- checking


Key = tuple[str, int]
"""(code, 1-based line)."""


class Checker:
    """`baton check --format json --no-cache` on some files: through the CLI's `main` in this
    process, or as a subprocess."""

    def __init__(self, subprocess_mode: bool) -> None:
        self.subprocess_mode = subprocess_mode

    def run(self, files: Sequence[Path]) -> dict[Path, list[Key]]:
        argv = ["check", "--format", "json", "--no-cache", "--exit-zero", "--jobs", "1",
                *map(str, files)]
        if self.subprocess_mode:
            proc = subprocess.run([sys.executable, "-m", "baton_lsp", *argv], check=False,
                                  capture_output=True, text=True, timeout=600)
            out = proc.stdout
            if proc.returncode != 0:
                raise RuntimeError(f"baton check failed ({proc.returncode}): {proc.stderr}")
        else:
            from baton_lsp.cli.main import main

            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = main(argv)
            if rc != 0:
                raise RuntimeError(f"baton check returned {rc}")
            out = buf.getvalue()
        found: dict[Path, list[Key]] = {Path(f): [] for f in files}
        for item in json.loads(out):
            path = Path(os.path.join(os.getcwd(), item["filename"])).resolve()
            found.setdefault(path, []).append((item["code"], int(item["location"]["line"])))
        return found


def line_map(old: Sequence[str], new: Sequence[str]) -> Callable[[int], int | None]:
    """Where a 1-based line of `old` is in `new` (None inside the edited region)."""
    a = 0
    while a < min(len(old), len(new)) and old[a] == new[a]:
        a += 1
    s = 0
    while s < min(len(old), len(new)) - a and old[-1 - s] == new[-1 - s]:
        s += 1
    shift = len(new) - len(old)

    def to_new(line: int) -> int | None:
        if line <= a:
            return line
        if line > len(old) - s:
            return line + shift
        return None

    return to_new


def new_findings(before: list[Key], after: list[Key],
                 to_new: Callable[[int], int | None], region: tuple[int, int]) -> list[Key]:
    """Findings of `after` that no finding of `before` accounts for (as multisets): moved by
    the edit's line shift, or anywhere in the edited region for one that was inside it."""
    pool: dict[Key, int] = {}
    loose: dict[str, int] = {}
    for code, line in before:
        moved = to_new(line)
        if moved is None:
            loose[code] = loose.get(code, 0) + 1
        else:
            pool[(code, moved)] = pool.get((code, moved), 0) + 1
    fresh: list[Key] = []
    for key in after:
        if pool.get(key):
            pool[key] -= 1
        elif loose.get(key[0]) and region[0] <= key[1] <= region[1]:
            loose[key[0]] -= 1
        else:
            fresh.append(key)
    return fresh


def parse_claims(claims: Sequence[str]) -> Callable[[str], bool]:
    ranges: list[tuple[int, int]] = []
    for claim in claims:
        lo, _, hi = claim.partition("-")
        ranges.append((int(lo[3:]), int((hi or lo)[3:])))
    return lambda code: code.startswith("BTN") and code[3:].isdigit() and any(
        a <= int(code[3:]) <= b for a, b in ranges)


def registered_rules() -> dict[str, list[str]]:
    """code -> the file kinds it runs on ([] = all), as `baton rule --list --format json`."""
    from baton_lsp.cli.main import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["rule", "--list", "--format", "json"])
    return {r["code"]: list(r["kinds"]) for r in json.loads(buf.getvalue())}


def claim_status(kind: DefectKind, rules: dict[str, list[str]]) -> str:
    """`claimed` (a registered rule claims it and runs on its files), `pending` (its codes
    are planned but not registered yet) or `unclaimed`."""
    if not kind.claims:
        return "unclaimed"
    match = parse_claims(kind.claims)
    for code, kinds in rules.items():
        if match(code) and (not kinds or kind.file_kind is None or kind.file_kind in kinds):
            return "claimed"
    return "pending"


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Candidate:
    kind: DefectKind
    tree: int
    author: str
    rel: str
    edit: Edit


def candidates(trees: Sequence[Tree], copies: Sequence[Path],
               kinds: Sequence[DefectKind]) -> dict[str, list[Candidate]]:
    """Every kind's candidate edits, every site of every file."""
    out: dict[str, list[Candidate]] = {k.name: [] for k in kinds}
    for t, (tree, copy) in enumerate(zip(trees, copies, strict=True)):
        for rel in walk(copy):
            wanted = [k for k in kinds if k.applies(rel)]
            if not wanted:
                continue
            path = copy / rel
            if path.stat().st_size > MAX_BYTES:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            src = Source(copy, rel, tuple(text.splitlines(keepends=True)))
            for kind in wanted:
                for edit in kind.find(src):
                    out[kind.name].append(Candidate(kind, t, tree.authors(rel), rel, edit))
    return out


def choose(pool: list[Candidate], n: int, seed: int, name: str) -> list[Candidate]:
    """`n` candidates spread over authors in turn, and over each author's files in turn (a
    file gives a second site only when its author has no other file left), shuffled by a
    seed derived from `seed` and the kind's name (so adding a kind changes no other's
    choice)."""
    rng = random.Random(f"{seed}:{name}")
    files: dict[str, dict[tuple[int, str], list[Candidate]]] = {}
    for c in pool:
        files.setdefault(c.author, {}).setdefault((c.tree, c.rel), []).append(c)
    queues: list[list[list[Candidate]]] = []
    for author in sorted(files):
        per_file = [files[author][key] for key in sorted(files[author])]
        for sites in per_file:
            rng.shuffle(sites)
        rng.shuffle(per_file)
        queues.append(per_file)
    rng.shuffle(queues)
    chosen: list[Candidate] = []
    while len(chosen) < n and any(queues):
        for q in queues:
            if q and len(chosen) < n:
                sites = q.pop(0)
                chosen.append(sites.pop(0))
                if sites:
                    q.append(sites)
    return chosen


def apply(path: Path, lines: Sequence[str], original: str) -> None:
    text = "".join(lines)
    if text == original:
        raise MutationError(f"{path}: the mutation changes nothing")
    path.write_text(text, encoding="utf-8")
    if path.read_text(encoding="utf-8") != text:
        raise MutationError(f"{path}: the file does not hold the mutation")


def run(trees: Sequence[Tree], kinds: Sequence[DefectKind], per_kind: int, seed: int,
        checker: Checker, progress: Callable[[str], None] = lambda _m: None
        ) -> list[Injection]:
    results: list[Injection] = []
    with tempfile.TemporaryDirectory(prefix="baton-recall-") as tmp:
        copies = []
        for n, tree in enumerate(trees):
            copy = Path(tmp).resolve() / f"{n}-{tree.name}"
            copy_tree(tree.path, copy)
            copies.append(copy)
        pools = candidates(trees, copies, kinds)
        baseline: dict[Path, list[Key]] = {}

        def before(paths: Sequence[Path]) -> None:
            missing = [p for p in paths if p not in baseline]
            if missing:
                baseline.update(checker.run(missing))

        for kind in kinds:
            chosen = choose(pools[kind.name], per_kind, seed, kind.name)
            progress(f"{kind.name}: {len(chosen)} of {len(pools[kind.name])} sites")
            for c in chosen:
                copy = copies[c.tree]
                path = (copy / c.rel).resolve()
                others = [((copy / rel).resolve(), line) for rel, line in c.edit.others]
                files = [path, *dict.fromkeys(p for p, _ in others)]
                before(files)
                original = path.read_text(encoding="utf-8")
                old = original.splitlines(keepends=True)
                apply(path, c.edit.lines, original)
                try:
                    after = checker.run(files)
                finally:
                    path.write_text(original, encoding="utf-8")
                results.append(judge(kind, c, path, old, others, baseline, after))
    return results


def judge(kind: DefectKind, c: Candidate, path: Path, old: Sequence[str],
          others: Sequence[tuple[Path, int]], baseline: dict[Path, list[Key]],
          after: dict[Path, list[Key]]) -> Injection:
    to_new = line_map(old, c.edit.lines)
    a = next(i for i in range(len(old) + 1)
             if i >= min(len(old), len(c.edit.lines)) or old[i] != c.edit.lines[i])
    s = 0
    while s < min(len(old), len(c.edit.lines)) - a and old[-1 - s] == c.edit.lines[-1 - s]:
        s += 1
    region = (a + 1, max(a + 1, len(c.edit.lines) - s))
    spots = [(path, i + 1) for i in c.edit.spots] + [(p, line + 1) for p, line in others]
    claimed = parse_claims(kind.claims) if kind.claims else (lambda _c: False)
    inj = Injection(kind.name, c.author, c.rel,
                    [(str(p.name), line) for p, line in spots], c.edit.what)
    naive = False
    for file in dict.fromkeys(p for p, _ in spots):
        mine = [line for p, line in spots if p == file]
        if file == path:
            fresh = new_findings(baseline[file], after.get(file, []), to_new, region)
        else:
            fresh = new_findings(baseline[file], after.get(file, []), lambda x: x, (0, -1))
        near = [k for k in fresh if any(abs(k[1] - s_) <= NEAR for s_ in mine)]
        naive |= any(abs(line - s_) <= NEAR for _c, line in after.get(file, []) for s_ in mine)
        inj.codes += [code for code, _ in near]
        inj.elsewhere |= bool(fresh) and not near
        inj.found |= bool(near)
        inj.found_by_code |= any(claimed(code) for code, _ in near)
    inj.false_found = naive and not inj.found
    inj.elsewhere = inj.elsewhere and not inj.found
    return inj


# --------------------------------------------------------------------------- report


@dataclass
class Row:
    kind: str
    status: str
    injected: int = 0
    found: int = 0
    by_code: int = 0
    false_found: int = 0
    elsewhere: int = 0
    authors: set[str] = field(default_factory=set)


def summarize(results: Sequence[Injection], kinds: Sequence[DefectKind],
              rules: dict[str, list[str]]) -> list[Row]:
    rows = {k.name: Row(k.name, claim_status(k, rules)) for k in kinds}
    for inj in results:
        row = rows[inj.kind]
        row.injected += 1
        row.found += inj.found
        row.by_code += inj.found_by_code
        row.false_found += inj.false_found
        row.elsewhere += inj.elsewhere
        row.authors.add(inj.author)
    return list(rows.values())


def recall(rows: Sequence[Row], status: str) -> tuple[int, int, int]:
    """(injected, found by any code, found by a claimed code) over the rows of a status."""
    picked = [r for r in rows if r.status == status]
    return (sum(r.injected for r in picked), sum(r.found for r in picked),
            sum(r.by_code for r in picked))


def render(rows: Sequence[Row], kinds: Sequence[DefectKind]) -> str:
    claims = {k.name: ", ".join(k.claims) or "—" for k in kinds}
    out = ["| kind | claimed by | status | authors | injected | found | by code | recall "
           "| false found | farther |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rate = f"{r.by_code / r.injected:.0%}" if r.injected else "—"
        out.append(f"| {r.kind} | {claims[r.kind]} | {r.status} | {len(r.authors)} "
                   f"| {r.injected} | {r.found} | {r.by_code} | {rate} | {r.false_found} "
                   f"| {r.elsewhere} |")
    out.append("")
    for status in ("claimed", "pending", "unclaimed"):
        n, found, by_code = recall(rows, status)
        kinds_n = sum(1 for r in rows if r.status == status)
        if n:
            out.append(f"{status} kinds ({kinds_n}): {n} injected, found {found} "
                       f"({found / n:.1%}), by the claimed code {by_code} ({by_code / n:.1%})")
    n = sum(r.injected for r in rows)
    found = sum(r.found for r in rows)
    out.append(f"all kinds ({len(rows)}): {n} injected, found {found} "
               f"({found / n:.1%})" if n else "nothing injected")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true",
                        help="the shared corpus only, 2 instances per kind (for CI)")
    parser.add_argument("--per-kind", type=int, default=None,
                        help="instances per kind (default 8, 2 with --sample)")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--tree", type=Path, action="append", default=None,
                        help="a tree to use instead of the default ones (repeatable)")
    parser.add_argument("--kind", action="append", default=None, help="only these kinds")
    parser.add_argument("--subprocess", action="store_true",
                        help="run a `baton check` process per mutation (slower)")
    parser.add_argument("--tsv", type=Path, default=None, help="write every injection here")
    parser.add_argument("--list", action="store_true",
                        help="print the kinds, what they inject and the codes that claim them")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        status = registered_rules()
        for k in KINDS:
            print(f"{k.name:32} {claim_status(k, status):9} {', '.join(k.claims) or '—':40} "
                  f"{k.description}")
        return 0
    missing = [str(p) for p in args.tree or () if not p.is_dir()]
    if missing:
        print(f"recall: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.per_kind is not None and args.per_kind < 1:
        print("recall: --per-kind must be at least 1", file=sys.stderr)
        return 2
    trees = ([Tree(p.name, p.resolve(), lambda _r, n=p.name: n) for p in args.tree]
             if args.tree else default_trees(args.sample))
    if not trees:
        print("recall: no trees (../shared/corpus is missing)", file=sys.stderr)
        return 2
    kinds = [k for k in KINDS if not args.kind or k.name in args.kind]
    unknown = set(args.kind or ()) - {k.name for k in KINDS}
    if unknown:
        print(f"recall: unknown kind(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    per_kind = args.per_kind or (2 if args.sample else 8)
    say: Callable[[str], None] = (lambda m: print(m, file=sys.stderr)) if args.verbose \
        else (lambda _m: None)
    results = run(trees, kinds, per_kind, args.seed, Checker(args.subprocess), say)
    rows = summarize(results, kinds, registered_rules())
    print(f"trees: {', '.join(t.name for t in trees)}; seed {args.seed}; "
          f"{per_kind} per kind; within {NEAR} lines\n")
    print(render(rows, kinds), end="")
    if args.tsv:
        with args.tsv.open("w", encoding="utf-8") as fh:
            fh.write("kind\tauthor\tfile\tspots\tmutation\tfound\tby_code\tfalse_found\t"
                     "farther\tcodes\n")
            for inj in results:
                spots = ",".join(f"{n}:{line}" for n, line in inj.spots)
                fh.write(f"{inj.kind}\t{inj.author}\t{inj.rel}\t{spots}\t{inj.what}\t"
                         f"{int(inj.found)}\t{int(inj.found_by_code)}\t{int(inj.false_found)}\t"
                         f"{int(inj.elsewhere)}\t{','.join(inj.codes)}\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
