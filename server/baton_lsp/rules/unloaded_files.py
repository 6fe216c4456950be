"""BTN241: files written for Claude Code where, or as, it never loads them.

Discovery (`workspace.discovery.unloaded`) gives these files their own kind; links among them
that dangle or leave the workspace are unreadable and reported by BTN400 instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from ..model.agent import CommandFile
from ..model.base import Convention, Finding, Kind, Range, Severity
from ..workspace.discovery import MEMORY_FILE, SKILL_FILE
from .base import RuleContext, rule

_DOC_STEM = re.compile(r"(?:^|[-_ .])(?:index|overview|catalog|contents|toc|changelog|"
                       r"contributing|template|guide|notes?)(?:$|[-_ .])", re.IGNORECASE)
"""Names of documents kept beside skills (an index, a catalogue), not skills."""
_CASE_SENSITIVE = "on a case-sensitive file system (Linux, most CI; not macOS's default)"


def _skill_like(doc: CommandFile) -> bool:
    """Front matter with a skill's `name` or `description`."""
    fm = doc.frontmatter
    return fm is not None and fm.error is None and any(
        fm.get(k) is not None for k in ("name", "description"))


def _imported(ctx: RuleContext, rel: str) -> bool:
    """A memory file Claude Code does load names `rel` (an `@.claude/claude.md` import)."""
    if ctx.root is None:
        return False
    for loaded in (MEMORY_FILE, f".claude/{MEMORY_FILE}", "CLAUDE.local.md"):
        path = ctx.root / loaded
        ctx.depends_on.add(str(path))
        if ctx.index is None or not os.path.isfile(path) or os.path.islink(path):
            continue
        text = ctx.index.text_of(str(path)) or ""
        if rel in text or (loaded.startswith(".claude/") and f"@{rel.split('/')[-1]}" in text):
            return True
    return False


@rule("BTN241", "file-never-loaded", Severity.WARNING, (Kind.UNLOADED,),
      convention=Convention.CLAUDE_CODE)
def never_loaded(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A skill or memory file sits where, or is spelt as, Claude Code never loads it.

    Claude Code 2.1.331 lists the folders of `.claude/skills/` and opens `<folder>/SKILL.md`
    in each (its skills loader skips every entry that is not a folder), so a skill written as
    a loose `.claude/skills/deploy.md` is never offered and a `skills:` list naming it
    preloads nothing. It joins the exact names `SKILL.md` and `CLAUDE.md` (project memory:
    `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`) to their folders, so on a
    case-sensitive file system (Linux, most CI) a `skill.md` or `.claude/claude.md` is not
    read; on macOS's default file system it is.

    Reported once per file, on line 1: a loose `.md` in `.claude/skills/` (or a plugin's
    `skills/`) unless it is a document kept there (an index, a catalogue, a README) or a
    folder of the same name holds the skill; `skill.md` in a skill folder; `claude.md` at the
    root or in `.claude/` unless a loaded memory file imports it. Not reported where the
    capitalised file is there too (or the file system ignores case, as macOS's does).

    Fix: move `skills/deploy.md` to `skills/deploy/SKILL.md`; rename `skill.md` to
    `SKILL.md` and `claude.md` to `CLAUDE.md` (`git mv`, twice on macOS).

    Reported:

        ==> .claude/skills/deploy-agent.md <==
        ---
        name: deploy-agent
        description: Deploys the agent server to node 1
        ---
        Rsync, build, restart, verify.

    Not reported:

        ==> .claude/skills/deploy-agent/SKILL.md <==
        ---
        name: deploy-agent
        description: Deploys the agent server to node 1
        ---
        Rsync, build, restart, verify.

        ==> .claude/skills/00-index.md <==
        # Skills index

        - deploy-agent: deploys the agent server
    """
    if ctx.root is None:
        return
    rel = os.path.relpath(ctx.path, ctx.root).replace(os.sep, "/")
    parts = rel.split("/")
    name = parts[-1]
    here = "/".join(parts[:-1])
    line = Range.of_line(0, 0, len(ctx.lines[0]) if ctx.lines else 0)
    if name.lower() in (MEMORY_FILE.lower(), SKILL_FILE.lower()):
        spelt = os.path.join(os.path.dirname(ctx.path), name.upper()[:-3] + ".md")
        ctx.depends_on.add(spelt)
        if os.path.isfile(spelt):
            return  # the file Claude Code reads is there (or this file system ignores case)
    if name.lower() == MEMORY_FILE.lower():
        if _imported(ctx, rel):
            return
        want = f"{here}/{MEMORY_FILE}" if here else MEMORY_FILE
        yield ctx.finding(
            line, f"`{rel}` is not loaded {_CASE_SENSITIVE}: Claude Code reads project memory "
            f"only from `CLAUDE.md`, `.claude/CLAUDE.md` and `CLAUDE.local.md`; expected "
            f"`{want}`")
        return
    if name.lower() == SKILL_FILE.lower():
        yield ctx.finding(
            line, f"`{rel}` is not loaded {_CASE_SENSITIVE}: Claude Code opens only "
            f"`{here}/{SKILL_FILE}` in a skill folder, so the skill `{parts[-2]}` does not "
            f"exist there; expected `{SKILL_FILE}`")
        return
    stem = name[:-3] if name.endswith(".md") else name
    if _DOC_STEM.search(stem) or name.lower() == "readme.md":
        return
    folder = os.path.join(os.path.dirname(ctx.path), stem)
    ctx.depends_on.add(folder)
    if os.path.isdir(folder):
        return  # `deploy.md` beside `deploy/SKILL.md`: a note about the skill
    what = "has skill front matter but sits" if _skill_like(doc) else "sits"
    yield ctx.finding(
        line, f"`{name}` {what} directly in `{here}/`, where Claude Code never loads a skill: "
        f"it loads only `{here}/<name>/{SKILL_FILE}`; expected `{here}/{stem}/{SKILL_FILE}`")
