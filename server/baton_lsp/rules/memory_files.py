"""BTN830-BTN833: `@path` imports of the instruction files Claude Code loads (`CLAUDE.md`,
`.claude/CLAUDE.md`, `CLAUDE.local.md`, `.claude/rules/**/*.md`).

Claude Code (2.1, its CLAUDE.md loader) reads `@path` in markdown text — not in code fences or
code spans — resolves a relative path against the directory of the file that holds it (not
the working directory), expands `~/`, loads each file once, and follows imports at most
five hops from the file it loaded. An import that does not resolve is dropped without a
word: the instructions it was meant to bring in are simply absent.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.claude_files import IMPORT_MAX_DEPTH, ContextFile, MemoryFile, MemoryImport
from ..parse.claude_files import parse_memory
from ..parse.text import Source, UnreadableError, decode
from ..runs.confine import NotRegular, OutsideLink, read_head
from .base import RuleContext, rule
from .links import installed_dir, placeholder
from .mcp_config import home_path

CC = Convention.CLAUDE_CODE
MEMORY = (Kind.MEMORY,)
_PATH_LIKE = re.compile(r"^\.{1,2}/|\.[A-Za-z][A-Za-z0-9]{0,9}$")
"""A target written as a file path (`docs/x.md`, `README.md`, `./notes`): an `@name`
mention in prose (`@claude`, `@alice`) or an npm scope (`@types/node`) is read as an import
too, but is no file anyone meant to load."""
_READ_LIMIT = 1 << 20


_TRAILING = ".,;:)!?*`'\""
"""Punctuation that ends a sentence after an import; Claude Code reads it as part of the
path."""


def _path_like(target: str) -> bool:
    return _PATH_LIKE.search(target.rstrip(_TRAILING)) is not None


def _local(target: str) -> bool:
    """A target this rule may judge: relative to the file (not `~/`, not absolute)."""
    return not (target.startswith(("~", "/")) or "$" in target or "{" in target)


def _resolve(ctx: RuleContext, base: Path, imp: MemoryImport) -> Path | None:
    if not _local(imp.target) or not _path_like(imp.target):
        return None
    return Path(os.path.normpath(base / imp.target))


def _top_exists(ctx: RuleContext, base: Path, target: str) -> bool:
    """Whether the first directory of `target` exists beside the file or at the root: an
    `@solana/web3.js` whose `solana/` is nowhere is a package name in prose, not a path."""
    if target.startswith(("./", "../")) or "/" not in target:
        return True
    top = target.split("/", 1)[0]
    return ctx.exists(base / top) or (ctx.root is not None and ctx.exists(ctx.root / top))


def _inside(ctx: RuleContext, path: Path) -> bool:
    root = os.path.normpath(ctx.root) if ctx.root is not None else None
    return root is not None and str(path).startswith(root + os.sep)


@rule("BTN830", "memory-import-missing", Severity.WARNING, MEMORY, cross_file=True,
      convention=CC)
def import_missing(doc: MemoryFile, ctx: RuleContext) -> Iterator[Finding]:
    """An `@path` import of an instruction file names a file that does not exist.

    Claude Code resolves a relative import against the directory of the file that holds it:
    in `.claude/CLAUDE.md`, `@.claude/rules/x.md` means `.claude/.claude/rules/x.md`. A target
    that does not exist is skipped silently, so the instructions it was meant to add never
    reach the model. A trailing period or parenthesis is part of the path as Claude Code
    reads it. `@~/…` imports are the user's own files and are not looked at; `@name` without
    an extension is taken for a mention, and `@scope/name.js` whose `scope/` exists nowhere
    for an npm package, not an import.

    Fix: write the path relative to the importing file (`@rules/x.md` in `.claude/CLAUDE.md`)
    or create the file (in an editor, the *Create* quick fix writes it, with a title); end
    a sentence with a space before the period.

    Reported:

        ==> .claude/rules/git-workflow.md <==
        Commit with task numbers.
        ==> .claude/CLAUDE.md <==
        # Project
        - @.claude/rules/git-workflow.md - Commit conventions

    Not reported:

        ==> .claude/rules/git-workflow.md <==
        Commit with task numbers.
        ==> .claude/CLAUDE.md <==
        # Project
        - @rules/git-workflow.md - Commit conventions
        - Ask @claude in a review; see `@missing.md` in code; personal: @~/.claude/me.md
    """
    base = Path(ctx.path).parent
    for imp in doc.imports:
        target = _resolve(ctx, base, imp)
        if target is None or not _inside(ctx, target) or ctx.exists(target) \
                or not _top_exists(ctx, base, imp.target):
            continue
        hint = ""
        stripped = imp.target.rstrip(_TRAILING)
        if stripped != imp.target and ctx.exists(base / stripped):
            hint = f" (`{stripped}` exists: the trailing `{imp.target[len(stripped):]}` " \
                   "is read as part of the path)"
        elif ctx.root is not None and base != ctx.root \
                and ctx.exists(Path(os.path.normpath(ctx.root / stripped))):
            rel = os.path.relpath(ctx.root / stripped, base).replace(os.sep, "/")
            hint = f" (relative to the repository root it exists: write `@{rel}`)"
        where = os.path.relpath(target, ctx.root).replace(os.sep, "/") if ctx.root else target
        yield ctx.finding(imp.range,
                          f"`@{imp.target}` resolves to {where}, which does not exist: Claude "
                          f"Code skips the import{hint}")


@rule("BTN831", "memory-import-duplicate", Severity.WARNING, MEMORY, convention=CC)
def import_duplicate(doc: MemoryFile, ctx: RuleContext) -> Iterator[Finding]:
    """An instruction file imports the same file twice.

    Claude Code loads an imported file once per session; the second `@path` adds nothing
    and usually means a list that was edited in two places (one of them out of date).

    Fix: keep one import of the file.

    Reported:

        ==> .claude/CLAUDE.md <==
        # Project
        - @rules/state.md - State patterns
        - @rules/errors.md - Errors
        - @rules/state.md - Task state

    Not reported:

        ==> .claude/CLAUDE.md <==
        # Project
        - @rules/state.md - State patterns
        - @rules/errors.md - Errors
    """
    base = Path(ctx.path).parent
    first: dict[str, MemoryImport] = {}
    for imp in doc.imports:
        if not _local(imp.target) or not _path_like(imp.target):
            continue
        key = os.path.normpath(base / imp.target)
        seen = first.get(key)
        if seen is None:
            first[key] = imp
            continue
        yield ctx.finding(imp.range,
                          f"`@{imp.target}` is imported again (first on line "
                          f"{seen.range.start_line + 1}): Claude Code loads it once",
                          related=[Related(path=ctx.path, range=seen.range,
                                           message="the first import")])


@rule("BTN832", "memory-import-home-path", Severity.WARNING, MEMORY, convention=CC)
def import_home_path(doc: MemoryFile, ctx: RuleContext) -> Iterator[Finding]:
    """A project instruction file imports a file by one user's absolute home path.

    `@/home/alice/…` or `@/Users/alice/…` exists only on its author's machine; everyone else
    who clones the project silently loses the import. (`CLAUDE.local.md` is personal and not
    checked in, so it is not reported.)

    Fix: import relative to the file (`@docs/x.md`), or through the user's home
    (`@~/.claude/x.md`), which Claude Code expands on each machine.

    Reported:

        ==> CLAUDE.md <==
        # Project
        See @/home/benjamin/Projects/app/docs/style.md for style.

    Not reported:

        ==> CLAUDE.md <==
        # Project
        See @docs/style.md for style and @~/.claude/personal.md for mine.
    """
    if Path(ctx.path).name == "CLAUDE.local.md":
        return
    for imp in doc.imports:
        if not imp.target.startswith("/"):
            continue
        prefix = home_path(imp.target)
        if prefix is None:
            continue
        yield ctx.finding(imp.range,
                          f"`@{imp.target}` hard-codes `{prefix}`: it exists only on one "
                          "machine; import relative to this file or through `@~/`")


def _imports_of(ctx: RuleContext, path: Path) -> list[MemoryImport] | None:
    """The imports of a workspace file read as Claude Code reads it (None: unreadable)."""
    if ctx.root is None:
        return None
    ctx.depends_on.add(str(path))
    cache = ctx.memo.setdefault("memory-imports", {})
    key = str(path)
    if key not in cache:
        try:
            data = read_head(ctx.root, path, _READ_LIMIT)[0]
            cache[key] = parse_memory(Source.from_text(decode(data, _READ_LIMIT)),
                                      key).imports
        except (OSError, UnreadableError):  # missing, a link out, a FIFO, not text
            cache[key] = None
    result: list[MemoryImport] | None = cache[key]
    return result


@rule("BTN833", "memory-import-too-deep", Severity.WARNING, MEMORY, cross_file=True,
      convention=CC)
def import_too_deep(doc: MemoryFile, ctx: RuleContext) -> Iterator[Finding]:
    """A chain of `@path` imports goes deeper than Claude Code follows.

    Claude Code follows imports at most five hops from the instruction file it loads; a file
    six files down the chain is never read, without any message. Reported on the import of
    this file that starts the chain, with the chain.

    Fix: import the deep file from a file nearer the top, or flatten the chain.

    Reported:

        ==> docs/e.md <==
        Deepest rules.
        ==> docs/d.md <==
        @e.md
        ==> docs/c.md <==
        @d.md
        ==> docs/b.md <==
        @c.md
        ==> docs/a.md <==
        @b.md
        ==> CLAUDE.md <==
        # Project
        @docs/a.md

    Not reported:

        ==> docs/d.md <==
        Rules.
        ==> docs/c.md <==
        @d.md
        ==> docs/b.md <==
        @c.md
        ==> docs/a.md <==
        @b.md
        ==> CLAUDE.md <==
        # Project
        @docs/a.md
    """
    start = Path(ctx.path)
    for imp in doc.imports:
        first = _resolve(ctx, start.parent, imp)
        if first is None or not _inside(ctx, first) or not ctx.exists(first):
            continue
        chain = _too_deep(ctx, [start, first])
        if chain is None:
            continue
        names = " → ".join(os.path.relpath(p, ctx.root or start.parent).replace(os.sep, "/")
                           for p in chain)
        yield ctx.finding(imp.range,
                          f"this import starts a chain of {len(chain) - 1} hops ({names}): "
                          f"Claude Code follows {IMPORT_MAX_DEPTH} and never loads "
                          f"{chain[-1].name}",
                          related=[Related(path=str(chain[-2]), range=Range.of_line(0),
                                           message=f"imports {chain[-1].name}, which is "
                                           "not loaded")])


def _too_deep(ctx: RuleContext, chain: list[Path]) -> list[Path] | None:
    """The first chain from `chain` that reaches a file more than `IMPORT_MAX_DEPTH` hops
    from the top (depth-first, each file once), or None."""
    seen: set[Path] = set(chain)
    stack = [chain]
    while stack:
        path = stack.pop()
        imports = _imports_of(ctx, path[-1])
        if not imports:
            continue
        for imp in reversed(imports):
            nxt = _resolve(ctx, path[-1].parent, imp)
            if nxt is None or nxt in seen or not _inside(ctx, nxt) or not ctx.exists(nxt):
                continue
            if len(path) >= IMPORT_MAX_DEPTH:
                return [*path, nxt]
            seen.add(nxt)
            stack.append([*path, nxt])
    return None


def _unreadable(ctx: RuleContext, target: Path) -> str | None:
    """Why the import target that exists cannot be read as a file of instructions: a link out
    of the workspace or a FIFO, socket or device (None: a regular file, or a directory).
    Opened confined and non-blocking, never read."""
    if ctx.root is None:
        return None
    try:
        read_head(ctx.root, target, 0)
    except OutsideLink as exc:
        return (f"is a symbolic link to a file outside the workspace ({exc.target}); it was "
                "not read, and Claude Code loads it only on a machine that has that file")
    except NotRegular:
        try:
            mode = os.stat(target).st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode):
            return None
        what = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) \
            else "a device"
        return (f"is {what}, not a file: it was not read (reading it waits for a writer or "
                "never ends), and it holds no instructions to import")
    except OSError:
        return None  # missing or unreadable: BTN830 or nothing to say
    return None


@rule("BTN835", "memory-import-unreadable", Severity.WARNING, MEMORY, cross_file=True,
      convention=CC)
def import_unreadable(doc: MemoryFile, ctx: RuleContext) -> Iterator[Finding]:
    """An `@path` import names a link out of the workspace, or a FIFO, socket or device.

    An import is a file of the repository whose text joins the instructions. A symbolic link
    to an absolute path outside the workspace (`docs/style.md -> /home/alice/style.md`)
    works only on the machine that made it; a FIFO or device is no file at all (reading a
    pipe waits for a writer). Baton opens neither: it says what it found. Directories and
    missing targets are left to the other rules (BTN830).

    Fix: commit the file itself in place of the link, or import a regular file.

    Reported:

        ==> ../shared/style.md <==
        Style kept outside the repository.
        ==> docs/style.md -> ../../shared/style.md <==
        ==> CLAUDE.md <==
        # Project
        See @docs/style.md for style.

    Not reported:

        ==> .claude/rules/style.md <==
        Style.
        ==> CLAUDE.md <==
        # Project
        See @.claude/rules/style.md for style.
    """
    base = Path(ctx.path).parent
    for imp in doc.imports:
        target = _resolve(ctx, base, imp)
        if target is None or not _inside(ctx, target) or not ctx.exists(target):
            continue
        why = _unreadable(ctx, target)
        if why is not None:
            yield ctx.finding(imp.range, f"`@{imp.target}` {why}")


@rule("BTN836", "context-reference-missing", Severity.WARNING, (Kind.CONTEXT,),
      cross_file=True, convention=CC)
def context_reference_missing(doc: ContextFile, ctx: RuleContext) -> Iterator[Finding]:
    """An `@path` reference in a context document names a file that exists nowhere.

    Context documents (`.claude/context/**/*.md`) send the reader on with `@path`
    references. Claude Code reads `@path` as an import relative to the file that holds it
    (its loader, 2.1.331: outside code, `#fragment` dropped); an agent that reads the
    document with its Read tool takes `@.claude/...` from the project root, where it runs.
    A reference that resolves in neither place sends the model to a file that is not there
    (a folder renamed, a document never written). Targets read as mentions or package names
    (as BTN830 reads them), `@~/…`, absolute paths, placeholders (`{topic}`, `NNN_x.md`,
    `<name>.md`) and sentence punctuation after the path are not reported.

    Fix: correct the path, or write the missing document.

    Reported:

        ==> .claude/context/templates/thin-wrapper-skill.md <==
        # Thin wrapper skill
        Delegate as in @.claude/context/patterns/fork-patterns.md

    Not reported:

        ==> .claude/context/patterns/fork-patterns.md <==
        # Fork patterns
        ==> .claude/context/templates/thin-wrapper-skill.md <==
        # Thin wrapper skill
        Delegate as in @.claude/context/patterns/fork-patterns.md, see
        @../patterns/fork-patterns.md and @.claude/specs/{N}_{SLUG}/plan.md; ask @claude.
        `@.claude/context/missing.md` in code is not a reference.
    """
    base = Path(ctx.path).parent
    loaded = installed_dir(ctx)
    for imp in doc.imports:
        target = imp.target.rstrip(_TRAILING)
        if not _local(target) or not _path_like(target) or placeholder(target):
            continue
        if loaded is not None and ctx.exists(Path(os.path.normpath(loaded / target))):
            continue  # an extension's document, read where the loader copies it
        here = Path(os.path.normpath(base / target))
        from_root = ctx.resolve(target) if target.startswith((".claude/", ".opencode/")) \
            else None
        if ctx.root is not None and from_root is None:
            from_root = Path(os.path.normpath(ctx.root / target))
        candidates = [p for p in (here, from_root) if p is not None and _inside(ctx, p)]
        if not candidates or any(ctx.exists(p) for p in candidates) \
                or not _top_exists(ctx, base, target):
            continue
        shown = os.path.relpath(candidates[-1], ctx.root).replace(os.sep, "/") \
            if ctx.root is not None else str(candidates[-1])
        yield ctx.finding(imp.range,
                          f"`@{target}` names a file that does not exist (looked for "
                          f"{shown} and beside this file)")


SCOPE_KEYS = ("globs", "applyTo", "path_patterns", "path", "patterns", "files", "include")
"""Keys other tools (Cursor's `globs`, Copilot's `applyTo`) or guides use to scope a rule
file; Claude Code reads only `paths`."""


def _in_rules_dir(ctx: RuleContext) -> bool:
    """A file under the workspace's `.claude/rules/` (not a CLAUDE.md)."""
    if ctx.root is None:
        return False
    rel = os.path.relpath(ctx.path, ctx.root).replace(os.sep, "/")
    return rel.startswith(".claude/rules/")


