"""Hover: phases behind dependency ids, rule docs, agents, signals, status markers."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from lsprotocol import types

from .convert import from_lsp_range, to_lsp_range
from .server import BatonServer, guard, uri_path

if TYPE_CHECKING:
    from ..model.base import Kind
    from ..model.plan import Phase, Plan
    from ..parse.jsonpos import Path as JsonPath
    from ..parse.jsonpos import Positions
    from ..workspace.index import WorkspaceIndex

_STATUS_DOCS = {
    "NOT STARTED": "work on the phase has not begun",
    "IN PROGRESS": "an agent is working on the phase",
    "COMPLETE": "the phase is finished (the spelling every tool recognises)",
    "COMPLETED": "the phase is finished — note `dependency-recalculation.sh` only matches "
                 "`[COMPLETE]`",
    "BLOCKED": "the phase cannot proceed until something outside it changes",
    "SKIPPED": "the phase was deliberately not done; dependents may proceed",
    "PENDING": "written by phase expansion on summary lines of expanded phases",
}


def status_doc(word: str) -> str:
    """What a phase marker means to the tooling; a marker of a phase given up (`[DEFERRED]`,
    `[NOT APPLICABLE]`, `[SKIPPED - not needed]`) is terminal, as `model.plan.TERMINAL` says."""
    from ..model.plan import TERMINAL, state_of  # the core loads on first use

    known = _STATUS_DOCS.get(word)
    if known is not None:
        return known
    state = state_of(word)
    if state in _STATUS_DOCS:
        return _STATUS_DOCS[state]
    if state in TERMINAL:
        return ("the phase was given up: a terminal marker, never resumed by the task-based "
                "trees' implementer; dependents may proceed and Baton does not run it")
    return "not a status the tooling knows"


def phase_markdown(plan: Plan, phase: Phase) -> str:
    # the core loads on first use
    from ..model.graph import build_graph
    from ..model.plan import status_word

    graph = build_graph(plan)
    done = sum(t.checked for t in phase.tasks)
    status = status_word(phase) or "no status marker"
    lines = [f"**Phase {phase.number}: {phase.title}** · `{status}`"]
    if phase.tasks:
        lines.append(f"{done}/{len(phase.tasks)} tasks done")
    wave = graph.wave_of(phase.id)
    lines.append(f"wave {wave}" if wave else "blocked by a dependency cycle")
    deps = graph.deps.get(phase.id, [])
    if deps:
        lines.append("depends on " + ", ".join(f"Phase {d}" for d in deps))
    users = graph.dependents(phase.id)
    if users:
        lines.append("needed by " + ", ".join(f"Phase {d}" for d in users))
    return "  \n".join(lines)


def agent_markdown(idx: WorkspaceIndex, name: str) -> str:
    agent = idx.agent(name)
    if agent is None:
        return f"**{name}** — no agent file `.claude/agents/{name}.md` in this workspace"
    fm = agent.frontmatter
    def val(key: str) -> str:
        entry = fm.get(key) if fm else None
        return str(entry.value) if entry is not None and entry.value is not None else "—"
    signals = sorted(s for s in agent.emitted_signals)
    return "\n\n".join([
        f"**{name}** — {val('description')}",
        f"Tools: {val('allowed-tools') if val('allowed-tools') != '—' else val('tools')}  \n"
        f"Model: {val('model')}",
        "Signals: " + (", ".join(f"`{s}:`" for s in signals) or "none documented"),
        f"`{idx.rel(agent.path)}`",
    ])


def opencode_key_markdown(doc: object, key: str) -> str:
    """What OpenCode reads from front-matter `key` of an OpenCode agent or command."""
    # the core loads on first use
    from ..model.opencode import AGENT_KEYS, COMMAND_KEYS, OpenCodeAgent

    agent = isinstance(doc, OpenCodeAgent)
    known = AGENT_KEYS if agent else COMMAND_KEYS
    what = "agent" if agent else "command"
    if key in known:
        return f"**`{key}`** (OpenCode {what}) — {known[key]}"
    if agent:
        return (f"**`{key}`** — not an OpenCode agent setting: OpenCode passes unknown agent "
                "keys to the model provider as options")
    return f"**`{key}`** — not an OpenCode command setting: OpenCode drops it"


def opencode_agent_markdown(idx: WorkspaceIndex, name: str) -> str:
    """An OpenCode agent a command names: its description, mode and file."""
    from ..model.opencode import BUILTIN_AGENTS, OpenCodeAgent  # the core loads on first use

    path = idx.opencode_agents().get(name)
    if path is None:
        if name in BUILTIN_AGENTS:
            return f"**{name}** — OpenCode's built-in agent"
        return f"**{name}** — no OpenCode agent of that name in `.opencode/agent/`"
    doc = idx.document(path)
    data = doc.load.data if isinstance(doc, OpenCodeAgent) and doc.load.data else {}
    return "\n\n".join([f"**{name}** — {data.get('description', '—')}",
                         f"Mode: {data.get('mode', 'all')}  \nModel: {data.get('model', '—')}",
                         f"`{idx.rel(path)}`"])


def signal_markdown(idx: WorkspaceIndex, name: str) -> str:
    # the core loads on first use
    from ..model.agent import AgentFile, CommandFile
    from ..model.base import Kind

    emitters: list[str] = []
    parsers: list[str] = []
    for path, kind in sorted(idx.files().items()):
        if kind not in (Kind.AGENT, Kind.COMMAND):
            continue
        doc = idx.document(path, kind)
        if isinstance(doc, AgentFile) and name in doc.emitted_signals:
            emitters.append(doc.name)
        elif isinstance(doc, CommandFile) and any(s.name == name for s in doc.signals):
            parsers.append(doc.name)
    return "\n\n".join([
        f"**`{name}:`** return signal",
        "Emitted by agents: " + (", ".join(emitters) or "none in this workspace"),
        "Parsed by commands: " + (", ".join(f"/{c}" for c in parsers) or "none in this workspace"),
    ])


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guard(None)
    def hover(ls: BatonServer, params: types.HoverParams) -> types.Hover | None:
        # the core loads on first use
        from ..model.plan import Plan
        from ..rules.base import get_rule
        from .lookup import cursor_at

        found = checkpoint_hover(ls, params.text_document.uri, params.position) \
            or settings_hover(ls, params.text_document.uri, params.position)
        if found is not None:
            return found
        cur = cursor_at(ls, params.text_document.uri, params.position)
        if cur is None or cur.element is None:
            return None
        idx, doc, lines, el = cur.index, cur.doc, cur.lines, cur.element
        text: str | None = None
        if el.kind == "dep" and isinstance(doc, Plan):
            target = doc.phase(el.value) if el.value else None
            text = phase_markdown(doc, target) if target else f"No phase {el.value} in this plan"
        elif el.kind == "phase" and isinstance(doc, Plan) and el.phase is not None:
            text = phase_markdown(doc, el.phase)
        elif el.kind == "status":
            word = " ".join(str(el.value).split()).upper()
            text = f"`[{word}]` — {status_doc(word)}"
        elif el.kind == "rule":
            rule = get_rule(el.value)
            text = (f"**{rule.code} {rule.name}** ({rule.severity.value})\n\n{rule.doc}"
                    if rule else None)
        elif el.kind == "agent":
            text = agent_markdown(idx, el.value)
        elif el.kind == "signal":
            text = signal_markdown(idx, el.value)
        elif el.kind == "oc-key":
            text = opencode_key_markdown(doc, el.value)
        elif el.kind == "oc-agent":
            text = opencode_agent_markdown(idx, el.value)
        if not text:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value=text),
                           range=to_lsp_range(el.range, lines))


def _json_at(ls: BatonServer, uri: str, position: types.Position, kind: Kind
             ) -> tuple[str, list[str], Positions, JsonPath, bool] | None:
    """The JSON path under `position` in a `.json` file of `kind` — (path, lines, positions,
    JSON path, on a key) — or None: the lookup the JSON hovers share."""
    from ..parse.jsonpos import Positions  # the core loads on first use

    path = uri_path(uri)
    if path is None or not path.endswith(".json"):
        return None
    if ls.session.index_for(path).kind_of(path) is not kind:
        return None
    lines = ls.session.lines_of(path)
    here = from_lsp_range(types.Range(start=position, end=position), lines)
    pos = Positions("\n".join(lines))
    offset = pos.starts[min(here.start_line, len(pos.starts) - 1)] + here.start_char
    hit = pos.path_at(offset)
    if hit is None:
        return None
    where, on_key = hit
    return path, lines, pos, where, on_key


def checkpoint_hover(ls: BatonServer, uri: str, position: types.Position) -> types.Hover | None:
    """In a checkpoint JSON file: what a state (or scope) name means and where it can go;
    on `current_state` of a workflow's history, that workflow's live status too."""
    # the core loads on first use
    from ..model.base import Kind
    from ..model.states import RunStatus, Scope, State
    from ..workflow.state_machine import HAPPY_PATHS, state_markdown

    found = _json_at(ls, uri, position, Kind.CHECKPOINT)
    if found is None:
        return None
    path, lines, pos, where, on_key = found
    idx = ls.session.index_for(path)
    span = pos.spans[where]
    try:
        value = json.loads(pos.text[span.start:span.end])
    except ValueError:
        return None
    text: str | None = None
    if isinstance(value, str) and value in State.__members__.values():
        text = state_markdown(State(value))
    elif on_key and where and where[-1] in State.__members__.values():
        text = state_markdown(State(str(where[-1])))
    elif isinstance(value, str) and value in Scope.__members__.values():
        states = " → ".join(s.value for s in HAPPY_PATHS[Scope(value)])
        text = f"**{value}** scope — initialize → {states}"
    if text is None:
        return None
    if where and where[-1] == "current_state" and not on_key:
        from ..runs.follow import RunView  # the core loads on first use

        view: RunView | None = None
        d = os.path.dirname(path)
        if os.path.dirname(d) == str(idx.runs.base):
            view = idx.runs.view(os.path.basename(d))
        if view is not None:
            text += (f"\n\nWorkflow `{view.workflow_id}`: **{view.status}**"
                     + (" (engine running)" if view.running else "")
                     + f", newest checkpoint {view.sequence}")
            if view.status == RunStatus.FAILED:  # the seeds' five-part error, as `baton status`
                from ..runs.diagnosis import of_workflow  # the core loads on first use

                diagnosis = of_workflow(view.root, view.workflow_id)
                if diagnosis is not None:
                    text += "\n\n" + diagnosis.markdown()
            elif view.outcome:  # complete, but the tests still fail
                text += (f"\n\n⚠ needs attention: {view.outcome.get('reason')}; review "
                         f"`{view.outcome.get('debug_report') or view.outcome.get('test_output')}`"
                         f", then re-run: `{view.outcome.get('rerun')}`")
    rng = pos.key_range(where) if on_key else pos.value_range(where)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=to_lsp_range(rng, lines) if rng else None)


def hook_event_markdown(event: str) -> str:
    """What a hook event's matcher selects on (from the pinned Claude Code's match query)."""
    from ..model.claude_settings import MATCH_QUERY  # the core loads on first use

    query = MATCH_QUERY[event]
    if query is None:
        return (f"**`{event}`** hook event — takes no matcher: every group runs on every "
                f"{event}")
    return f"**`{event}`** hook event — `matcher` is matched against {query}"


def settings_hover(ls: BatonServer, uri: str, position: types.Position) -> types.Hover | None:
    """In a Claude Code settings file, on a hook event's name: what its matcher matches."""
    # the core loads on first use
    from ..model.base import Kind
    from ..model.claude_settings import HOOK_EVENTS

    found = _json_at(ls, uri, position, Kind.SETTINGS)
    if found is None:
        return None
    _path, lines, pos, where, on_key = found
    if not on_key or len(where) != 2 or where[0] != "hooks" or where[1] not in HOOK_EVENTS:
        return None
    rng = pos.key_range(where)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=hook_event_markdown(str(where[1]))),
                       range=to_lsp_range(rng, lines) if rng else None)
