"""BTN31x: `Task {` pseudo-calls and behavioural injection in commands and coordinator agents."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..lazy_pattern import LazyPattern
from ..model.agent import CLAUDE_BUILTIN_AGENTS, AgentFile, CommandFile, Injection, TaskBlock
from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..parse.signals import RETURN_SIGNAL_RE
from ..workspace.discovery import extension_installed
from .base import RuleContext, closest, rule

TASK_KINDS = (Kind.COMMAND, Kind.AGENT)
WORKFLOW = Convention.WORKFLOW_AGENTS
REQUIRED_FIELDS = ("subagent_type", "description", "prompt")
GENERIC_SIGNALS = frozenset({"TASK_ERROR", "ERROR_CONTEXT", "PROGRESS"})
"""Signals every agent may return (errors, progress); never required to be documented."""

_FIELD_INDENT_RE = LazyPattern(r"^(\s*)\S")


def _blocks(doc: Any) -> list[TaskBlock]:
    return list(getattr(doc, "task_blocks", None) or [])


@rule("BTN310", "task-missing-field", Severity.ERROR, TASK_KINDS, fixable=True,
      convention=WORKFLOW)
def task_missing_field(doc: CommandFile | AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A `Task {` block lacks `subagent_type`, `description` or `prompt`.

    The block is a template the model copies into a Task tool call. The tool needs all three:
    `subagent_type` (here always `"general-purpose"`, the agent file is injected through the
    prompt), `description` (the short label shown while the agent runs) and `prompt` (what the
    agent is told, starting with the behavioural-injection line). A missing field makes the
    model improvise it, or skip the call.

    A block with a line that is only an ellipsis (`...`, `…`) is an abbreviated example:
    its missing fields are left out on purpose and not reported. Calls in a ```yaml or
    ```bash fence (a loop, a heredoc the agent prints) are read when the line after `Task {`
    is one of the three fields; Swift's `Task { await … }` in a fence is code, not a call.

    Fix: add the missing field inside the braces. For `subagent_type` the quick fix inserts
    `subagent_type: "general-purpose"`.

    Reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: REPORT_CREATED: <path>
          "
        }

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: REPORT_CREATED: <path>
          "
        }

    Not reported (an abbreviated example):

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Every agent is invoked the same way:

        ```
        Task {
          subagent_type: "general-purpose"
          ...
        }
        ```
    """
    lines = ctx.lines
    for block in _blocks(doc):
        if block.unbalanced_quote is not None:
            continue  # the quote swallowed the rest of the block; BTN312 reports the cause
        if block.elided:
            continue  # `...` stands for the fields left out of an abbreviated example
        present = [f.name for f in block.fields]
        for name in REQUIRED_FIELDS:
            if name in present:
                continue
            fix = None
            if name == "subagent_type":
                open_line = block.open_range.start_line
                indent = "  "
                if block.fields:
                    text = lines[block.fields[0].range.start_line] if lines else ""
                    m = _FIELD_INDENT_RE.match(text)
                    indent = m.group(1) if m else indent
                fix = ctx.fix('Add subagent_type: "general-purpose"',
                              ctx.edit(Range.of_line(open_line + 1),
                                       f'{indent}subagent_type: "general-purpose"\n'))
            found = ", ".join(present) if present else "no fields"
            yield ctx.finding(block.open_range,
                              f"Task block is missing `{name}`: expected subagent_type, "
                              f"description and prompt (found: {found})", fix=fix)


