"""The deterministic example agent behind the `script` runner (`python -m
baton_lsp.workflow.scripted`).

It honours exactly the contract a real agent gets — the prompt on stdin, the contract in
`BATON_*` environment variables — writes its artifact at `BATON_ARTIFACT_PATH` and prints the
return signals, so a workspace runs end to end offline and tests exercise the real engine,
subprocesses and files. Standard library plus Baton's `runs.confine`;
`examples/agents/scripted_agent.py` runs this module, for people writing their own script
agents (run with the interpreter Baton runs in).

Every file it writes goes through `confine` below the workspace root the engine hands it in
`BATON_WORKSPACE`: a repository can plant symlinks, FIFOs or temp names where it writes
(the journal, an artifact, `.phase_N_summary.md.tmp`), and none of them may steer a write
out of the workspace or hang the agent. A refused path ends the step with
`TASK_ERROR: file_error - …` naming the link.

Failure injection (for tests and demos) comes from `BATON_SCRIPT_BEHAVIOUR` (a JSON file) or
`<workspace>/.claude/baton-script.json`: `{"<step-id glob>": {...}}` with keys
`sleep` (seconds), `exit` (code), `hang` (never returns), `stall` (prints once, then hangs),
`meet` (step ids: wait until each has started, up to `meet_within` seconds (600), then fail:
a test sees steps overlap without timing),
`outlive` (keep working when the engine is gone: its stdout closed),
`write` (`nothing` | `empty` | `elsewhere`), `fail_attempts` (fail transiently — a rate-limit
message and exit 75 — on the first N attempts), `task_error` (`type - message`),
`phases` (plan role: list of dependency lists, one per phase), `files`, `replace`, `commit`
and `require` (implement role: the code it writes in its working directory, in-place edits of
files there, a message to commit it with, files that must be there), `tests` (test role: `fail`
or `pass-after-debug`).

Coordination roles: `classifier` prints `CLASSIFICATION_COMPLETE: {json}` (keys `scope`,
`complexity`, `classification`: an object printed verbatim, or `missing`, `invalid_slug`,
`wrong_count`, `short_description`); `research-coordinator` returns an invocation plan
(`plan`: `wrong_path`, `wrong_count`); `research-supervisor` runs one scripted worker
per topic in parallel (behaviours of `research.N` apply to them); `implement-coordinator`
implements the plan's remaining phases and returns the brief summary
(`phases_per_iteration` (default: all) or `iterations` (spread the plan over that many),
`stuck` (no progress), `no_continuation` (claims to be done while work remains),
`context_usage_percent`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import signal as _signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from baton_lsp.paths import python_module_argv
from baton_lsp.runs import confine
from baton_lsp.runs.places import scripted_journal_path

ENV = os.environ
_OUTLIVE = False


def workspace_root() -> Path:
    """The root every write is confined to: `BATON_WORKSPACE` (the engine's, already a real
    path), else the working directory."""
    return Path(os.path.realpath(ENV.get("BATON_WORKSPACE") or "."))


def read(path: Path) -> str:
    """A workspace file the agent reads (its behaviour table, the plan, an artifact to
    revise): never through a link out of the workspace, never blocking on a FIFO."""
    return confine.read_bytes(workspace_root(), path).decode("utf-8")


def behaviour(step: str, workspace: Path) -> dict[str, Any]:
    given = ENV.get("BATON_SCRIPT_BEHAVIOUR")  # the test harness's own file, anywhere
    try:
        text = confine.read_regular(given).decode("utf-8") if given else \
            read(workspace / ".claude" / "baton-script.json")
        table = json.loads(text)
    except FileNotFoundError:
        return {}
    except confine.UnsafePath:
        raise
    except (OSError, ValueError):
        return {}
    out: dict[str, Any] = {}
    if isinstance(table, dict):
        for pattern, spec in table.items():
            if isinstance(spec, dict) and fnmatch.fnmatchcase(step, pattern):
                out.update(spec)
    return out


def started(workspace: Path) -> set[str]:
    """The steps the journal says have started."""
    path = scripted_journal_path(workspace)
    try:
        text = confine.read_bytes(workspace, path).decode("utf-8", errors="replace")
    except OSError:
        return set()
    return {parts[1] for line in text.splitlines()
            if len(parts := line.split()) >= 2 and parts[0] == "start"}


def journal(workspace: Path, line: str) -> None:
    """One line per start/finish in `.claude/tmp/scripted_runs.log`, so tests can see which
    steps ran, how often and how they overlapped."""
    path = scripted_journal_path(workspace)
    try:
        confine.makedirs_own(workspace, path.parent)
        with confine.open_append(workspace, path) as fd:
            os.write(fd, (line + "\n").encode("utf-8"))
    except confine.UnsafePath:
        raise
    except OSError:
        pass


def say(line: str) -> None:
    """Print a line; with `outlive`, an agent whose engine died (its stdout gone) carries on
    silently, as agent CLIs that finish their work without a reader do."""
    global _OUTLIVE
    try:
        print(line, flush=True)
    except BrokenPipeError:
        if not _OUTLIVE:
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        _OUTLIVE = False  # stdout is /dev/null from now on


def on_stop(workspace: Path, step: str, attempt: int) -> None:
    """SIGTERM (a cancel, or a resume stopping an orphan) ends the agent at once, with a
    `stop` line in the journal: tests see exactly when a stopped agent ended."""
    def stop(signum: int, frame: object) -> None:
        try:
            journal(workspace, f"stop {step} {attempt} {time.time():.3f}")
        finally:
            os._exit(128 + signum)

    _signal.signal(_signal.SIGTERM, stop)


def write(path: Path, text: str) -> None:
    """Temp file (`O_EXCL | O_NOFOLLOW`, a fresh random name: never a planted one) and
    rename, every directory on the way walked inside the workspace."""
    confine.write_atomic(workspace_root(), path, text.encode("utf-8"), mode=0o644,
                         durable=False)


FINDINGS = [
    ("Existing patterns", "The codebase already contains patterns relevant to this topic: "
     "modules that solve neighbouring problems with the same layering, naming and error "
     "handling conventions, so new work can follow them instead of inventing its own."),
    ("Test coverage", "Existing tests cover the neighbouring modules with real files and "
     "subprocesses; the gaps are at the boundaries (bad input, interrupted runs, concurrent "
     "access), which is where regressions have historically appeared."),
    ("Configuration", "Behaviour is driven by a small configuration table with defaults for "
     "every key, validated up front, so a mistake is reported with the key's name before "
     "any work starts rather than halfway through."),
    ("Failure modes", "The risky paths are partial writes and retries: every artifact should "
     "be written to a temporary file and renamed, and every retry must be idempotent so "
     "that a resumed run does not duplicate work already done."),
    ("Performance", "The expensive part is process start-up and I/O, not computation; "
     "running independent work in parallel and caching parsed inputs keeps the wall time "
     "close to the critical path."),
]


def report(topic: str, description: str) -> str:
    """A realistic-sized report (~4 KB): frontmatter counts, metadata, summary, findings with
    detail, recommendations — what a supervisor extracts metadata from."""
    lines = ["---", "report_type: codebase analysis", f"topic: {json.dumps(topic)}",
             f"findings_count: {len(FINDINGS)}", "recommendations_count: 3", "---", "",
             f"# Research Report: {topic}", "", "## Metadata",
             f"- **Date**: {time.strftime('%Y-%m-%d')}", "- **Agent**: scripted research agent",
             f"- **Topic**: {topic}", "", "## Executive Summary", "",
             f"Deterministic findings for \"{topic}\" in the context of: {description}. "
             "The work fits the existing structure; the main risks are at the boundaries.", "",
             "## Findings", ""]
    lines += [f"{i}. **{title}**: {body.split(':')[0].split(';')[0]}."
              for i, (title, body) in enumerate(FINDINGS, 1)]
    lines += ["", "## Details", ""]
    for i, (title, body) in enumerate(FINDINGS, 1):
        lines += [f"### Finding {i}: {title}", "", body, "",
                  f"Evidence for {topic}: the relevant files were read and compared with the "
                  "request; the observations above hold for every module examined.", ""]
    lines += ["## Recommendations", "", "- Reuse the existing structure.",
              "- Add tests first, starting with the failure modes.",
              "- Measure before optimising.", ""]
    return "\n".join(lines)


def implement_code(phase: str, title: str, description: str, how: dict[str, Any]) -> list[str]:
    """The phase's code change, in the agent's working directory (its worktree when the
    phase is isolated): `files` ({relative path: content}) or one module per phase; with
    `commit` (a message) the agent also commits it itself, as real agents often do;
    `replace` ({relative path: [old, new]}) edits a file that is there in place, as an agent
    editing a shared module does."""
    here = Path.cwd()
    files = how.get("files") or {
        f"src/phase_{re.sub(r'[^A-Za-z0-9]', '_', phase)}.py":
            f'"""Phase {phase}: {title}."""\n\nPHASE = {phase!r}\nFOR = {description[:200]!r}\n'}
    changed = []
    for rel, pair in (how.get("replace") or {}).items():
        target = Path(os.path.normpath(here / rel))  # lexically; links are confine's
        if target.is_relative_to(here) and target.is_file():
            old, new = (str(x) for x in pair)
            write(target, read(target).replace(old, new, 1))
            changed.append(rel)
    for rel, content in files.items():
        target = Path(os.path.normpath(here / rel))  # lexically; links are confine's
        if target.is_relative_to(here):
            write(target, str(content))
            changed.append(rel)
    if how.get("commit"):
        for argv in (["git", "add", "-A"], ["git", "-c", "user.name=agent", "-c",
                                           "user.email=agent@localhost", "commit", "-qm",
                                           str(how["commit"])]):
            subprocess.run(argv, cwd=here, check=False, capture_output=True)
    return changed


DEFAULT_PHASES = [[], [1], [1], [2, 3]]
PHASE_TITLES = ["Foundation", "Core Logic", "Interfaces", "Integration", "Hardening",
                "Performance", "Documentation", "Release"]


def plan(description: str, reports: list[str], phases: list[list[int]]) -> str:
    lines = [f"# Implementation Plan: {description[:80]}", "", "## Metadata",
             f"- **Date**: {time.strftime('%Y-%m-%d')}", f"- **Feature**: {description[:120]}",
             "- **Status**: [NOT STARTED]", f"- **Estimated Hours**: {2 * len(phases)} hours",
             f"- **Estimated Phases**: {len(phases)}", "- **Standards File**: CLAUDE.md",
             "- **Research Reports**:"]
    lines += [f"  - [{Path(r).stem}]({r})" for r in reports] or ["  - none"]
    lines += ["", "## Overview", "", "Generated by the scripted planner.", "",
              "## Implementation Phases", ""]
    for i, deps in enumerate(phases, 1):
        title = PHASE_TITLES[(i - 1) % len(PHASE_TITLES)]
        lines += [f"### Phase {i}: {title} [NOT STARTED]",
                  f"dependencies: [{', '.join(str(d) for d in deps)}]", "", "Tasks:",
                  f"- [ ] Implement {title.lower()} step A", f"- [ ] Implement {title.lower()} "
                  "step B", ""]
    return "\n".join(lines)


ASPECT_TOPICS = [
    ("Existing implementation", "existing_implementation",
     "the modules, patterns and conventions the codebase already uses for this request"),
    ("Best practices", "best_practices",
     "established practice and prior art for this kind of change, and their trade-offs"),
    ("Risks and edge cases", "risks_edge_cases",
     "failure modes, edge cases, security and compatibility risks of the change"),
    ("Testing strategy", "testing_strategy",
     "how to verify the change: unit, integration and end-to-end tests, and benchmarks"),
]


def classifier(artifact: Path, description: str, how: dict[str, Any]) -> int:
    """A deterministic classifier: scope and complexity from the contract or its behaviour
    (default 3 topics, so its answer is distinguishable from the keyword fallback's 2)."""
    low = description.lower()
    scope = ENV.get("BATON_SCOPE") or how.get("scope") or (
        "implement-only" if ENV.get("BATON_PLAN_PATH") else
        "research-only" if low.startswith("research") and "plan" not in low
        and "implement" not in low else
        "research-and-plan" if "plan" in low and "implement" not in low else
        "full-implementation")
    wanted = 4 if re.search(r"\b(comprehensive|thorough|in-depth)\b", low) else \
        1 if re.search(r"\b(quick|simple|typo)\b", low) else 3
    complexity = int(ENV.get("BATON_RESEARCH_COMPLEXITY") or how.get("complexity", wanted))
    given = json.loads(ENV.get("BATON_TOPICS_JSON") or "[]")
    topics = []
    for i in range(complexity):
        name, slug, focus = ASPECT_TOPICS[i % len(ASPECT_TOPICS)]
        if i < len(given):
            name = given[i]
            slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:50] or f"topic_{i}"
        topics.append({"short_name": name, "filename_slug": slug,
                       "detailed_description": f"Investigate {focus} for: {description}"[:500],
                       "research_focus": f"Key questions about {name.lower()}"})
    data = {"workflow_type": scope, "research_complexity": complexity,
            "research_topics": topics, "confidence": 0.9,
            "reasoning": "scripted classifier: keywords of the description"}
    mode = how.get("classification")
    if isinstance(mode, dict):
        data = mode
    elif mode == "invalid_slug":
        topics[0]["filename_slug"] = "Bad Slug!"
    elif mode == "wrong_count":
        data["research_complexity"] = complexity + 1 if complexity < 4 else 1
    elif mode == "short_description":
        topics[-1]["detailed_description"] = "too short"
    text = json.dumps(data)
    if how.get("write") != "nothing":
        write(artifact, text + "\n")
    if mode != "missing":
        say(f"CLASSIFICATION_COMPLETE: {text}")
    return 0


