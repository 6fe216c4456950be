"""BTN315–BTN316: what the bash blocks of commands and skills take from outside the block: a
project file they source or run that is not there (BTN315), `${ARGUMENTS}` that nothing fills
in (BTN316).

Claude Code runs a command's or skill's bash from the project root (the Bash tool's working
directory; `${CLAUDE_PROJECT_DIR}` is that root in hooks and commands), so a literal
`.claude/...` path in a block names one file of this repository. Only such literal paths are
read: `$VAR` paths other than the project-directory variable, globs, placeholders, files
the command writes itself and files under `tmp/` are left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..lazy_pattern import LazyPattern
from ..model.agent import CommandFile
from ..model.base import Convention, Finding, Kind, Range, Severity
from ..parse.shell import HEREDOC, HEREDOC_QUOTED, BashLine, classify, lexed
from .base import RuleContext, rule

_NOT_SCRIPTS = frozenset({"template", "pseudo-code", "transcript", "path list"})
"""Block kinds (`parse.shell.classify`) whose lines are not run as written."""
_PROJECT = r"(?:\$\{CLAUDE_PROJECT_DIR\}/|\$CLAUDE_PROJECT_DIR/|\./)?"
_PATH = rf"[\"']?(?P<path>{_PROJECT}\.claude/[\w./@+-]+)[\"']?(?=$|[\s;&|)])"
_LEAD = r"(?<![^;&|({`])\s*(?:(?:then|do|else|if|!|time|exec)\s+)*"
_SOURCE_RE = re.compile(_LEAD + r"(?P<verb>source|\.)\s+" + _PATH)
_RUN_RE = re.compile(_LEAD + r"(?:(?P<verb>bash|sh|zsh|python3?|node)\s+(?:-[a-z]+\s+)*)?"
                     + _PATH)
_WRITES_RE = re.compile(r"(?:>>?|\b(?:tee|cp|mv|ln|install|touch|curl|wget|chmod|mkdir|rm|"
                        r"cat\s*>)\b)[^;&|]*$")
"""Text before a path on its line that makes the path something written or managed here."""
_GUARDED_RE = re.compile(r"-[efrsx]\s+[\"']?$")
"""`[ -f path ] && source path`: the block checks first, so a missing file is expected."""


def _display(path: str) -> str:
    for var in ("${CLAUDE_PROJECT_DIR}/", "$CLAUDE_PROJECT_DIR/", "./"):
        if path.startswith(var):
            return path[len(var):]
    return path


def _handled_elsewhere(doc: CommandFile, path: str) -> bool:
    """The file is written, copied, created or checked for somewhere in the file's blocks."""
    rel = _display(path)
    for block in doc.bash_blocks:
        start = block.content.find(rel)
        while start >= 0:
            line_start = block.content.rfind("\n", 0, start) + 1
            before = block.content[line_start:start]
            before = re.sub(r"(?:\$\{CLAUDE_PROJECT_DIR\}|\$CLAUDE_PROJECT_DIR|\.)/?[\"']?$",
                            "", before)
            if _WRITES_RE.search(before) or _GUARDED_RE.search(before):
                return True
            start = block.content.find(rel, start + len(rel))
    return False


def _folder_files(ctx: RuleContext, root: Path, rel: str) -> list[str] | None:
    """Files with the target's suffix in its folder, its top folder (`.claude/lib/` for
    `.claude/lib/core/x.sh`) and the top folder's subfolders, or None when there are none: a
    tree without any library or script there is a partial copy (a sample, a synced or
    ignored folder), where a missing file says nothing about the repository. Each folder
    listed is recorded as an input (a folder's input is its listing). The folders are
    listed once for all the missing targets in them, of every file (`ctx.shared`): the
    answer depends on the folders and the suffix alone."""
    target = PurePosixPath(rel)
    parts = target.parts
    if len(parts) < 3:
        return None
    top, parent, suffix = f"{parts[0]}/{parts[1]}", target.parent, target.suffix or ".sh"
    return ctx.shared(f"folder-files:{root}:{top}:{parent}:{suffix}",
                      lambda own: _list_folder_files(own, root, top, parent, suffix))


def _list_folder_files(ctx: RuleContext, root: Path, top_rel: str, parent: PurePosixPath,
                       suffix: str) -> list[str] | None:
    top = root / top_rel
    folders = [top, root / parent]
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


def _targets(lines: list[BashLine]) -> Iterator[tuple[int, int, int, str, str]]:
    """(line, start, end, verb, path) of each `source`/`.`/run of a literal `.claude/` path."""
    for no, line in enumerate(lines):
        text = line.text
        if ".claude/" not in text or line.classes[:1] in (HEREDOC, HEREDOC_QUOTED):
            continue
        seen: set[int] = set()
        for regex in (_SOURCE_RE, _RUN_RE):
            for m in regex.finditer(text):
                start = m.start("path")
                if start in seen or not line.is_code(m.start()):
                    continue
                verb = m.group("verb") or ""
                if verb and not line.is_code(m.start("verb")):
                    continue
                if no > 0 and lines[no - 1].text.rstrip().endswith("\\") \
                        and not text[:m.start()].strip():
                    continue  # a continued line: the path is an argument, not the command
                seen.add(start)
                yield no, start, m.end("path"), verb, m.group("path")


@rule("BTN315", "bash-project-file-missing", Severity.WARNING, (Kind.COMMAND, Kind.SKILL),
      cross_file=True, convention=Convention.CLAUDE_CODE)