@rule("BTN834", "rules-scope-key-ignored", Severity.WARNING, MEMORY, convention=CC)
def scope_key_ignored(doc: MemoryFile, ctx: RuleContext) -> Iterator[Finding]:
    """A `.claude/rules/` file scopes itself with a key Claude Code does not read: it loads in
    every session.

    Claude Code loads a rule file only when Claude works on files matching its `paths:`
    globs (a list, or one string); a file without `paths` loads at the start of every
    session. `globs:` (Cursor's key), `applyTo:` (Copilot's) or `path_patterns:` are ignored
    — verified with the pinned `claude`: such a file's text was sent with the first request,
    a `paths:` one was not.

    Fix: rename the key to `paths:` (same globs).

    Reported:

        ==> .claude/rules/database.md <==
        ---
        globs: "packages/db/**/*"
        ---

        # Database Development

    Not reported:

        ==> .claude/rules/database.md <==
        ---
        paths: "packages/db/**/*"
        ---

        # Database Development
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _in_rules_dir(ctx) or fm.get("paths"):
        return
    for entry in fm.entries:
        if entry.key in SCOPE_KEYS and entry.value:
            yield ctx.finding(entry.key_range,
                              f"`{entry.key}:` is not read by Claude Code, which scopes a rule "
                              "file by `paths:` only: this file loads in every session; rename "
                              "the key to `paths`")
            return
