"""Fix-all: which fixes apply together, applying them to text, and `baton check --fix`.

Rules compute each finding's fix with the finding (ruff's model). The editor's "fix all"
(`lsp.code_actions`) and the CLI's `--fix` / `--diff` choose the fixes to apply with the same
function, `fix_all`, so the command line fixes exactly what the editor fixes; the CLI then
checks the fixed text again and repeats until no fix applies (a fix that makes another
finding fixable is applied in the next pass, as ruff does).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..model.base import Finding, Kind, Range, TextEdit
from ..paths import in_worktrees, norm
from ..runs.confine import UnsafePath, baton_owned, outside, read_head, write_atomic
from ..workspace.index import WorkspaceIndex

log = logging.getLogger(__name__)

MAX_FIX_PASSES = 10
"""Passes of check-then-fix before `fix_paths` gives up: each pass applies every fix that
does not overlap another, so a tree needs more than two or three only when fixes keep
undoing each other (then the last pass's text is kept and the loop is reported)."""

Position = tuple[int, int]


class _Taken:
    """The text spans already edited, as sorted disjoint closed intervals: an overlap test
    is a bisection, where a test against every earlier edit made fix-all quadratic in the
    number of fixes (a large plan has one per phase)."""

    def __init__(self) -> None:
        self.starts: list[Position] = []
        self.ends: list[Position] = []

    def overlaps(self, rng: Range) -> bool:
        """Whether `rng` touches any span added so far (closed intervals)."""
        k = bisect_right(self.starts, (rng.end_line, rng.end_char)) - 1
        return k >= 0 and self.ends[k] >= (rng.start_line, rng.start_char)

    def add(self, rng: Range) -> None:
        s, e = (rng.start_line, rng.start_char), (rng.end_line, rng.end_char)
        i = bisect_right(self.starts, s)
        if i > 0 and self.ends[i - 1] >= s:
            i -= 1
            s, e = self.starts[i], max(e, self.ends[i])
        j = i
        while j < len(self.starts) and self.starts[j] <= e:
            e = max(e, self.ends[j])
            j += 1
        self.starts[i:j] = [s]
        self.ends[i:j] = [e]


def fix_all(findings: Iterable[Finding], unsafe: bool = False) -> list[Finding]:
    """The findings of one document whose fixes fix-all applies: the safe ones (all with
    `unsafe`), in order, skipping any whose edits overlap an earlier chosen one's (its turn
    comes in the next pass, on the text the first fix left)."""
    taken = _Taken()
    out: list[Finding] = []
    for f in findings:
        if f.fix is None or not (f.fix.safe or unsafe):
            continue
        if any(taken.overlaps(e.range) for e in f.fix.edits):
            continue
        for e in f.fix.edits:
            taken.add(e.range)
        out.append(f)
    return out


def fix_all_edits(findings: Iterable[Finding], unsafe: bool = False) -> list[TextEdit]:
    """The edits of `fix_all`'s findings, for one workspace edit."""
    return [e for f in fix_all(findings, unsafe) if f.fix is not None for e in f.fix.edits]


_BREAK = re.compile(r"\r\n|\r|\n")


def apply_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """`text` with non-overlapping `edits` applied. Positions count lines as the rules do
    (`\\n`, `\\r\\n` and a lone `\\r` each end one: `parse.text.split_lines`) and columns in
    code points; a position past a line's end is its end. The file's own line ends are
    kept, and a CRLF file's inserted lines get CRLF too."""
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    ends = [m.start() for m in _BREAK.finditer(text)] + [len(text)]

    def offset(line: int, char: int) -> int:
        if line >= len(starts):
            return len(text)
        line = max(line, 0)
        return min(starts[line] + max(char, 0), ends[line])

    crlf = "\r\n" in text
    spans = sorted(((offset(e.range.start_line, e.range.start_char),
                     offset(e.range.end_line, e.range.end_char), e.new_text) for e in edits),
                   key=lambda s: (s[0], s[1]))
    out: list[str] = []
    at = 0
    for start, end, new in spans:
        if start < at:
            raise ValueError("overlapping edits")
        out.append(text[at:start])
        out.append(re.sub(r"(?<!\r)\n", "\r\n", new) if crlf else new)
        at = max(end, start)
    out.append(text[at:])
    return "".join(out)


@dataclass
class FileFix:
    """One file's text before and after the fixes (`bom`: it starts with a UTF-8 BOM,
    which the rules' positions leave out and the written file keeps)."""

    root: str
    original: str
    fixed: str
    bom: bool = False


@dataclass
class FixResult:
    files: dict[str, FileFix] = field(default_factory=dict)
    """Path → its texts, for every file a fix changed."""
    fixed: int = 0
    """Findings whose fixes were applied (over all passes)."""
    passes: int = 0
    converged: bool = True
    skipped: list[str] = field(default_factory=list)
    """Why a file's fixes were not applied (a link, not UTF-8, unreadable), one line each."""


Target = tuple[WorkspaceIndex, str, Kind]


def fix_paths(targets: Sequence[Target], findings: Sequence[Finding], unsafe: bool = False,
              max_passes: int = MAX_FIX_PASSES) -> FixResult:
    """Apply fix-all to the checked `targets` (with their `findings`), in memory: the fixed
    text of each file becomes its index's overlay, the workspaces it changed are checked
    again, and fix-all runs again, until no fix applies. Nothing is written (`write_fixes`
    does, `unified_diff` shows)."""
    from .checker import _check_here  # `--fix` only: the editor's fix-all needs no checker

    result = FixResult()
    index_of = {norm(file): idx for idx, file, _ in targets}
    current = list(findings)
    for _ in range(max_passes):
        by_file: dict[str, list[Finding]] = {}
        for f in current:
            if f.fix is not None:
                by_file.setdefault(f.path, []).append(f)
        edits: dict[str, list[TextEdit]] = {}
        touched: set[str] = set()
        applied = 0
        for path, found in by_file.items():
            chosen = fix_all(found, unsafe)
            paths = {norm(e.path) for f in chosen if f.fix for e in f.fix.edits}
            idx = index_of.get(norm(path))
            if not chosen or idx is None or paths & touched:
                continue  # another file's fixes edit one of these files: the next pass
            if not all(_load(result, idx, p) for p in paths):
                continue
            touched |= paths
            applied += len(chosen)
            for f in chosen:
                assert f.fix is not None
                for e in f.fix.edits:
                    edits.setdefault(norm(e.path), []).append(e)
        if not edits:
            break
        result.passes += 1
        result.fixed += applied
        changed_roots: set[str] = set()
        for path, file_edits in edits.items():
            fix = result.files[path]
            new = apply_edits(fix.fixed, file_edits)
            if new == fix.fixed:
                continue  # a fix that changes nothing: checking again would find it again
            fix.fixed = new
            idx = index_of.get(path) or next(i for i in index_of.values()
                                              if str(i.root) == fix.root)
            idx.set_overlay(path, fix.fixed)
            idx.changed(path)
            changed_roots.add(fix.root)
        if not changed_roots:
            break
        again = [(idx, file, kind) for idx, file, kind in targets
                 if str(idx.root) in changed_roots]
        current = _check_here(list(again), None)
    else:
        result.converged = not any(fix_all([f for f in current if f.fix is not None], unsafe))
    for path in [p for p, fx in result.files.items() if fx.fixed == fx.original]:
        del result.files[path]  # fixes that undid each other
    return result


def _load(result: FixResult, idx: WorkspaceIndex, path: str) -> bool:
    """Read `path`'s text into `result` once, as it is on disk; False (and why, in
    `skipped`) when it must not be fixed: a symbolic link (fixing it would replace the
    link, or write where it points), not a regular file, a link out of the workspace, or
    not UTF-8."""
    if path in result.files:
        return True
    why = None
    try:
        if os.path.islink(path):
            why = "it is a symbolic link (fix the file it points to)"
        else:
            data, size = read_head(idx.root, path, idx.config.max_file_size + 1)
            if size > idx.config.max_file_size:
                why = "it is larger than max-file-size"
            else:
                text = data.decode("utf-8")
    except UnsafePath as exc:
        why = str(exc)
    except OSError as exc:
        why = exc.strerror or str(exc)
    except UnicodeDecodeError:
        why = "it is not UTF-8"
    if why is not None:
        result.skipped.append(f"{path}: not fixed: {why}")
        return False
    bom = text.startswith("\ufeff")
    text = text.removeprefix("\ufeff")
    result.files[path] = FileFix(root=str(idx.root), original=text, fixed=text, bom=bom)
    return True


def write_fixes(result: FixResult) -> list[str]:
    """Write each fixed file in place through `runs.confine` (a temp file renamed over it:
    never through a link, never outside its workspace), keeping its mode; a file changed
    on disk since it was read is left alone. Returns the problems, one line each."""
    problems: list[str] = []
    for path, fix in result.files.items():
        root = Path(fix.root)
        prefix = "\ufeff" if fix.bom else ""
        try:
            data, _ = read_head(root, path, len((prefix + fix.original).encode("utf-8")) + 1)
            if data != (prefix + fix.original).encode("utf-8"):
                problems.append(f"{path}: not fixed: it changed while it was checked")
                continue
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            write_atomic(root, path, (prefix + fix.fixed).encode("utf-8"), mode=mode)
        except OSError as exc:
            problems.append(f"{path}: not fixed: {exc}")
    return problems


def unified_diff(path: str, shown: str, fix: FileFix) -> str:
    """The fix of one file as a unified diff (ruff's `--diff`): `shown` names it."""
    import difflib  # `--diff` only

    lines = difflib.unified_diff(fix.original.splitlines(keepends=True),
                                 fix.fixed.splitlines(keepends=True),
                                 fromfile=shown, tofile=shown)
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end "
                   "of file\n")
    return "".join(out)