def research_coordinator(artifact: Path, description: str, how: dict[str, Any]) -> int:
    """Planning-only mode: the invocation plan, never the research itself."""
    topics = json.loads(ENV.get("BATON_TOPICS_JSON") or "[]")
    reports = json.loads(ENV.get("BATON_REPORT_PATHS") or "[]")
    invocations = [{"topic": t, "report_path": r} for t, r in zip(topics, reports, strict=False)]
    if how.get("plan") == "wrong_path" and invocations:
        invocations[0]["report_path"] = str(artifact.parent / "elsewhere.md")
    count = len(invocations) + (1 if how.get("plan") == "wrong_count" else 0)
    write(artifact, "".join(f"{i['topic']}\t{i['report_path']}\n" for i in invocations))
    say("RESEARCH_COORDINATOR_COMPLETE: SUCCESS")
    say(f"INVOCATION_PLAN_READY: {count}")
    say("invocations: " + json.dumps(invocations, indent=2))
    say(f"SUMMARY_CREATED: {artifact}")
    return 0


def plan_phases(text: str) -> list[tuple[str, str, list[str], bool]]:
    """(id, title, dependency ids, marked complete) of each `### Phase N: Title [STATUS]`."""
    out: list[tuple[str, str, list[str], bool]] = []
    for line in text.splitlines():
        m = re.match(r"^#{2,4} Phase ([0-9][0-9.]*)\s*:\s*(.*?)\s*(?:\[([^\]]*)\])?\s*$", line)
        if m:
            status = re.sub(r"[\s_-]+", "", (m.group(3) or "").upper())
            out.append((m.group(1), m.group(2), [], status in ("COMPLETE", "COMPLETED", "DONE")))
            continue
        d = re.match(r"^\s*(?:[-*]\s*)?(?:\*\*)?depend(?:s on|encies)(?:\*\*)?:\s*(.*)$", line,
                     re.I)
        if d and out:
            out[-1][2].extend(re.findall(r"[0-9][0-9.]*", d.group(1)))
    return out


