"""The rule registry: small, documented units with stable codes.

A rule is a generator function decorated with `@rule(...)`. Its docstring is the
documentation `baton rule CODE` prints, so it explains why the rule exists and how to fix
what it reports. Rules receive the parsed document and a `RuleContext`; they build findings
with `ctx.finding(...)` so code, name, severity and path are always filled in consistently.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..model.base import (
    Convention,
    Finding,
    Fix,
    Kind,
    Range,
    Related,
    Severity,
    TextEdit,
    rule_docs_url,
)
from ..model.config import BatonConfig
from ..parse.markdown import MarkdownDoc, parse_markdown
from ..parse.text import Source
from . import RULE_CODES, load_all, load_for

if TYPE_CHECKING:
    from ..workspace.index import WorkspaceIndex


_T = TypeVar("_T")
CheckFn = Callable[[Any, "RuleContext"], Iterable[Finding]]


def closest(word: str, choices: Sequence[str], cutoff: float = 0.6) -> str | None:
    """The choice `word` most likely misspells (case-insensitive; `_` read as `-` when no
    choice has one), or None: the one source of every "did you mean" a fix offers."""
    folded = {c.lower(): c for c in choices}
    key = word.lower()
    if key in folded:
        return folded[key]
    if not any("_" in c for c in folded):
        key = key.replace("_", "-")
        if key in folded:
            return folded[key]
    import difflib  # here: a check of a tree with no misspelling never needs it

    match = difflib.get_close_matches(key, list(folded), n=1, cutoff=cutoff)
    return folded[match[0]] if match else None


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of neighbours that turn `a` into `b`
    (optimal string alignment): how far a typo is from the word meant, where `closest`'s
    ratio only ranks candidates."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def lines_with(text: str, word: str) -> list[int]:
    """The indexes of the lines of `text` (split at `\n`) that hold `word`, which holds no
    `\n`, in order.

    Found in the text, with the lines between counted, not read: the word is absent from
    most files, and on few lines of the others."""
    found: list[int] = []
    no = at = 0  # line `no` starts at or before `at`
    i = text.find(word)
    while i >= 0:
        no += text.count("\n", at, i)
        found.append(no)
        at = text.find("\n", i + len(word))
        if at < 0:
            break
        i = text.find(word, at + 1)  # on a later line: one index per line
    return found


SKIPPED_LOG = "baton_lsp.rules.skipped"
"""Logger saying why a rule, block or file was not checked; `baton check --verbose` shows it."""
NOT_CHECKED = "not-checked"
"""Tag of a finding that says some input could not be checked (a limit was reached): it is
information at most, whatever severity its rule is configured to (see `engine`)."""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    kinds: frozenset[Kind]
    check: CheckFn
    fixable: bool = False
    cross_file: bool = False
    convention: Convention = Convention.BATON
    everywhere: Callable[[BatonConfig], bool] | None = None
    """A setting that runs the rule on files outside its convention (`shellcheck = "all"`)."""

    def applies(self, followed: bool, config: BatonConfig) -> bool:
        """Whether the rule runs on a file that does (`followed`) or does not follow its
        convention."""
        return followed or (self.everywhere is not None and self.everywhere(config))

    @cached_property
    def doc(self) -> str:
        """The check's docstring, cleaned (`inspect.getdoc`): read where documentation is
        shown, not when the rule registers (a check loads a hundred rules and reads none)."""
        return inspect.getdoc(self.check) or ""

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else self.name

    @property
    def url(self) -> str:
        return rule_docs_url(self.code)


_REGISTRY: dict[str, Rule] = {}
_NAMES: set[str] = set()
"""The names of `_REGISTRY`'s rules: a registration tests its name here, not against every
rule registered before it."""
_REGISTERING = threading.Lock()


def rule(code: str, name: str, severity: Severity, kinds: Iterable[Kind], *,
         fixable: bool = False, cross_file: bool = False,
         convention: Convention = Convention.BATON,
         everywhere: Callable[[BatonConfig], bool] | None = None,
         ) -> Callable[[CheckFn], CheckFn]:
    """Register a rule. Codes and names must be unique; the docstring is required.

    `convention` is the body of conventions the rule enforces: the engine runs it only on
    files that follow that convention (see `rules.conventions`), or on every file of its
    kinds when `everywhere(config)` says so."""

    def register(fn: CheckFn) -> CheckFn:
        if not (fn.__doc__ or "").strip():  # what `inspect.getdoc` would clean to nothing
            raise ValueError(f"rule {code} needs a docstring: it is the rule's documentation")
        with _REGISTERING:  # rule modules may be imported by two threads at once
            if code in _REGISTRY:
                raise ValueError(f"duplicate rule code {code}")
            if name in _NAMES:
                raise ValueError(f"duplicate rule name {name}")
            _REGISTRY[code] = Rule(code, name, severity, frozenset(kinds), fn, fixable,
                                   cross_file, convention, everywhere)
            _NAMES.add(name)
        return fn

    return register


def unregister(code: str) -> None:
    """Drop a registered rule (a test's own rules, once it is done with them)."""
    with _REGISTERING:
        dropped = _REGISTRY.pop(code, None)
        if dropped is not None:
            _NAMES.discard(dropped.name)


def all_rules() -> list[Rule]:
    load_all()
    return [ _REGISTRY[c] for c in sorted(_REGISTRY)]


def unknown_selectors(selectors: Iterable[str]) -> list[str]:
    """The `select` / `ignore` entries that name no rule: no registered code starts with
    them. Such an entry selects nothing, so a typo (`BTN1O1`) would silently turn every rule
    off ("All checks passed"); ruff rejects an unknown selector, and so does Baton."""
    codes = RULE_CODES | _REGISTRY.keys()  # and rules registered at run time (plugins, tests)
    return [s for s in dict.fromkeys(selectors)
            if not s or not any(code.startswith(s) for code in codes)]


def rules_of_kind(kind: Kind) -> list[Rule]:
    """The rules that apply to `kind`, sorted by code, loading only their modules."""
    load_for(kind.value)
    return [_REGISTRY[c] for c in sorted(_REGISTRY) if kind in _REGISTRY[c].kinds]


def registered(code: str) -> Rule | None:
    """The rule `code` if its module is loaded, without importing the other rule modules
    (`get_rule` loads them all): for work started before the check proper."""
    return _REGISTRY.get(code)


def get_rule(code_or_name: str) -> Rule | None:
    load_all()
    key = code_or_name.strip()
    if key.upper() in _REGISTRY:
        return _REGISTRY[key.upper()]
    return next((r for r in list(_REGISTRY.values()) if r.name == key), None)


@dataclass
class RuleContext:
    """What a rule may look at besides its document; records cross-file dependencies."""

    path: str
    kind: Kind
    config: BatonConfig = field(default_factory=BatonConfig)
    index: WorkspaceIndex | None = None
    root: Path | None = None
    lines: list[str] = field(default_factory=list)
    rule: Rule | None = None
    depends_on: set[str] = field(default_factory=set)
    """Paths (files or directories) whose change can change this file's findings."""
    memo: dict[str, Any] = field(default_factory=dict)
    """Work two rules of one family need on the same file, done once per check."""
    trees: set[str] = field(default_factory=set)
    """Directories read as a whole (a run store): the result cache fingerprints everything
    under them. Not re-check triggers: the editor follows runs itself."""
    expires: float | None = None
    """When (epoch seconds) the findings may change with the clock alone; 0: never cache."""
    results: Any = None
    """The persistent `ResultCache` of this check, if any (ShellCheck keeps results there)."""
    text: str | None = None
    """`"\n".join(lines)`, when whoever made the context had it at hand (the file's text,
    without a `\r`): `joined` gives it without joining the lines again."""

    def joined(self) -> str:
        """The file's lines joined by `\n`, joined once per file."""
        if self.text is None:
            self.text = "\n".join(self.lines)
        return self.text

    def lines_with(self, word: str) -> list[int]:
        """The indexes of the file's lines that hold `word` (no line break), in order."""
        return lines_with(self.joined(), word)

    def markdown(self) -> MarkdownDoc:
        """The file's block structure (headings, fences), parsed once per check: every rule
        that asks whether a line is inside a fence gets the same (CommonMark) pairing."""
        doc = self.memo.get("markdown")
        if doc is None:
            doc = parse_markdown(Source(text=self.joined(), lines=self.lines))
            self.memo["markdown"] = doc
        assert isinstance(doc, MarkdownDoc)
        return doc

    def shared(self, key: str, compute: Callable[[RuleContext], _T]) -> _T:
        """What `compute` derives from many files of the workspace (every agent of a folder),
        done once per state of the workspace for all files of a check instead of once per
        file (`WorkspaceIndex.derived`), with the inputs it recorded added to this file's.
        `compute` gets a context of its own and must read only the workspace, never this
        file's path, kind or text; the value is shared, so callers copy before changing it."""
        def run() -> tuple[_T, frozenset[str], frozenset[str], float | None]:
            own = replace(self, depends_on=set(), memo={}, trees=set(), expires=None)
            value = compute(own)
            return value, frozenset(own.depends_on), frozenset(own.trees), own.expires

        if self.index is None:
            value, deps, trees, expires = run()
        else:
            value, deps, trees, expires = self.index.derived(f"rules:{key}", run)
        self.depends_on |= deps
        self.trees |= trees
        if expires is not None:
            self.valid_until(expires)
        return value

    def valid_until(self, when: float) -> None:
        """The findings hold until `when` (epoch seconds) even if no input changes."""
        self.expires = when if self.expires is None else min(self.expires, when)

    def uncacheable(self) -> None:
        """The findings depend on something no file records (a live process, the clock)."""
        self.expires = 0.0

    def finding(self, range: Range, message: str, *, fix: Fix | None = None,
                related: Iterable[Related] = (), tags: Iterable[str] = (),
                path: str | None = None) -> Finding:
        assert self.rule is not None
        return Finding.model_construct(
            code=self.rule.code, rule=self.rule.name, severity=self.rule.severity,
            message=message, path=path or self.path, range=range, related=list(related),
            fix=fix, tags=list(tags),
        )

    def edit(self, range: Range, new_text: str) -> TextEdit:
        return TextEdit(path=self.path, range=range, new_text=new_text)

    def fix(self, title: str, *edits: TextEdit, safe: bool = True) -> Fix:
        return Fix(title=title, edits=list(edits), safe=safe)

    def line_range(self, line: int) -> Range:
        text = self.lines[line] if 0 <= line < len(self.lines) else ""
        return Range.of_line(line, 0, len(text))

    # -- cross-file lookups (each records what the result depends on) -----------------

    def resolve(self, target: str, base: Path | None = None) -> Path | None:
        """Resolve a link or path as the repo's tooling would; None when unresolvable.

        Relative targets resolve against the file's directory; `${CLAUDE_PROJECT_DIR}` and
        absolute paths from another machine are re-rooted at this workspace's `.claude/`;
        `.claude/...` and `.opencode/...` targets are read from the repository root.
        """
        target = target.strip().strip("<>").split("#", 1)[0]
        if not target or "://" in target or target.startswith(("mailto:", "#")):
            return None
        if "{{" in target or "$(" in target:
            return None
        root = self.root
        for var in ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"):
            if target.startswith(var):
                return (root / target[len(var):].lstrip("/")) if root else None
        if "$" in target or target.startswith("~"):
            return None
        if target.startswith(".claude/") and root is not None:
            return root / target
        if target.startswith(".opencode/") and root is not None:
            # OpenCode trees write paths from the repository root, which holds `.opencode/`
            # (the workspace may be that directory itself when its `specs/` made it one).
            return (root.parent if root.name == ".opencode" else root) / target
        if target.startswith("/"):
            marker = target.find("/.claude/")
            if marker >= 0 and root is not None:
                return root / target[marker + 1:]
            return None
        base_dir = base if base is not None else Path(self.path).parent
        return base_dir / target

    def exists(self, path: Path) -> bool:
        """Whether `path` exists; for a file of an extension, also in that extension's folder
        (see `_extension_twin`)."""
        if self._exists(path):
            return True
        twin = self._extension_twin(path)
        return twin is not None and self._exists(twin)

    def _exists(self, path: Path) -> bool:
        self.depends_on.add(str(path))
        if self.index is not None:
            return self.index.exists(path)
        return os.path.exists(path)  # False, not OSError, for a name too long for the system

    def _extension_twin(self, path: Path) -> Path | None:
        """Where `.claude/x` (or `.opencode/x`) is in the extension this file belongs to
        (`.claude/extensions/<name>/x`): the loader copies the extension's agents, skills,
        scripts and context into `.claude/` together, so what the file names there exists
        once it is loaded. None for a file outside an extension."""
        if self.root is None:
            return None
        memo = self.memo.get("extension")  # asked for every missing file: judged once
        if memo is None or memo[0] != (self.path, self.root):
            parts = os.path.relpath(self.path, self.root).split(os.sep)
            memo = self.memo["extension"] = ((self.path, self.root), (
                (self.root / parts[0], parts[2]) if len(parts) >= 4
                and parts[0] in (".claude", ".opencode") and parts[1] == "extensions"
                else None))
        found: tuple[Path, str] | None = memo[1]
        if found is None:
            return None
        top, name = found
        rel = os.path.relpath(os.path.normpath(path), top)
        if rel.startswith("..") or rel.split(os.sep, 1)[0] == "extensions":
            return None
        return top / "extensions" / name / rel

    def agent_paths(self) -> dict[str, Path]:
        """Agent name (file stem) → path, for every agent of the workspace."""
        if self.index is None:
            return {}
        self.depends_on.add(str(self.index.agents_dir))
        return self.index.agent_paths()

    def agent(self, name: str) -> Any:
        """The parsed agent file named `name`, or None."""
        if self.index is None:
            return None
        self.depends_on.add(str(self.index.agents_dir / f"{name}.md"))
        return self.index.agent(name)

    def plan(self, path: Path) -> Any:
        if self.index is None:
            return None
        self.depends_on.add(str(path))
        return self.index.plan(path)