# -- file creations: editor-only quick fixes -------------------------------------------------

AGENT_REFERENCE_CODES = {"BTN319": "claude", "BTN711": "opencode", "BTN713": "opencode"}
"""Findings naming an agent that does not exist, and the dialect whose agent file creates
it: Claude Code's `.claude/agents/<name>.md`, OpenCode's `.opencode/agent/<name>.md`."""

LINK_CODES = ("BTN130", "BTN133", "BTN830")
"""Findings of a relative link or `@` import whose target file does not exist."""

_CLAUDE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_OPENCODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)*")
_BATON_DIRS = ((".claude", "data"),)
"""Directories of Baton's run history (checkpoints, logs) that may predate the `.gitignore`
marker `runs.confine.baton_owned` looks for."""


@dataclass(frozen=True)
class FileCreation:
    """A new file a quick fix offers to create (`path`, absolute, holding `text`).

    Not a `Fix`: fix-all and `baton check --fix` (even with `--unsafe-fixes`) apply only text
    edits to files that exist. A missing agent or link target is as often a misspelt name as
    a missing file, and a template written by a batch run would silence the finding with a
    stub nobody reviewed, so creating a file is offered one at a time, in the editor, where
    the user picks it and sees the new file."""

    title: str
    path: str
    text: str