@rule("BTN311", "task-unclosed-block", Severity.ERROR, TASK_KINDS, convention=WORKFLOW)
def task_unclosed(doc: CommandFile | AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A `Task {` block has no closing `}` on a line of its own.

    The model finds the end of the call by the closing brace. Without it the next heading,
    the next `Task {` or the rest of the file reads as part of this call, so the prompt the
    agent receives is wrong and later invocations may be merged into it.

    Fix: add `}` on its own line after the block's last field.

    Reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: REPORT_CREATED: <path>
          "

        ## Next section

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: REPORT_CREATED: <path>
          "
        }

        ## Next section
    """
    for block in _blocks(doc):
        if block.closed or block.unbalanced_quote is not None:
            continue
        end = block.range.end_line
        yield ctx.finding(block.open_range,
                          f"Task block opened on line {block.open_range.start_line + 1} is never "
                          f"closed: expected `}}` on its own line, found none up to line "
                          f"{end + 1}")


@rule("BTN312", "task-unbalanced-quote", Severity.ERROR, TASK_KINDS, convention=WORKFLOW)
def task_unbalanced_quote(doc: CommandFile | AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A double-quoted Task field (usually `prompt: "`) is never closed.

    Quoted prompts span many lines and end with a line holding the closing `"`. An odd number
    of unescaped `"` characters inside the prompt (a quoted word such as `"${VAR}` missing its
    partner) flips the balance, so the prompt runs past the closing brace and the call's end
    can no longer be found.

    Fix: balance the quotes inside the prompt (escape literal ones as `\\"`, or use single
    quotes for quoted words) or switch the field to a YAML block (`prompt: |`).

    Reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md
            Topic: ${TOPIC}

            Return: REPORT_CREATED: <path>
        }

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md
            Topic: "${TOPIC}"

            Return: REPORT_CREATED: <path>
          "
        }
    """
    for block in _blocks(doc):
        rng = block.unbalanced_quote
        if rng is None:
            continue
        name = next((f.name for f in block.fields if f.value_range.start_line == rng.start_line),
                    "field")
        yield ctx.finding(rng,
                          f"`{name}` opens a double quote on line {rng.start_line + 1} that is "
                          "never closed: expected an even number of unescaped `\"` before the "
                          "block's closing `}`")


def _injection_path(inj: Injection, ctx: RuleContext) -> Path | None:
    target = inj.target
    if target.startswith((".claude/", "./.claude/")):
        # Prompts are read with the project root as working directory, not the file's folder.
        return ctx.root / target.removeprefix("./") if ctx.root is not None else None
    return ctx.resolve(target)


@rule("BTN313", "injected-agent-missing", Severity.ERROR, TASK_KINDS, fixable=True,
      cross_file=True, convention=WORKFLOW)
