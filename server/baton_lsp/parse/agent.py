"""Agent and command markdown → `AgentFile` / `CommandFile`."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import TypedDict

from ..lazy_pattern import LazyPattern
from ..model.agent import (
    AgentFile,
    BashBlock,
    CommandFile,
    Injection,
    SignalRef,
    StepHeading,
    TaskBlock,
    TaskField,
)
from ..model.base import Range
from ..model.common import Frontmatter, Link, Suppression
from .common import line_links, suppressions
from .frontmatter import parse_frontmatter
from .markdown import Fence, MarkdownDoc, blank_code_spans, parse_markdown
from .signals import SIGNAL_RE, SIGNAL_WORD_ALONE
from .text import MAX_INT_DIGITS, Source

_STEP_RE = re.compile(rf"^STEP\s+(\d{{1,{MAX_INT_DIGITS}}})\b(.*)$")
"""Upper-case `STEP N`: the orchestration convention. `## Step 2: Install` in an agent is a
tutorial or example the agent is shown, not its own numbered workflow."""
_REQUIRED_BEFORE_RE = re.compile(rf"REQUIRED\s+BEFORE\s+STEP\s+(\d{{1,{MAX_INT_DIGITS}}})\b",
                                 re.IGNORECASE)
_INJECT_RE = re.compile(
    r"Read and follow(?:\s+ALL)?(?:\s+the)?(?:\s+behavioral guidelines)?(?:\s+from)?\s*:?\s*"
    r"([^\s\"'`]*)",
    re.IGNORECASE,
)
_PLACEHOLDER_RE = LazyPattern(r"\{\{[^{}\n]{1,80}\}\}")  # only for lines holding `{{`
_TASK_OPEN_RE = re.compile(r"^\s*Task\s*\{\s*$")
_ELISION_RE = re.compile(r"^(?://|#)?\s*(?:\.\.\.|…|\[\.\.\.\]|\[…\])\s*$")
"""A line that only says "more here": `...`, `…`, `[...]`, `// ...`."""
_TASK_FIELD_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*((?:.*\S)?)\s*$")
_BLOCK_SCALAR_RE = re.compile(r"^[|>][+-]?[1-9]?[+-]?\s*(?:#.*)?$")
_BASH_LANGS = {"bash", "sh", "shell", "zsh"}
_OPAQUE_TASK_LANGS = {"json", "python", "py", "javascript", "js", "lua"}
"""Fence languages whose `Task {` is never the pseudo-call (a JSON key, a Python/JS/Lua line)."""
_PLAIN_FENCE_LANGS = {"", "markdown", "md", "text", "txt", "plaintext"}
"""Fences whose text is prose the model reads: a `Task {` there is the pseudo-call."""
_TASK_CALL_FIELDS = frozenset({"subagent_type", "description", "prompt"})
"""The Task tool's own parameters (the pinned claude's schema: `description`, `prompt`,
`subagent_type`): in a fence of another language, a `Task {` opens the pseudo-call only when
its first line is one of them. The seeds hold Task calls in ```yaml fences and inside ```bash
loops and heredocs; Swift's `Task { await … }` or an ERD's `Task { string id PK }` is code."""
_AGENT_PATH_RE = re.compile(r"\.claude/agents/((?:[\w.-]+/)*)([\w.-]+)\.md$")


def _title(md: MarkdownDoc) -> tuple[str | None, Range | None]:
    for h in md.headings:
        if h.level == 1:
            return h.text, Range.of_line(h.line, h.text_start, h.end_char)
    return None, None


def agent_name_from_path(target: str) -> str | None:
    m = _AGENT_PATH_RE.search(target)
    if not m or m.group(1).startswith(("templates/", "prompts/")):
        return None
    return m.group(2)


def _injections(md: MarkdownDoc, start: int = 0, end: int | None = None) -> list[Injection]:
    out: list[Injection] = []
    lines = md.lines
    stop = len(lines) if end is None else end
    for no in range(start, stop):
        line = lines[no]
        if "ead and follow" not in line:
            continue
        m = _INJECT_RE.search(line)
        if not m:
            continue
        target, tline, tcol = m.group(1), no, m.start(1)
        if not target:
            nxt = no + 1
            while nxt < stop and not lines[nxt].strip():
                nxt += 1
            if nxt < stop:
                cand = lines[nxt].strip().split()[0].strip("\"'`")
                if ".md" in cand:
                    target, tline, tcol = cand, nxt, lines[nxt].index(cand)
        if not target or ".md" not in target:
            continue
        target = target.rstrip(".,;:)")
        out.append(Injection(
            target=target, agent_name=agent_name_from_path(target),
            range=Range.span(no, m.start(), tline, tcol + len(target)),
            target_range=Range.of_line(tline, tcol, tcol + len(target)),
        ))
    return out


def _signals(md: MarkdownDoc, start: int = 0, end: int | None = None) -> list[SignalRef]:
    out: list[SignalRef] = []
    lines = md.lines
    stop = len(lines) if end is None else end
    opaque = md.opaque
    for no in range(start, stop):
        line = lines[no]
        if ":" not in line or ("_" not in line and SIGNAL_WORD_ALONE not in line):
            continue  # every signal name but one holds a `_`
        plain: str | None = None  # the line without code spans, made for a signal only
        for m in SIGNAL_RE.finditer(line):
            if plain is None:
                plain = line if opaque[no] else blank_code_spans(line)
            in_code = opaque[no] or plain[m.start()] == " "
            out.append(SignalRef(name=m.group(1),
                                 range=Range.of_line(no, m.start(1), m.end(1)), in_code=in_code))
    return out


def _placeholders(md: MarkdownDoc) -> list[Range]:
    out: list[Range] = []
    for no, line in enumerate(md.lines):
        if "{{" not in line:
            continue
        if no > md.frontmatter_end and md.opaque[no]:
            continue
        plain = blank_code_spans(line) if no > md.frontmatter_end else line
        for m in _PLACEHOLDER_RE.finditer(plain):
            out.append(Range.of_line(no, m.start(), m.end()))
    return out


def _steps(md: MarkdownDoc) -> list[StepHeading]:
    steps: list[StepHeading] = []
    for h in md.headings:
        m = _STEP_RE.match(h.text)
        if not m:
            continue
        line = md.lines[h.line]
        num_col = h.text_start + m.start(1)
        step = StepHeading(
            number=int(m.group(1)), title=h.text, level=h.level,
            range=Range.of_line(h.line, 0, len(line)),
            number_range=Range.of_line(h.line, num_col, num_col + len(m.group(1))),
        )
        rb = _REQUIRED_BEFORE_RE.search(line, h.text_start)
        if rb:
            step.required_before = int(rb.group(1))
            step.required_before_range = Range.of_line(h.line, rb.start(), rb.end())
        steps.append(step)
    return steps


class _Common(TypedDict):
    """The fields `AgentFile` and `CommandFile` share, read the same way for both."""

    path: str
    name: str
    frontmatter: Frontmatter | None
    title: str | None
    title_range: Range | None
    links: list[Link]
    suppressions: list[Suppression]
    line_count: int


def _common(source: Source, path: str) -> tuple[MarkdownDoc, _Common]:
    md = parse_markdown(source, frontmatter=True)
    fm = parse_frontmatter(source.lines, md.frontmatter_end) if md.frontmatter_end > 0 else None
    title, title_range = _title(md)
    links: list[Link] = []
    for no, line in md.text_lines():
        if "](" in line:
            links.extend(line_links(no, line))
    return md, {
        "path": path,
        "name": PurePath(path).stem if path else "",
        "frontmatter": fm,
        "title": title,
        "title_range": title_range,
        "links": links,
        "suppressions": suppressions(md),
        "line_count": len(source.lines),
    }


def parse_agent(source: Source, path: str = "") -> AgentFile:
    """Parse an agent behavioural file. Never raises on any text input."""
    md, common = _common(source, path)
    parts = PurePath(path).parts
    return AgentFile(
        **common,
        steps=_steps(md),
        signals=_signals(md),
        injections=_injections(md),
        placeholders=_placeholders(md),
        task_blocks=_task_blocks(md),
        is_template="templates" in parts,
        is_prompt="prompts" in parts,
    )


def _task_blocks(md: MarkdownDoc) -> list[TaskBlock]:
    lines = md.lines
    n = len(lines)
    fence_of: dict[int, Fence] = {}
    for each in md.fences:
        for no in each.body:
            fence_of[no] = each
    blocks: list[TaskBlock] = []
    no = 0
    while no < n:
        line = lines[no]
        if "Task" not in line or not _TASK_OPEN_RE.match(line):
            no += 1
            continue
        fence = fence_of.get(no)
        stop = n
        if fence is not None:
            lang = fence.lang
            if lang in _OPAQUE_TASK_LANGS or (
                    lang not in _PLAIN_FENCE_LANGS and not _opens_task_call(lines, no, fence)):
                no += 1
                continue
            stop = fence.body.stop  # the call ends in its fence: a `}` after it closes nothing
        block, no = _read_task_block(md, no, stop)
        blocks.append(block)
    return blocks


def _opens_task_call(lines: list[str], start: int, fence: Fence) -> bool:
    """The first non-blank line after `Task {` is one of the Task tool's own fields."""
    for no in range(start + 1, fence.body.stop):
        if lines[no].strip():
            m = _TASK_FIELD_RE.match(lines[no])
            return m is not None and m.group(1) in _TASK_CALL_FIELDS
    return False