def project_file_missing(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A bash block sources or runs a `.claude/` file the repository does not have.

    `source .claude/lib/x.sh` of a missing library fails with "No such file or directory"
    and every function it should define is then "command not found"; `bash
    .claude/scripts/x.sh` or `./.claude/commands/x.sh` of a missing script fails the step.
    Claude Code runs the block from the project root, so a literal `.claude/...` path (also
    written `./.claude/...` or `${CLAUDE_PROJECT_DIR}/.claude/...`) names one file here.
    Paths through other variables, globs, files under `tmp/`, files the command writes,
    copies or tests for (`[ -f x ] && source x`), blocks that are templates or transcripts,
    and trees whose folder holds no such file at all (a partial copy: the folder is synced
    or ignored) are not checked. When a file of the same name sits in the top folder or one
    folder below it (`.claude/lib/core/x.sh`), the message names it. Fix: correct the path
    or add the file.

    Reported:

        ==> .claude/lib/core/state-persistence.sh <==
        init_workflow_state() { :; }
        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        init_workflow_state "build"
        ```

    Not reported:

        ==> .claude/lib/core/state-persistence.sh <==
        init_workflow_state() { :; }
        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        [ -f .claude/lib/optional.sh ] && source .claude/lib/optional.sh
        bash .claude/tmp/build_step.sh
        ```
    """
    if ctx.root is None or not Path(ctx.path).is_relative_to(ctx.root / ".claude"):
        return  # a plugin's file: `.claude/` is the user's project, not this tree
    for block in doc.bash_blocks:
        if ".claude/" not in block.content:
            continue  # every target is a literal `.claude/` path
        targets = list(_targets(list(lexed(block.content))))
        if not targets or classify(block.content).kind in _NOT_SCRIPTS:
            continue  # (classified only where there is something to check)
        for no, start, end, verb, path in targets:
            rel = _display(path)
            if "/tmp/" in f"/{rel}" or rel.endswith("/"):
                continue
            target = ctx.root / rel
            if ctx.exists(target) or _handled_elsewhere(doc, path):
                continue
            present = _folder_files(ctx, ctx.root, rel)
            if present is None:
                continue
            what = "sources" if verb in ("source", ".") else "runs"
            message = f"the block {what} {os.path.normpath(rel)}, which does not exist"
            name = PurePosixPath(rel).name
            same = [p for p in present if PurePosixPath(p).name == name]
            if len(same) == 1:
                message += f"; {same[0]} has that name"
            line = block.start_line + 1 + no
            yield ctx.finding(Range.of_line(line, start, end), message)


_BRACED_ARGS_RE = LazyPattern(r"\$\{ARGUMENTS(?P<rest>[^}]*)\}")
_ARGS_SET_RE = re.compile(r"(?:^|[\s;&|(])(?:(?:export|local|declare|readonly)\s+(?:-\w+\s+)*)?"
                          r"ARGUMENTS(?:\[[^\]]*\])?\+?=|\b(?:read|mapfile|readarray)\b[^;&|]*"
                          r"\bARGUMENTS\b|\bfor\s+ARGUMENTS\s+in\b")
"""The file's blocks give the shell variable `ARGUMENTS` a value themselves."""


@rule("BTN316", "bash-arguments-never-substituted", Severity.WARNING,
      (Kind.COMMAND, Kind.SKILL), fixable=True, convention=Convention.CLAUDE_CODE)
def braced_arguments(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`${ARGUMENTS}` in a bash block: Claude Code never fills it in, and the shell has no
    such variable.

    Claude Code substitutes `$ARGUMENTS`, `$ARGUMENTS[N]`, `$N` and declared argument names
    in the whole text of a command or skill, code blocks included, before the model reads it
    (the pinned claude binary replaces the exact string `$ARGUMENTS`); `${ARGUMENTS}` does
    not contain that string, so it reaches the block unchanged. There it is a shell
    variable nothing sets (Claude Code exports no `ARGUMENTS` to the Bash tool), so it
    expands to nothing and the block runs without the user's input. Not reported where the
    file's blocks assign `ARGUMENTS` themselves, in single quotes, or in blocks that are
    templates. Fix: write `$ARGUMENTS` (quick fix for the plain form), or assign the
    variable first: `ARGUMENTS="$ARGUMENTS"`.

    Reported:

        ==> .claude/commands/review.md <==
        ---
        description: Code review
        ---
        ```bash
        PR_NUMBER="${ARGUMENTS}"
        gh pr view "$PR_NUMBER"
        ```

    Not reported:

        ==> .claude/commands/review.md <==
        ---
        description: Code review
        ---
        ```bash
        PR_NUMBER="$ARGUMENTS"
        gh pr view "$PR_NUMBER"
        ```
    """
    if any(_ARGS_SET_RE.search(b.content) for b in doc.bash_blocks if "ARGUMENTS" in b.content):
        return
    for block in doc.bash_blocks:
        if "${ARGUMENTS" not in block.content or classify(block.content).kind in _NOT_SCRIPTS:
            continue
        for no, line in enumerate(lexed(block.content)):
            for m in _BRACED_ARGS_RE.finditer(line.text):
                if not line.expands(m.start()):
                    continue
                rng = Range.of_line(block.start_line + 1 + no, m.start(), m.end())
                fix = None
                if not m.group("rest"):
                    fix = ctx.fix("Change to `$ARGUMENTS`", ctx.edit(rng, "$ARGUMENTS"))
                yield ctx.finding(
                    rng, f"`{m.group(0)}` is never substituted: Claude Code fills in "
                    f"`$ARGUMENTS`, and no shell variable ARGUMENTS is set, so it expands to "
                    f"nothing here; expected `$ARGUMENTS`", fix=fix)