def injected_agent_missing(doc: CommandFile | AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A behavioural-injection line points at an agent file that does not exist.

    `Read and follow ALL behavioral guidelines from: <path>` is how a command hands an agent
    its instructions. When the file is missing the subagent runs as a bare general-purpose
    model with none of the agent's steps, output format or completion signal, and the caller's
    verification of that signal fails later with a less helpful error. Paths are checked the
    way the repository's tooling resolves them: `${CLAUDE_PROJECT_DIR}` and absolute paths
    from another machine (`/home/user/.config/.claude/...`) are re-rooted at this workspace,
    relative `.claude/...` paths at the project root.

    Fix: correct the path (a quick fix is offered when an existing agent's name is close) or
    create the agent file.

    Reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialst.md

            Return: REPORT_CREATED: <path>
          "
        }

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: REPORT_CREATED: <path>
          "
        }
    """
    injections = list(getattr(doc, "injections", None) or [])
    seen: set[tuple[int, int]] = set()
    for inj in injections:
        key = (inj.target_range.start_line, inj.target_range.start_char)
        if key in seen:
            continue
        seen.add(key)
        path = _injection_path(inj, ctx)
        if path is None or ctx.exists(path):
            continue
        shown = path
        if ctx.root is not None and path.is_relative_to(ctx.root):
            shown = path.relative_to(ctx.root)
        fix = None
        hint = ""
        related: list[Related] = []
        if inj.agent_name:
            agents = ctx.agent_paths()
            guess = closest(inj.agent_name, sorted(agents), 0.8)
            if guess:
                hint = f"; did you mean `{guess}`?"
                col = inj.target.rfind(inj.agent_name + ".md")
                if col >= 0:
                    start = inj.target_range.start_char + col
                    fix = ctx.fix(f"Change to `{guess}.md`",
                                  ctx.edit(Range.of_line(inj.target_range.start_line, start,
                                                         start + len(inj.agent_name)), guess))
                related = [Related(path=str(agents[guess]), range=Range.of_line(0),
                                   message=f"agent `{guess}`")]
        yield ctx.finding(inj.target_range,
                          f"injected agent file `{inj.target}` does not exist: expected a file "
                          f"at {shown}{hint}", fix=fix, related=related)


@rule("BTN314", "task-signal-not-emitted", Severity.WARNING, TASK_KINDS, cross_file=True,
      convention=WORKFLOW)
def task_signal_not_emitted(doc: CommandFile | AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A Task prompt expects a return signal the injected agent never documents.

    Callers verify a subagent's work by grepping its output for a completion signal such as
    `REPORT_CREATED:` or `PLAN_CREATED:`. When the prompt asks for a signal the agent's own
    file never mentions, the agent follows its file and returns something else, and the
    caller's check fails (or, worse, silently falls back). Any name the prompt asks for after
    `Return`, `Emit` or `signal` counts (`REVISION_COMPLETED:`, `TESTS_PASSED:`), not only
    the `*_CREATED`/`*_COMPLETE` forms; such a name counts as documented when the agent's
    file mentions it anywhere. `TASK_ERROR`, `ERROR_CONTEXT` and `PROGRESS` are generic and
    never required. The agent is the one the prompt injects (`Read and follow … from:
    .claude/agents/x.md`), else the workspace agent `subagent_type` names.

    Fix: ask for the signal the agent documents (listed in the message), or document the new
    signal in the agent's completion section.

    Reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: PLAN_CREATED: <path>
          "
        }

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist

        Return: REPORT_CREATED: <path>
        ==> .claude/commands/research.md <==
        # /research

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "
            Read and follow ALL behavioral guidelines from:
            .claude/agents/research-specialist.md

            Return: REPORT_CREATED: <path>
          "
        }
    """
    if ctx.index is None:
        return
    for block in _blocks(doc):
        names = [i.agent_name for i in block.injections if i.agent_name]
        if not names:
            # No injection line: the agent is the one `subagent_type` starts, when it is a
            # file of this workspace (a built-in or user-level agent has no file to read).
            field = block.field("subagent_type")
            value = field.value.split("#", 1)[0].strip().strip("\"'`") if field else ""
            if not value or value == "general-purpose" or ctx.agent(value) is None:
                continue
            names = [value]
        agents = [(n, ctx.agent(n)) for n in dict.fromkeys(names)]
        found = [(n, a) for n, a in agents if a is not None]
        if not found or len(found) != len(agents):
            continue  # a missing agent is BTN313's finding
        emitted: set[str] = set()
        for _, agent in found:
            emitted |= agent.emitted_signals
        reported: set[str] = set()
        expected = [(sig.name, sig.range) for sig in block.signals]
        named = {sig.name for sig in block.signals}
        texts: list[str] | None = None
        for name, rng in _other_signals(block, ctx):
            if name in named or name in GENERIC_SIGNALS:
                continue
            if texts is None:
                texts = [ctx.index.text_of(a.path) or "" for _, a in found]
            if not any(re.search(rf"\b{name}\b", t) for t in texts):
                expected.append((name, rng))
        for name, rng in expected:
            if name in GENERIC_SIGNALS or name in emitted or name in reported:
                continue
            reported.add(name)
            who = ", ".join(f"`{n}`" for n, _ in found)
            documented = sorted(emitted - GENERIC_SIGNALS)
            listed = ", ".join(documented) if documented else "no completion signal"
            yield ctx.finding(
                rng,
                f"prompt expects `{name}:` but agent {who} never documents it "
                f"(it documents: {listed})",
                related=[Related(path=a.path, range=a.title_range or Range.of_line(0),
                                 message=f"agent `{n}`") for n, a in found],
            )


def _other_signals(block: TaskBlock, ctx: RuleContext) -> Iterator[tuple[str, Range]]:
    """Signals a Task prompt asks for after `Return`/`Emit`/`signal`, whatever their form."""
    for no in range(block.range.start_line, block.range.end_line + 1):
        line = ctx.lines[no] if no < len(ctx.lines) else ""
        if ":" not in line:
            continue
        for m in RETURN_SIGNAL_RE.finditer(line):
            yield m.group(1), Range.of_line(no, m.start(1), m.end(1))


_SUBAGENT_RE = re.compile(
    r"""\bsubagent_type\s*[=:]\s*(["'`]?)([A-Za-z0-9_.-]+)\1(?=\s*[,)}\n#]|\s*$)""")
"""`subagent_type: "x"`, `subagent_type="x"` (a Task call written out), quoted or bare."""


