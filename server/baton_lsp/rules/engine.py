"""Runs the registered rules over one document, applying configuration and suppressions."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazylog import LazyLogger
from ..model.base import CONVENTION_DOCS, Convention, Finding, Kind, Range, Severity
from ..model.data import Unreadable
from ..parse.text import split_lines
from ..paths import norm
from . import load_hooks, load_shellcheck
from .base import NOT_CHECKED, SKIPPED_LOG, Rule, RuleContext, all_rules, rules_of_kind
from .conventions import follows, inputs

if TYPE_CHECKING:
    from ..model.config import BatonConfig
    from ..workspace.index import WorkspaceIndex
    from .cache import Digest, ResultCache, WorkspaceCache

log = LazyLogger(__name__)  # not `logging`: a check that logs nothing never loads it
skipped_log = LazyLogger(SKIPPED_LOG)


_BY_KIND: dict[tuple[Kind, bool, bool], list[Rule]] = {}
_HOOKED_KINDS = (Kind.AGENT, Kind.SKILL)
"""Kinds whose front matter may declare `hooks:` (settings files load the hook rules with
their kind)."""
_SHELLCHECKED_KINDS = (Kind.COMMAND, Kind.OPENCODE_COMMAND)
"""Kinds BTN330 checks, whose module loads only where ShellCheck runs (`load_shellcheck`)."""


def rules_for(kind: Kind, hooked: bool = False, shellchecked: bool = False) -> list[Rule]:
    """Rules that apply to `kind`, computed once per kind, `hooked` (whether an agent or
    skill declares `hooks:`, which loads the hook rules) and `shellchecked` (whether a
    command's workspace runs ShellCheck, which loads BTN330). Without them those rules
    report nothing, so a list made after they were loaded for another file may hold them
    harmlessly."""
    cached = _BY_KIND.get((kind, hooked, shellchecked))
    if cached is None:
        if hooked:
            load_hooks()
        if shellchecked:
            load_shellcheck()
        cached = _BY_KIND[(kind, hooked, shellchecked)] = rules_of_kind(kind)
    return cached


_ENABLED: dict[tuple[Kind, bool, bool, tuple[str, ...], tuple[str, ...]],
               tuple[list[Rule], list[Rule]]] = {}


def _enabled_rules(kind: Kind, hooked: bool, shellchecked: bool,
                   config: BatonConfig) -> list[Rule]:
    """`rules_for`, less the rules `select` / `ignore` turn off: judged once per kind and
    selection instead of once per rule of every file. The selection is read from `config`
    on every call (a changed one is honoured), and a new `rules_for` list (`_BY_KIND` reset
    after a rule was registered) is filtered again."""
    every = rules_for(kind, hooked, shellchecked)
    key = (kind, hooked, shellchecked, tuple(config.select), tuple(config.ignore))
    found = _ENABLED.get(key)
    if found is None or found[0] is not every:
        found = _ENABLED[key] = (every, [r for r in every if config.enabled(r.code)])
    return found[1]


def _declares_hooks(doc: object) -> bool:
    """Whether an agent's or skill's front matter has a `hooks` key (a superset of what the
    hook rules read: `claude_settings.hooks_of`)."""
    fm = getattr(doc, "frontmatter", None)
    return fm is not None and fm.get("hooks") is not None


def _unsuppressed(findings: list[Finding], doc: Any) -> list[Finding]:
    """`findings` less those an `ignore` / `ignore-file` comment covers.

    A sweep over the lines, not a test of every finding against every comment: a plan with
    a comment per phase has as many comments as findings, which made that quadratic.
    """
    sups = list(getattr(doc, "suppressions", ()))
    if not sups or not findings:
        return findings
    file_all = any(s.file_level and not s.codes for s in sups)
    if file_all:
        return []
    file_codes = {c for s in sups if s.file_level for c in s.codes}
    scoped = sorted((s for s in sups if not s.file_level), key=lambda s: s.scope_start)
    ends: list[tuple[int, int]] = []  # heap of (scope_end, index into scoped) still active
    active_codes: Counter[str] = Counter()
    active_all = 0
    nxt = 0
    suppressed: set[int] = set()
    for i in sorted(range(len(findings)), key=lambda k: findings[k].range.start_line):
        f = findings[i]
        line = f.range.start_line
        while nxt < len(scoped) and scoped[nxt].scope_start <= line:
            heapq.heappush(ends, (scoped[nxt].scope_end, nxt))
            if scoped[nxt].codes:
                active_codes.update(set(scoped[nxt].codes))
            else:
                active_all += 1
            nxt += 1
        while ends and ends[0][0] < line:
            _, k = heapq.heappop(ends)
            if scoped[k].codes:
                active_codes.subtract(set(scoped[k].codes))
            else:
                active_all -= 1
        if f.code in file_codes or active_all > 0 or active_codes[f.code] > 0:
            suppressed.add(i)
    return [f for i, f in enumerate(findings) if i not in suppressed]


def check_document(doc: Any, ctx: RuleContext) -> list[Finding]:
    """All findings for `doc`, sorted, with severities overridden and suppressions applied."""
    findings: list[Finding] = []
    kind = ctx.kind
    config = ctx.config
    if isinstance(doc, Unreadable):
        applicable = [r for r in all_rules() if r.code == "BTN400" and config.enabled(r.code)]
    else:
        applicable = _enabled_rules(
            kind, kind in _HOOKED_KINDS and _declares_hooks(doc),
            kind in _SHELLCHECKED_KINDS and config.shellcheck != "off", config)
    followed: dict[Convention, bool] = {}
    for rule in applicable:
        if rule.convention not in followed:
            followed[rule.convention] = follows(rule.convention, doc, kind, config, ctx.root)
            ctx.depends_on.update(str(p) for p in inputs(rule.convention, ctx.root))
        if not rule.applies(followed[rule.convention], config):
            if rule.everywhere is not None:  # a rule users may expect to run: say why not
                skipped_log.debug("%s: %s not run: the file does not follow the %s "
                                  "convention (%s)", ctx.path, rule.code,
                                  rule.convention.value, CONVENTION_DOCS[rule.convention])
            continue
        ctx.rule = rule
        severity = config.severity_for(rule.code, rule.severity)
        try:
            for finding in rule.check(doc, ctx):
                # What could not be checked is information at most: lowered, never raised.
                if severity is not rule.severity and (
                        NOT_CHECKED not in finding.tags
                        or severity.rank > finding.severity.rank):
                    finding.severity = severity
                findings.append(finding)
        except Exception as exc:  # one broken rule must not hide the others' findings
            log.exception("rule %s failed on %s", rule.code, ctx.path)
            findings.append(Finding.model_construct(
                code="BTN000", rule="internal-error", severity=Severity.WARNING,
                message=f"rule {rule.code} ({rule.name}) failed on this file: "
                        f"{type(exc).__name__}: {exc}; please report it",
                path=ctx.path, range=Range.of_line(0), related=[], fix=None, tags=[]))
    ctx.rule = None
    findings = _unsuppressed(findings, doc)
    findings.sort(key=Finding.sort_key)
    return findings


def check_file(index: WorkspaceIndex, path: str | Path, kind: Kind | None = None,
               cache: ResultCache | None = None, memo: bool = True,
               read: tuple[Any, RuleContext] | None = None) -> list[Finding]:
    """Findings for one file of `index`, recording what its cross-file findings depend on.

    `kind` forces how the file is read (for files outside the usual layout). With `cache`
    the findings come from it while the file and its inputs are unchanged, and are stored
    there after a check (`memo`: see `WorkspaceCache.lookup`). `read` is what
    `read_for_rules` gave for this file and `cache` already, when it was asked earlier."""
    key = norm(path)
    kind = kind or index.kind_of(key)
    if kind is None:
        return []
    store = digest = None
    if cache is not None:
        store, digest, hit = _lookup(cache, index, key, kind, memo)
        if hit is not None:
            return hit
    found = read if read is not None else read_for_rules(index, key, kind, cache)
    if found is None:
        return []
    doc, ctx = found
    findings = check_document(doc, ctx)
    index.record_deps(key, ctx.depends_on)
    # Editor text is looked up (an opened file is usually as saved) but not stored: it is
    # rarely seen again, and fingerprinting inputs on every keystroke would cost latency.
    # A rule that failed (BTN000) is not remembered either: the next check runs it again
    # (and `-v` shows its traceback) instead of repeating the failure from the cache.
    if store is not None and digest is not None and not digest.overlay \
            and ctx.expires != 0.0 and not isinstance(doc, Unreadable) \
            and not any(f.code == "BTN000" for f in findings):
        store.store(index, key, kind, digest, findings, {norm(d) for d in ctx.depends_on},
                    {norm(t) for t in ctx.trees}, ctx.expires)
    return findings


def read_for_rules(index: WorkspaceIndex, key: str, kind: Kind,
                   cache: ResultCache | None = None) -> tuple[Any, RuleContext] | None:
    """The parsed document at normalised `key` and the context its rules run in (None when
    there is no such file)."""
    doc, text = index.parsed(key, kind)
    if doc is None:
        return None
    if isinstance(doc, Unreadable):
        text = ""
    elif text is None:  # parsed earlier: read the lines the rules quote again
        text = index.text_of(key)
    text = text or ""
    return doc, RuleContext(path=key, kind=kind, config=index.config, index=index,
                            root=index.root, lines=split_lines(text), results=cache,
                            text=None if "\r" in text else text)  # else joined again


def will_run(rule: Rule, doc: Any, ctx: RuleContext) -> bool:
    """Whether `check_document` would run `rule` on `doc` (for work started ahead of it)."""
    config = ctx.config
    return (not isinstance(doc, Unreadable) and config.enabled(rule.code)
            and rule.applies(follows(rule.convention, doc, ctx.kind, config, ctx.root), config))


def _lookup(cache: ResultCache, index: WorkspaceIndex, key: str, kind: Kind, memo: bool = True,
            store: WorkspaceCache | None = None
            ) -> tuple[WorkspaceCache, Digest | None, list[Finding] | None]:
    store = store or cache.workspace(index, tools_key(index.config))
    digest = store.digest(index, key)
    if digest is None:
        return store, None, None
    hit = store.lookup(index, key, kind, digest, memo)
    if hit is None:
        return store, digest, None
    findings, watch = hit
    index.record_deps(key, watch, normalized=True)  # as a check would: edits re-check it
    return store, digest, findings


def cached_files(cache: ResultCache, files: Iterable[tuple[WorkspaceIndex, str, Kind]]
                 ) -> Iterator[tuple[str, list[Finding] | None]]:
    """The stored findings of files found by a walk (normalised paths with their index and
    kind) while they still hold: (path, findings or None: check it), one workspace lookup
    per index."""
    stores: dict[int, WorkspaceCache] = {}
    for index, path, kind in files:
        store = stores.get(id(index))
        if store is None:
            store = stores[id(index)] = cache.workspace(index, tools_key(index.config))
        yield path, _lookup(cache, index, path, kind, True, store)[2]


def tools_key(config: BatonConfig) -> str:
    """External programs whose output becomes findings: ShellCheck, when it may run."""
    known = _shellcheck_runs.get(id(config))
    if known is None or known[0] is not config:  # asked per file: judged once per config
        known = (config, config.shellcheck != "off" and config.enabled("BTN330"))
        _shellcheck_runs.clear()
        _shellcheck_runs[id(config)] = known
    if not known[1]:
        return ""
    from .shellcheck_tool import shellcheck_identity  # only where ShellCheck may run

    return shellcheck_identity()


_shellcheck_runs: dict[int, tuple[Any, bool]] = {}


def check_text(kind: Kind, text: str, path: str = "/ws/.claude/file.md", *,
               config: Any = None, index: Any = None) -> list[Finding]:
    """Parse `text` as `kind` and run the rules: the one-call entry point for tests/tools."""
    # the one-call entry point for tests and tools only
    from ..model.config import BatonConfig
    from ..parse import parse_text
    from ..parse.text import scrub, split_lines

    text = scrub(text)
    doc = parse_text(kind, text, path)
    root = index.root if index is not None else None
    if root is None:
        parts = Path(path).parts
        if ".claude" in parts:
            root = Path(*parts[: parts.index(".claude")])
    ctx = RuleContext(path=path, kind=kind, config=config or BatonConfig.defaults(), index=index,
                      root=root, lines=split_lines(text), text=None if "\r" in text else text)
    return check_document(doc, ctx)
