"""Where a workflow's files go, decided before any agent runs.

The seeds' hard-barrier pattern needs every artifact path fixed up front: the topic
directory `<specs>/NNN_slug/` with `reports/ plans/ summaries/ debug/`, the report
path of each research topic, the plan path, one summary per phase. Topic numbers are
allocated under a file lock so concurrent workflows never share a directory, and every
path handed to an agent is absolute and proven to be inside the workspace.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PathError
from ..runs import confine

SUBDIRS = ("reports", "plans", "summaries", "debug")
TEST_LOG = "test_output_{}.log"
"""In a topic's `debug/`: the test command's raw output of test iteration N."""
IGNORE_TEST_LOGS = (b"# Baton created this directory: the test command's raw output it writes\n"
                    b"# here is machine-local; the debug reports beside it are for review.\n"
                    b"/" + TEST_LOG.format("*").encode() + b"\n/.gitignore\n")
"""`debug/`'s `.gitignore`: the test logs only (and itself), so the topic directory's
deliverables (reports, plans, summaries, debug reports) stay visible to git."""
_SLUG_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "to", "for", "in", "on", "with", "into", "from", "by"])
_NNN = re.compile(r"^(\d{3,})_")


def slugify(text: str, max_words: int = 5, max_len: int = 40) -> str:
    """`Research auth patterns and plan the login flow` → `research_auth_patterns_plan_login`.

    Only [a-z0-9_] survive, so a hostile description (`$(touch x)`, backticks, `../`) can
    never shape a path."""
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _SLUG_STOP]
    slug = "_".join(words[:max_words])[:max_len].strip("_")
    return slug or "workflow"


def inside(root: Path, path: Path) -> bool:
    root_r = os.path.realpath(root)
    path_r = os.path.realpath(path)
    return path_r == root_r or path_r.startswith(root_r.rstrip(os.sep) + os.sep)


def contained(root: Path, path: str | Path, what: str = "path") -> Path:
    """`path` made absolute (relative to `root`) and checked to stay inside the workspace,
    symlinks resolved; raises `PathError` naming the offending path otherwise."""
    p = Path(path)
    if not p.is_absolute():
        p = root / p
    p = Path(os.path.normpath(p))
    if not inside(root, p):
        raise PathError(f"{what} {str(path)!r} is outside the workspace {root}; refused")
    return p


@contextlib.contextmanager
def file_lock(root: Path, path: Path, blocking: bool = True) -> Iterator[int]:
    """An exclusive `flock` on `path` inside the workspace `root` (created if needed);
    released on exit or process death. Its directory, made here, is Baton's own (it ignores
    itself in git: `confine.makedirs_own`)."""
    confine.makedirs_own(root, path.parent)
    fd = confine.open_lock(root, path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        yield fd
    finally:
        os.close(fd)


@dataclass(frozen=True)
class TopicDir:
    number: int
    slug: str
    path: Path

    @property
    def reports(self) -> Path:
        return self.path / "reports"

    @property
    def plans(self) -> Path:
        return self.path / "plans"

    @property
    def summaries(self) -> Path:
        return self.path / "summaries"

    @property
    def debug(self) -> Path:
        return self.path / "debug"

    @property
    def name(self) -> str:
        return self.path.name


SPECS_AUTO = "auto"
ROOT_SPECS = "specs"
CLAUDE_SPECS = ".claude/specs"
AGENT_SCRATCH = ".baton"
"""Under the specs directory: files agents write outside any topic (the classification)."""


def specs_dir(root: Path, setting: str = SPECS_AUTO, *, claude: bool = False) -> Path:
    """Where topic directories live: the `specs-dir` setting, or for `auto` the layout the
    tree already has. Claude Code refuses writes under `.claude/` in every permission mode
    but bypassPermissions, so when a claude agent writes the artifacts `auto` means
    `specs/` at the root (where the current generation of these trees keeps them); an
    existing `.claude/specs/` is still read, and used by the other agents."""
    if setting != SPECS_AUTO:
        return contained(root, setting, "specs-dir")
    at_root, in_claude = root / ROOT_SPECS, root / CLAUDE_SPECS
    if at_root.is_dir() or claude or not in_claude.is_dir():
        return at_root
    return in_claude


def planned_topic(root: Path, base: Path, description: str, plan: str | None = None) -> Path:
    """The topic directory a new run would get, without creating anything (preflight checks
    what may write there before the topic is allocated): the plan's own topic, rebased
    under `base` as `topic_of_plan` does, else `<base>/NNN_slug` with NNN one past the
    highest existing number (another run may take it first; the name is what matters)."""
    if plan:
        planned = root / plan
        parent = planned.parent.parent if planned.parent.name == "plans" else planned.parent
        return parent if inside(base, parent) else base / parent.name
    highest = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            m = _NNN.match(entry.name)
            if m and entry.is_dir():
                highest = max(highest, int(m.group(1)))
    return base / f"{highest + 1:03d}_{slugify(description)}"


def allocate_topic(root: Path, description: str, base: Path | None = None) -> TopicDir:
    """Create `<base>/NNN_slug/` (base: `specs_dir(root)`) with its sub-directories, NNN one
    past the highest existing number, under a lock shared by every workflow here."""
    base = contained(root, base if base is not None else specs_dir(root), "specs directory")
    confine.makedirs(root, base)
    slug = slugify(description)
    with file_lock(root, root / ".claude" / "data" / "locks" / "topics.lock"):
        highest = 0
        for entry in os.scandir(base):
            m = _NNN.match(entry.name)
            if m and entry.is_dir():
                highest = max(highest, int(m.group(1)))
        number = highest + 1
        path = base / f"{number:03d}_{slug}"
        with confine.directory(root, base) as fd:
            os.mkdir(path.name, dir_fd=fd)  # a new number: never an existing directory
        make_topic(root, path)
    return TopicDir(number, slug, path)


def topic_of_plan(root: Path, plan: Path, base: Path | None = None) -> TopicDir:
    """The topic a plan lives in (`…/NNN_slug/plans/x.md`), made complete if a sub-directory
    is missing; a plan elsewhere gets its parent directory as topic number 0.

    With `base` (the specs directory agents may write to) and a plan outside it — say
    `.claude/specs/002_x/plans/p.md` while claude writes under `specs/` — the topic's
    artifacts go to `<base>/002_x/`, the plan itself staying where it is.
    """
    plan = contained(root, plan, "plan")
    parent = plan.parent.parent if plan.parent.name == "plans" else plan.parent
    m = _NNN.match(parent.name)
    number = int(m.group(1)) if m else 0
    slug = parent.name[m.end():] if m else parent.name
    if base is not None and not inside(base, parent):
        parent = contained(root, base / parent.name, "topic directory")
    make_topic(root, parent)
    return TopicDir(number, slug, parent)


def make_topic(root: Path, topic: Path) -> None:
    """The topic directory's sub-directories, each made (or found) inside the workspace: a
    repository shipping `<topic>/debug` as a link elsewhere is refused here. A `debug/` made
    here ignores the test logs Baton writes in it (`IGNORE_TEST_LOGS`)."""
    for sub in SUBDIRS:
        if sub == "debug":
            confine.makedirs_own(root, topic / sub, IGNORE_TEST_LOGS)
        else:
            confine.makedirs(root, topic / sub)


def run_paths(root: Path, topic: TopicDir, slugs: list[str], plan_path: str | None
              ) -> dict[str, Any]:
    """Every artifact path of a run in `topic`, pre-calculated before any agent runs: one
    report per research topic slug, the plan (the given one, contained, or the topic's
    own), and the topic's directories. Initialize writes them; `baton adopt` too."""
    reports = [str(topic.reports / f"{i:03d}_{slug}.md") for i, slug in enumerate(slugs, 1)]
    plan = str(contained(root, plan_path, "plan")) if plan_path else \
        str(topic.plans / f"{topic.number:03d}_{topic.slug}_plan.md")
    for p in [*reports, plan]:
        contained(root, p, "artifact path")
    return {"topic_dir": str(topic.path), "topic_number": topic.number, "reports": reports,
            "plan": plan, "reports_dir": str(topic.reports), "plans_dir": str(topic.plans),
            "summaries_dir": str(topic.summaries), "debug_dir": str(topic.debug)}