def _workspace_agents(ctx: RuleContext) -> set[str] | None:
    """Every name an agent of the workspace answers to (front-matter `name` and file stem),
    or None when the workspace has no agent at all (its agents live elsewhere). Extensions'
    agents count only for a file of an extension."""
    if ctx.index is None:
        return None
    ctx.depends_on.add(str(ctx.index.agents_dir))
    # An extension's agents exist for Claude Code only once the extension is loaded (copied
    # into `.claude/agents/`): they answer a file of an extension, which loads with them.
    with_extensions = extension_installed(ctx.index.rel(ctx.path)) is not None
    names: set[str] = set()
    for path, kind in ctx.index.files().items():
        if kind is not Kind.AGENT or (not with_extensions
                                      and extension_installed(ctx.index.rel(path)) is not None):
            continue
        names.add(Path(path).stem)
        doc = ctx.index.document(path, kind)
        fm = getattr(doc, "frontmatter", None)
        entry = fm.get("name") if fm is not None else None
        if entry is not None and isinstance(entry.value, str):
            names.add(entry.value.strip())
    return names or None


@rule("BTN319", "task-unknown-subagent", Severity.WARNING, (*TASK_KINDS, Kind.SKILL),
      cross_file=True, convention=Convention.CLAUDE_CODE)