def _flagged(finding: Finding, lines: Sequence[str]) -> str | None:
    """The text the finding's range covers (one line): the agent name or link target."""
    rng = finding.range
    if rng.start_line != rng.end_line or not 0 <= rng.start_line < len(lines):
        return None
    return lines[rng.start_line][rng.start_char:rng.end_char].strip()


def _claude_agent(name: str) -> str:
    return (f"---\nname: {name}\n"
            f"description: When Claude should delegate to {name} (describe the task it takes "
            "and what it returns)\n---\n\n"
            f"# {name}\n\nYou are the {name} agent. Describe the task, the steps to follow "
            "and the result to return.\n")


def _opencode_agent(name: str) -> str:
    title = name.rsplit("/", 1)[-1]
    return (f"---\ndescription: When to delegate to {title} (describe the task it takes and "
            "what it returns)\nmode: subagent\n---\n\n"
            f"# {title}\n\nYou are the {title} agent. Describe the task, the steps to follow "
            "and the result to return.\n")


def _agent_creation(finding: Finding, name: str, idx: WorkspaceIndex) -> FileCreation | None:
    root = idx.root
    if AGENT_REFERENCE_CODES[finding.code] == "claude":  # a plugin keeps them at its root
        if not _CLAUDE_NAME.fullmatch(name):
            return None
        return FileCreation(f"Create agent `{name}`", str(idx.agents_dir / f"{name}.md"),
                            _claude_agent(name))
    if not _OPENCODE_NAME.fullmatch(name) or ".." in name.split("/"):
        return None
    base = root.parent if root.name == ".opencode" else root
    sub = "agents" if (base / ".opencode" / "agents").is_dir() \
        and not (base / ".opencode" / "agent").is_dir() else "agent"
    return FileCreation(f"Create agent `{name}`",
                        str(base / ".opencode" / sub / f"{name}.md"), _opencode_agent(name))


def _link_creation(finding: Finding, target: str, root: Path) -> FileCreation | None:
    if finding.code == "BTN830":  # `@path`: relative to the importing file, always
        target = target.removeprefix("@")
        base = Path(finding.path).parent
    else:
        target = target.strip("<>")
        base = root if target.startswith(".claude/") else Path(finding.path).parent
    if not target or "#" in target or "%" in target or "$" in target or "://" in target \
            or target.startswith(("/", "~", ".opencode/")) or not target.endswith(".md"):
        return None  # anchors, encoded, variable, absolute or non-markdown: not trivial
    path = os.path.normpath(base / target)
    heading = Path(path).stem.replace("-", " ").replace("_", " ").strip() or Path(path).stem
    shown = os.path.relpath(path, root).replace(os.sep, "/")
    return FileCreation(f"Create `{shown}`", path, f"# {heading[:1].upper()}{heading[1:]}\n")


def creation_for(finding: Finding, lines: Sequence[str],
                 idx: WorkspaceIndex) -> FileCreation | None:
    """The file that would resolve `finding` (an unknown agent, a missing link target),
    created from a template; None when the finding has none, or when the file would land
    outside the workspace of `idx`, through a link leaving it, in a directory Baton owns, or
    where something already exists (a file, or a file where a directory on the way would
    be). Read from the text the finding flags, as its rule read it: no rule runs again."""
    if finding.code not in AGENT_REFERENCE_CODES and finding.code not in LINK_CODES:
        return None
    flagged = _flagged(finding, lines)
    if not flagged:
        return None
    root = idx.root
    if finding.code in AGENT_REFERENCE_CODES:
        made = _agent_creation(finding, flagged.strip("\"'`"), idx)
    else:
        made = _link_creation(finding, flagged, root)
    if made is None or outside(root, made.path) is not None:
        return None
    parts = Path(os.path.relpath(made.path, root)).parts
    if in_worktrees(parts) or any(parts[:len(d)] == d for d in _BATON_DIRS):
        return None
    try:
        if baton_owned(root, made.path) or os.path.lexists(made.path):
            return None
    except OSError:
        return None
    above = os.path.dirname(made.path)
    while not os.path.lexists(above):
        above = os.path.dirname(above)
    return made if os.path.isdir(above) else None  # not under a file of that name
