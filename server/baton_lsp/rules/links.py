"""BTN133: relative links in agents, commands, skills and context documents; the link
checker plans share.

One checker for every markdown file Baton reads: plans use it for BTN130, Claude Code's
agent, command and skill files and the context documents they point to for BTN133. Links
inside code fences and inline code are not links (the parsers leave them out); web links
and anchors are not checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote

from ..model.agent import AgentFile, CommandFile
from ..model.base import Convention, Finding, Kind, Severity
from ..model.claude_files import ContextFile
from ..model.common import Link
from ..workspace.discovery import extension_installed
from .base import RuleContext, rule

_PLACEHOLDER_TARGET = re.compile(r"[A-Za-z_-]+")
_PLACEHOLDER_PART = re.compile(r"NNN|XXX|YYYY|(?<!\$)\{|\*|\.\.\.|\[|\]|<|>")
"""`./NNN_previous.md`, `{topic}/plan.md`, `reports/*.md`, `<name>.md`: a link in a
template or example, not one to follow."""


def placeholder(target: str) -> bool:
    """A target written as a placeholder or an example (`path`, `NNN_x.md`, `{name}.md`,
    `<file>.md`, `reports/*.md`), not as a file to open."""
    return _PLACEHOLDER_TARGET.fullmatch(target) is not None \
        or _PLACEHOLDER_PART.search(target) is not None


def display(path: Path, ctx: RuleContext) -> str:
    """`path` relative to the workspace root when it is inside it."""
    path = Path(os.path.normpath(path))
    if ctx.root is not None:
        try:
            return str(path.relative_to(ctx.root))
        except ValueError:
            pass
    return str(path)


def _elsewhere(target: str, ctx: RuleContext) -> Path | None:
    """Where a relative target that does not resolve from the file exists instead: read from
    the workspace root or its `.claude/`, with its leading `../` dropped (a skill's
    `../../templates/x.md` written one level too deep or too shallow). Only one candidate
    counts: a guess among several is not exact."""
    if ctx.root is None or target.startswith(("/", "$", "~")):
        return None
    rest = target
    while rest.startswith(("../", "./")):
        rest = rest.split("/", 1)[1]
    here = os.path.normpath(Path(ctx.path).parent / target)
    found = {os.path.normpath(b / rest) for b in (ctx.root, ctx.root / ".claude")} - {here}
    hits = [Path(p) for p in sorted(found) if os.path.isfile(p)]
    return hits[0] if len(hits) == 1 else None


def installed_dir(ctx: RuleContext) -> Path | None:
    """For a file of an extension (`.claude/extensions/<name>/skills/x/SKILL.md`), the folder
    its loaded copy sits in (`.claude/skills/x/`); None for any other file. A relative link
    or reference in it may be written for either place: it is broken only when it resolves
    in neither."""
    if ctx.root is None:
        return None
    installed = extension_installed(os.path.relpath(ctx.path, ctx.root).replace(os.sep, "/"))
    return None if installed is None else Path(os.path.normpath(ctx.root / installed)).parent


def missing_links(links: Iterable[Link], ctx: RuleContext) -> Iterator[Finding]:
    """A finding for each relative link whose target does not exist."""
    seen: set[tuple[int, int]] = set()
    loaded: Path | bool | None = False  # `installed_dir`, found when a link is missing
    exists: dict[str, bool] = {}  # files repeat targets (`report.md#a`, `report.md#b`)
    for link in links:
        key = (link.target_range.start_line, link.target_range.start_char)
        if key in seen:
            continue
        seen.add(key)
        target = link.target.strip()
        if placeholder(target):
            continue  # `[Full Doc](path)`: prose describing a link, not a link
        resolved = ctx.resolve(link.target)
        if resolved is None:
            continue
        where = str(resolved)
        if where not in exists:
            exists[where] = ctx.exists(resolved)
            if not exists[where] and "%" in target:  # `Hooks%20Best%20Practices.md`
                decoded = ctx.resolve(unquote(link.target))
                exists[where] = decoded is not None and ctx.exists(decoded)
        if exists[where]:
            continue
        if loaded is False:
            loaded = installed_dir(ctx)
        if isinstance(loaded, Path):
            alt = ctx.resolve(link.target, base=loaded)
            if alt is not None and ctx.exists(alt):
                continue
        message = (f"link target '{link.target}' does not exist "
                   f"(looked for {display(resolved, ctx)})")
        instead = _elsewhere(target.split("#", 1)[0], ctx)
        if instead is not None:
            message += f"; {display(instead, ctx)} exists: the path is relative to the wrong folder"
        yield ctx.finding(link.target_range, message)


@rule("BTN133", "broken-link-claude", Severity.WARNING,
      (Kind.AGENT, Kind.COMMAND, Kind.SKILL, Kind.CONTEXT),
      cross_file=True, convention=Convention.CLAUDE_CODE)
def broken_link_claude(doc: AgentFile | CommandFile | ContextFile,
                       ctx: RuleContext) -> Iterator[Finding]:
    """A relative link in an agent, command, skill or context document points nowhere.

    Claude reads the linked file when the agent, command or skill tells it to (a skill's
    `references/x.md`, a template, a standard), and a context document under
    `.claude/context/` that an agent was sent to read links on to the next one; a missing
    one is found only when the model goes looking and improvises instead. Links resolve
    relative to the file, as Claude Code's skill docs say ("reference supporting files from
    SKILL.md"); `.claude/...` paths from the repository root. Links in code fences or inline
    code, web links, anchors and placeholder targets (`path`, `NNN_x.md`, `{name}.md`,
    `<file>.md`) are not checked. When the file exists elsewhere (a skill's
    `../../templates/x.md` is one folder off) the message says where. Fix: correct the path
    or restore the file (in an editor, the *Create* quick fix writes it, with a title).

    Reported:

        ==> .claude/templates/report.md <==
        # Report
        ==> .claude/skills/report/SKILL.md <==
        ---
        name: report
        description: Write a report
        ---
        Fill in [the template](../templates/report.md).

    Not reported:

        ==> .claude/templates/report.md <==
        # Report
        ==> .claude/skills/report/SKILL.md <==
        ---
        name: report
        description: Write a report
        ---
        Fill in [the template](../../templates/report.md).

        ```markdown
        See [details](references/details.md)
        ```

    Reported:

        ==> .claude/context/patterns/checkpoints.md <==
        # Checkpoints
        See [the error patterns](error-handling.md) for recovery.

    Not reported:

        ==> .claude/context/patterns/error-handling.md <==
        # Error handling
        ==> .claude/context/patterns/checkpoints.md <==
        # Checkpoints
        See [the error patterns](error-handling.md) for recovery, and
        [an example](../examples/{topic}.md).
    """
    yield from missing_links(doc.links, ctx)