def task_unknown_subagent(doc: CommandFile | AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A Task call's `subagent_type` names no agent of the workspace and no built-in one.

    Claude Code's Task (Agent) tool starts the subagent whose `name` the `subagent_type`
    gives, among its built-in agents (`general-purpose`, `Explore`, `Plan`, …, from the
    pinned claude binary) and the `.claude/agents/` files; any other name fails the call
    ("Agent type '…' not found"), so the step never runs. Names are matched to agents' `name`
    front matter and file names. Not checked: plugin agents (`plugin:agent`), placeholders
    and workspaces with no agent at all (the agents then live in the user's `~/.claude/`).
    Fix: correct the name (a close agent name is suggested) or add the agent (in an editor,
    the *Create agent* quick fix writes a new agent file from a template).

    Reported:

        ==> .claude/agents/research-specialist.md <==
        ---
        name: research-specialist
        description: Research a topic
        ---
        ==> .claude/commands/research.md <==
        ---
        description: Research
        ---
        Task {
          subagent_type: "research-specialst"
          description: "Research the topic"
          prompt: "Research it"
        }

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        ---
        name: research-specialist
        description: Research a topic
        ---
        ==> .claude/commands/research.md <==
        ---
        description: Research
        ---
        Task {
          subagent_type: "research-specialist"
          description: "Research the topic"
          prompt: "Research it"
        }
        Then `Task(subagent_type="Explore", prompt="Find the tests")`.
    """
    known: set[str] | None = None
    seen: set[tuple[int, int]] = set()
    hits: list[tuple[int, int, int, str]] = []
    for block in _blocks(doc):
        field = block.field("subagent_type")
        if field is not None:
            value = field.value.strip().split("#", 1)[0].strip().strip("\"'`")
            rng = field.value_range
            hits.append((rng.start_line, rng.start_char, rng.end_char, value))
            seen.add((rng.start_line, rng.start_char))
    for no in ctx.lines_with("subagent_type"):
        line = ctx.lines[no]
        for m in _SUBAGENT_RE.finditer(line):
            if (no, m.start(2) - len(m.group(1))) in seen or (no, m.start(2)) in seen:
                continue
            hits.append((no, m.start(2), m.end(2), m.group(2)))
    for no, start, end, name in hits:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", name) or name in CLAUDE_BUILTIN_AGENTS:
            continue
        if known is None:
            known = _workspace_agents(ctx)
            if known is None:
                return
        if name in known:
            continue
        guess = closest(name, sorted(known | CLAUDE_BUILTIN_AGENTS), cutoff=0.75)
        hint = f"; did you mean `{guess}`?" if guess else ""
        yield ctx.finding(Range.of_line(no, start, end),
                          f"subagent_type `{name}` is neither an agent of this workspace nor a "
                          f"built-in Claude Code agent{hint}")


_ARTIFACT_VAR = (r"(?=[A-Z])[A-Z0-9_]*"
                 r"(?:REPORT|PLAN|SUMMARY|OUTPUT|ARTIFACT|RESULT|ANALYSIS|OVERVIEW)"
                 r"[A-Z0-9_]*(?:_PATH|_FILE)")
_EXISTS_CHECK_RE = re.compile(r"(?:\[\[?|\btest)\s+(?:!\s+)?-[fse]\s+\"?\$\{?(" + _ARTIFACT_VAR
                              + r")\}?\"?")
"""`[ ! -f "$REPORT_PATH" ]`, `[[ -s "${PLAN_FILE}" ]]`: a block verifying an artifact."""


def _assignment(blocks: list[Any], var: str) -> str | None:
    """The value `var` is given in one of `blocks` (the last assignment), or None."""
    value = None
    pattern = re.compile(rf"(?:^|[\s;&|(])(?:export\s+|local\s+)?{var}=(\S.*)?$", re.MULTILINE)
    for block in blocks:
        if f"{var}=" not in block.content:
            continue  # (the pattern needs it: no scan of a block that never assigns it)
        for m in pattern.finditer(block.content):
            value = (m.group(1) or "").strip()
    return value


@rule("BTN331", "task-artifact-path-not-passed", Severity.WARNING, (Kind.COMMAND,),
      convention=WORKFLOW)
def task_artifact_path_not_passed(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """The command checks an artifact path after a Task call whose prompt never passes it.

    The hard-barrier contract: the command pre-calculates where the agent must write
    (`REPORT_PATH=...` in a bash block), passes that path in the Task prompt, and verifies
    the file in the next block (`[ ! -f "$REPORT_PATH" ]`). When the prompt does not carry
    the path — neither the variable nor any variable it is built from — the agent writes
    wherever it chooses and the verification fails (or passes on a stale file). Reported
    only for literal artifact variables (`*REPORT*_PATH`, `*PLAN*_FILE`, `*SUMMARY*`,
    `*OUTPUT*`, `*OVERVIEW*`, …) assigned in a block before the Task call and tested in the
    first block after it. Fix: pass the path in the prompt (`- Report Path: ${REPORT_PATH}`).

    Reported:

        ==> .claude/commands/research.md <==
        ---
        description: Research
        ---
        ```bash
        REPORT_PATH="${TOPIC_DIR}/reports/001_analysis.md"
        append_workflow_state "REPORT_PATH" "$REPORT_PATH"
        ```

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "Read and follow .claude/agents/research-specialist.md. Research the topic."
        }

        ```bash
        if [ ! -f "$REPORT_PATH" ]; then
          echo "ERROR: report missing"; exit 1
        fi
        ```

    Not reported:

        ==> .claude/commands/research.md <==
        ---
        description: Research
        ---
        ```bash
        REPORT_PATH="${TOPIC_DIR}/reports/001_analysis.md"
        append_workflow_state "REPORT_PATH" "$REPORT_PATH"
        ```

        Task {
          subagent_type: "general-purpose"
          description: "Research the topic"
          prompt: "Read and follow .claude/agents/research-specialist.md.
            Report Path: ${REPORT_PATH}"
        }

        ```bash
        if [ ! -f "$REPORT_PATH" ]; then
          echo "ERROR: report missing"; exit 1
        fi
        ```
    """
    tasks = [t for t in _blocks(doc) if t.closed]
    if not tasks or not doc.bash_blocks:
        return
    blocks = doc.bash_blocks
    for i, block in enumerate(blocks):
        prev_end = blocks[i - 1].end_line if i else -1
        group = [t for t in tasks if prev_end < t.range.start_line and
                 t.range.end_line < block.start_line]
        if not group or i == 0:
            continue
        prompts = "\n".join(ctx.lines[n] for t in group
                            for n in range(t.range.start_line, t.range.end_line + 1)
                            if n < len(ctx.lines))
        for no, line in enumerate(block.content.splitlines()):
            for m in _EXISTS_CHECK_RE.finditer(line):
                var = m.group(1)
                value = _assignment(blocks[:i], var)
                if value is None or re.search(rf"\b{var}\b", prompts):
                    continue
                parts = set(re.findall(r"\$\{?([A-Za-z_]\w*)", value))
                literal = value.strip("\"'")
                if any(re.search(rf"\b{p}\b", prompts) for p in parts) or (
                        literal and literal in prompts):
                    continue
                first = group[0]
                yield ctx.finding(
                    Range.of_line(block.start_line + 1 + no, m.start(1) - 1, m.end(1)),
                    f"`${var}` is verified after the Task call, but no Task prompt before this "
                    f"block passes it (nor what it is built from): the agent cannot know where "
                    f"to write; expected the path in the prompt",
                    related=[Related(path=ctx.path, range=first.open_range,
                                     message="the Task call whose prompt lacks the path")])
