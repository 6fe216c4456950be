"""What an agent is told: its behavioural file followed by Baton's input contract — where
to write, which signal to print, its role's extra duties and the task."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..model.config import WorkflowSettings
from ..runs import confine
from .preflight import MAX_AGENT, agent_use

ROLE_CONTRACT = {
    "document": [
        "- Or, as the seeds' documentation agent does: update the project's documentation "
        "files instead and print DOCUMENTATION_UPDATED: [file, ...] naming every file you "
        "changed (inside the workspace); those files are then your artifact"],
    "research-supervisor": [
        "- Or, as the seeds' research supervisor does: once your workers wrote their reports, "
        "print SUPERVISOR_COMPLETE: {json of the aggregated metadata} instead of writing the "
        "file; Baton writes it at the artifact path for you"],
    "classifier": [
        "- Classify the task: write the JSON to the artifact path and print it on one line as "
        "CLASSIFICATION_COMPLETE: {\"workflow_type\": <scope>, \"research_complexity\": 1-4, "
        "\"research_topics\": [{\"short_name\", \"detailed_description\" (50-500 chars), "
        "\"filename_slug\" (^[a-z0-9_]{1,50}$), \"research_focus\"}, ...] (as many as the "
        "complexity), \"confidence\": 0-1, \"reasoning\": \"...\"}",
        "- Scope, complexity or topics given below are the user's and must be kept"],
    "research-coordinator": [
        "- Planning only: do not research. Write the invocation plan (one line per topic) to "
        "the artifact path, then print INVOCATION_PLAN_READY: <count> and on the next line "
        "invocations: [{\"topic\": ..., \"report_path\": ...}, ...] using exactly the "
        "report paths below"],
    "implement-coordinator": [
        "- Implement the plan's remaining phases wave by wave as far as your context allows; "
        "write phase summaries to the summaries directory and an iteration summary to the "
        "artifact path",
        "- Then print IMPLEMENTATION_COMPLETE: SUCCESS followed by the brief summary lines "
        "summary_path:, phases_completed: [..], work_remaining: (space-separated Phase_N, or 0), "
        "context_exhausted: true|false, requires_continuation: true|false, "
        "context_usage_percent: N"],
}

SIGNAL_OF_ROLE = {"research": "REPORT_CREATED", "plan": "PLAN_CREATED",
                  "revise": "PLAN_REVISED", "implement": "SUMMARY_CREATED",
                  "debug": "DEBUG_REPORT_CREATED", "document": "SUMMARY_CREATED",
                  "implement-coordinator": "SUMMARY_CREATED"}

# Contract values worth repeating in the prompt (the rest stay in the environment).
PROMPT_KEYS = ("BATON_TOPIC", "BATON_PLAN_PATH", "BATON_REPORT_PATHS", "BATON_TEST_OUTPUT",
               "BATON_SCOPE", "BATON_RESEARCH_COMPLEXITY", "BATON_TOPICS_JSON",
               "BATON_RESEARCH_METADATA", "BATON_ITERATION", "BATON_MAX_ITERATIONS",
               "BATON_CONTINUATION_CONTEXT", "BATON_WORK_REMAINING", "BATON_SUMMARIES_DIR")


@dataclass(frozen=True)
class Prompt:
    """The text on the agent's stdin plus what the role's agent file asks for."""

    text: str
    model: str | None
    fallback_model: str | None
    tools: tuple[str, ...]
    runner: str | None


def build_prompt(root: Path, settings: WorkflowSettings, runner_name: str | None, role: str,
                 sid: str, artifact: Path, contract: dict[str, str]) -> Prompt:
    """Behavioural file + the input contract; also the model, fallback model and tools it
    asks for, and the role's runner."""
    use, tools = agent_use(root, settings, role, runner_name)
    # through `confine`: the body goes to a remote model, so a link swapped in since the
    # preflight must not send a file from outside the workspace
    body = confine.read_bytes(root, use.agent_file, MAX_AGENT).decode("utf-8", "replace") \
        if use.agent_file is not None else ""
    signal_name = SIGNAL_OF_ROLE.get(role, "ARTIFACT_CREATED")
    lines = ["", "---", "", "## Input contract (from Baton)", "",
             f"- Workflow: {contract['BATON_WORKFLOW_ID']} · step {sid} · role {role}",
             f"- Workspace: {root}",
             f"- Write your artifact to exactly this absolute path: {artifact}",
             f"- When it is written, print on its own line: {signal_name}: {artifact}"]
    lines += ROLE_CONTRACT.get(role, [])
    if role == "implement":
        lines.append(f"- Implement phase {contract.get('BATON_PHASE')} of "
                     f"{contract.get('BATON_PLAN_PATH')} only; print PHASE_COMPLETE: "
                     f"{contract.get('BATON_PHASE')}")
    if contract.get("BATON_WORKTREE"):
        lines.append(f"- Work in your own git worktree {contract['BATON_WORKTREE']} (branch "
                     f"{contract.get('BATON_BRANCH')}): change the code there, not in the "
                     "workspace; Baton commits what you leave and merges it when the wave ends")
    for key in PROMPT_KEYS:
        if contract.get(key):
            lines.append(f"- {key.removeprefix('BATON_').replace('_', ' ').title()}: "
                         f"{contract[key]}")
    lines += ["- On failure print: TASK_ERROR: <error_type> - <message>",
              "", "## Task", "", contract["BATON_DESCRIPTION"]]
    return Prompt(body + "\n".join(lines) + "\n", use.model, use.fallback_model, tools,
                  settings.role(role).runner)