def implement_coordinator(artifact: Path, description: str, how: dict[str, Any]) -> int:
    """One iteration: implement the plan's remaining phases (those without a phase summary)
    wave by wave — a phase only once its dependencies are done — up to
    `phases_per_iteration`, then the brief summary."""
    plan_path = Path(ENV.get("BATON_PLAN_PATH", ""))
    summaries = Path(ENV.get("BATON_SUMMARIES_DIR") or artifact.parent)
    iteration = ENV.get("BATON_ITERATION", "1")
    phases = plan_phases(read(plan_path))

    def summary_of(pid: str) -> Path:
        return summaries / f"phase_{pid.replace('.', '_')}_summary.md"

    complete = {pid for pid, _, _, marked in phases if marked or summary_of(pid).exists()}
    todo = [(pid, title) for pid, title, _, _ in phases if pid not in complete]
    deps = {pid: d for pid, _, d, _ in phases}
    per = int(how.get("phases_per_iteration", len(todo) or 1))
    if how.get("iterations"):  # finish the whole plan in this many iterations
        per = -(-len(phases) // int(how["iterations"]))
    done: list[tuple[str, str]] = []
    wave = 0
    while not how.get("stuck") and len(done) < per:
        ready = [(pid, t) for pid, t in todo if (pid, t) not in done
                 and all(d in complete for d in deps.get(pid, []))]
        if not ready:
            break
        wave += 1
        batch = ready[:per - len(done)]
        say(f"PROGRESS: wave {wave}: phase{'s' if len(batch) > 1 else ''} "
            f"{', '.join(pid for pid, _ in batch)}")
        done += batch
        complete |= {pid for pid, _ in batch}
    for pid, title in done:
        write(summary_of(pid), f"# Phase {pid} Summary: {title}\n\nstatus: complete\n"
              f"work_remaining: 0\n\nImplemented phase {pid} of {plan_path}.\n")
        say(f"PHASE_COMPLETE: {pid}")
    finished = {pid for pid, _ in done}
    left = [pid for pid, _ in todo if pid not in finished]
    remaining = " ".join(f"Phase_{p}" for p in left) or "0"
    more = bool(left) and not how.get("no_continuation")
    usage = int(how.get("context_usage_percent", 40))
    body = [f"# Implementation Summary — iteration {iteration}", "",
            "coordinator_type: software", f"work_remaining: {remaining}",
            "context_exhausted: false", f"requires_continuation: {str(more).lower()}",
            f"context_usage_percent: {usage}", "", "## Phases completed", ""]
    for pid, title in done:
        body += [f"### Phase {pid}: {title}", "", "- Tasks: all checked off.",
                 "- Files changed: implementation, tests and documentation for this phase.",
                 "- Tests: the phase's tests pass; no regressions in the suite.",
                 "- Notes: followed the plan; no deviations were necessary.", ""]
    body += ["## Remaining work", "", remaining, ""]
    write(artifact, "\n".join(body))
    say("IMPLEMENTATION_COMPLETE: SUCCESS")
    say("coordinator_type: software")
    say(f"summary_path: {artifact}")
    say(f"summary_brief: \"Completed {len(done)} phase(s). Context: {usage}%. Next: "
        f"{'continue' if more else 'done'}.\"")
    say(f"phases_completed: [{', '.join(p for p, _ in done)}]")
    say(f"work_remaining: {remaining}")
    say("context_exhausted: false")
    say(f"requires_continuation: {str(more).lower()}")
    say(f"context_usage_percent: {usage}")
    say(f"SUMMARY_CREATED: {artifact}")
    return 0


def research_supervisor(artifact: Path, description: str, how: dict[str, Any]) -> int:
    """Supervisor mode run by the agent itself: one scripted research worker per topic, all
    at once (they are this script again, in the research role, each with its own step id so
    per-worker behaviours apply), then the REPORT_CREATED lines of those that succeeded."""
    topics = json.loads(ENV.get("BATON_TOPICS_JSON") or "[]")
    reports = json.loads(ENV.get("BATON_REPORT_PATHS") or "[]")
    ids = json.loads(ENV.get("BATON_WORKER_IDS") or "[]")
    workers = []
    for topic, report, wid in zip(topics, reports, ids, strict=False):
        env = {**ENV, "BATON_ROLE": "research", "BATON_STEP_ID": wid, "BATON_TOPIC": topic,
               "BATON_ARTIFACT_PATH": report, "BATON_ATTEMPT": "1"}
        workers.append((wid, report, subprocess.Popen(
            python_module_argv("baton_lsp.workflow.scripted", "-P"), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)))
    lines = ["# Research Supervisor Summary", "", f"Request: {description}", ""]
    done = 0
    for wid, report, proc in workers:
        out, _ = proc.communicate()
        ok = proc.returncode == 0 and f"REPORT_CREATED: {report}" in out
        done += ok
        lines.append(f"- {wid}: {'completed' if ok else f'failed (exit {proc.returncode})'}"
                     f" — {report}")
        if ok:
            say(f"REPORT_CREATED: {report}")
    write(artifact, "\n".join(lines) + "\n")
    say(f"RESEARCH_COMPLETE: {done}")
    say(f"SUMMARY_CREATED: {artifact}")
    return 0


COORDINATION_ROLES = {"classifier": classifier, "research-coordinator": research_coordinator,
                      "research-supervisor": research_supervisor,
                      "implement-coordinator": implement_coordinator}


def main() -> int:
    """`run`, with a path `confine` refused reported as the step's own failure."""
    try:
        return run()
    except confine.UnsafePath as exc:
        say(f"TASK_ERROR: file_error - {exc}")
        print(f"scripted agent: {exc}", file=sys.stderr, flush=True)
        return 1


def run() -> int:
    global _OUTLIVE
    role = ENV.get("BATON_ROLE", "")
    step = ENV.get("BATON_STEP_ID", role)
    workspace = workspace_root()
    attempt = int(ENV.get("BATON_ATTEMPT", "1") or 1)
    on_stop(workspace, step, attempt)
    sys.stdin.read()  # the prompt; a real agent would follow it
    artifact = Path(ENV.get("BATON_ARTIFACT_PATH", ""))
    description = ENV.get("BATON_DESCRIPTION", "")
    how = behaviour(step, workspace)
    _OUTLIVE = bool(how.get("outlive"))

    say(f"PROGRESS: {role} agent starting {step} (attempt {attempt})")
    journal(workspace, f"start {step} {attempt} {time.time():.3f}")
    if attempt <= int(how.get("fail_attempts", 0)):
        print("API error: rate limit exceeded (429), retry later", file=sys.stderr, flush=True)
        return 75
    if how.get("stall"):
        say("PROGRESS: thinking…")
        time.sleep(3600)
    if how.get("hang"):
        time.sleep(3600)
    if how.get("sleep"):
        time.sleep(float(how["sleep"]))
    if how.get("meet"):  # hold until every sibling named has started: they overlap
        others = {str(s) for s in how["meet"]} - {step}
        deadline = time.monotonic() + float(how.get("meet_within", 600))
        while not others <= started(workspace) and time.monotonic() < deadline:
            time.sleep(0.05)
        if absent := others - started(workspace):
            say(f"TASK_ERROR: execution_error - {', '.join(sorted(absent))} never started "
                f"while {step} ran")
            return 1
    if how.get("until"):  # hold until a test says so: no test depends on the machine's speed
        gate, deadline = workspace / str(how["until"]), time.monotonic() + 600
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    if how.get("task_error"):
        # the seeds' error return protocol: the context first, then the error it details
        say("ERROR_CONTEXT: " + json.dumps({"step": step, "injected": True}))
        say(f"TASK_ERROR: {how['task_error']}")
    if "exit" in how:
        return int(how["exit"])

    if role in COORDINATION_ROLES:
        code = COORDINATION_ROLES[role](artifact, description, how)
        journal(workspace, f"end {step} {attempt} {time.time():.3f}")
        return code
    if role == "research":
        text = report(ENV.get("BATON_TOPIC", "topic"), description)
    elif role in ("plan", "revise"):
        reports = json.loads(ENV.get("BATON_REPORT_PATHS", "[]") or "[]")
        if role == "revise" and artifact.is_file():
            text = read(artifact) + (
                f"\n## Revision\n\n- Revised for: {description}\n")
        else:
            text = plan(description, reports, how.get("phases", DEFAULT_PHASES))
    elif role == "implement":
        phase = ENV.get("BATON_PHASE", "?")
        title = ENV.get("BATON_PHASE_TITLE", "")
        missing = [p for p in how.get("require", []) if not (Path.cwd() / p).is_file()]
        if missing:
            say(f"TASK_ERROR: dependency_error - missing in {Path.cwd()}: {', '.join(missing)}")
            return 1
        changed = implement_code(phase, title, description, how)
        text = (f"# Phase {phase} Summary: {title}\n\n"
                f"status: complete\nwork_remaining: 0\n\nImplemented phase {phase} of "
                f"{ENV.get('BATON_PLAN_PATH', '')}.\n\nWorking directory: {Path.cwd()}\n"
                f"Changed: {', '.join(changed)}\n")
    elif role == "debug":
        output = ENV.get("BATON_TEST_OUTPUT", "")
        text = (f"# Debug Report\n\n## Failing output\n\n{output or '(none)'}\n\n"
                "## Root cause\n\nDeterministic scripted diagnosis.\n\n## Fix\n\nApplied.\n")
        fixed = workspace / ".claude" / "tmp" / "scripted_tests_fixed"
        if how.get("fix", True):
            write(fixed, "fixed\n")
    elif role == "document":
        text = (f"# Workflow Summary\n\n{description}\n\nPlan: {ENV.get('BATON_PLAN_PATH', '')}"
                "\n\nAll phases implemented and tested.\n")
    elif role == "test":  # used as a test command: `python -m baton_lsp.workflow.scripted`
        mode = how.get("tests", "pass")
        was_fixed = os.path.isfile(workspace / ".claude" / "tmp" / "scripted_tests_fixed") \
            and not os.path.islink(workspace / ".claude" / "tmp" / "scripted_tests_fixed")
        if mode == "fail" or (mode == "pass-after-debug" and not was_fixed):
            say("FAILED tests/test_feature.py::test_login - AssertionError: 401 != 200")
            return 1
        say("4 passed")
        return 0
    else:
        say(f"TASK_ERROR: validation_error - unknown role {role!r}")
        return 2

    target = artifact
    mode = how.get("write")
    if mode == "nothing":
        pass
    elif mode == "empty":
        write(target, "")
    elif mode == "elsewhere":
        target = workspace / ".claude" / "tmp" / f"misplaced_{artifact.name}"
        write(target, text)
    else:
        write(target, text)

    signal = {"research": "REPORT_CREATED", "plan": "PLAN_CREATED", "revise": "PLAN_REVISED",
              "implement": "SUMMARY_CREATED", "debug": "DEBUG_REPORT_CREATED",
              "document": "SUMMARY_CREATED"}[role]
    if role == "implement":
        say(f"PHASE_COMPLETE: {ENV.get('BATON_PHASE', '?')}")
    say(f"{signal}: {target}")
    journal(workspace, f"end {step} {attempt} {time.time():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