def _read_task_block(md: MarkdownDoc, start: int, stop: int) -> tuple[TaskBlock, int]:
    """Read fields up to the closing `}` on its own line (before line `stop`), tracking quote
    balance."""
    lines = md.lines
    open_line = lines[start]
    block = TaskBlock(range=Range.of_line(start, 0, len(open_line)),
                      open_range=Range.of_line(start, open_line.index("Task"), len(open_line)),
                      closed=False)
    current: TaskField | None = None
    in_quote = False
    quote_start: Range | None = None
    block_indent = -1  # indentation of a `key: |` field whose YAML block scalar is being read
    no = start + 1
    limit = min(stop, start + 2000)
    while no < limit:
        line = lines[no]
        stripped = line.strip()
        if block_indent >= 0 and current is not None:
            if not stripped or len(line) - len(line.lstrip()) > block_indent:
                current.value += "\n" + line  # block scalar text: no fields, no quote counting
                if stripped:
                    current.value_range = Range.span(current.value_range.start_line,
                                                     current.value_range.start_char, no, len(line))
                no += 1
                continue
            block_indent = -1
        if not in_quote and stripped in {"}", "})"}:
            block.closed = True
            block.range = Range.span(start, 0, no, len(line))
            return _finish_task(md, block, start, no), no + 1
        if not in_quote and (_TASK_OPEN_RE.match(line) or line.startswith("#")):
            break  # a new block or a heading: this one was never closed
        if not in_quote and _ELISION_RE.match(stripped):
            block.elided = True
            no += 1
            continue
        if not in_quote:
            m = _TASK_FIELD_RE.match(line)
            if m:
                value = m.group(2)
                current = TaskField(
                    name=m.group(1), value=value,
                    range=Range.of_line(no, m.start(1), len(line)),
                    value_range=Range.of_line(no, m.start(2), m.start(2) + len(value)),
                )
                block.fields.append(current)
                if _BLOCK_SCALAR_RE.match(value):
                    block_indent = len(line) - len(line.lstrip())
                    no += 1
                    continue
                quotes = _unescaped_quotes(value)
                if quotes % 2 == 1:
                    in_quote = True
                    quote_start = Range.of_line(no, m.start(2), m.start(2) + len(value))
                no += 1
                continue
        elif current is not None:
            current.value += "\n" + line
            if _unescaped_quotes(line) % 2 == 1:
                in_quote = False
                current.value_range = Range.span(current.value_range.start_line,
                                                 current.value_range.start_char, no, len(line))
        no += 1
    end = max(start, no - 1)
    block.range = Range.span(start, 0, end, len(lines[end]) if end < len(lines) else 0)
    if in_quote:
        block.unbalanced_quote = quote_start
    return _finish_task(md, block, start, end), no


def _unescaped_quotes(text: str) -> int:
    if "\\" not in text:  # nothing escaped: every quote counts (most values)
        return text.count('"')
    count = 0
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            count += 1
    return count


def _finish_task(md: MarkdownDoc, block: TaskBlock, start: int, end: int) -> TaskBlock:
    block.injections = _injections(md, start, end + 1)
    block.signals = _signals(md, start, end + 1)
    return block


def parse_command(source: Source, path: str = "") -> CommandFile:
    """Parse a slash-command file. Never raises on any text input."""
    md, common = _common(source, path)
    bash: list[BashBlock] = []
    for fence in md.fences:
        if fence.lang in _BASH_LANGS:
            body = list(fence.body)
            content = "\n".join(md.lines[i] for i in body)
            end_char = len(md.lines[fence.end_line]) if fence.end_line < len(md.lines) else 0
            bash.append(BashBlock(
                start_line=fence.start_line, end_line=fence.end_line, content=content,
                closed=fence.closed, index=len(bash),
                range=Range.span(fence.start_line, 0, fence.end_line, end_char),
            ))
    return CommandFile(
        **common,
        bash_blocks=bash,
        task_blocks=_task_blocks(md),
        injections=_injections(md),
        signals=_signals(md),
    )

