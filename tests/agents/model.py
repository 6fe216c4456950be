"""The remote model behind a real agent CLI, for whole workflows: the only test double.

Each agent step's prompt (what Baton's engine wrote and the CLI forwarded) carries the step's
input contract: role, the absolute artifact path, the signal to print, the topic, plan and
report paths and the task. `answer(prompt)` reads it back and lets Baton's deterministic
scripted agent decide what a good answer would be — run in a scratch directory with that
contract, so the model never touches the workspace itself. The CLI then has to do the real
part: call its own file-writing tool on the artifact path under its own permission rules,
send the tool result back, and print the final text with the signals.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"^- (?P<key>[A-Z][A-Za-z ]+): (?P<value>.*)$", re.MULTILINE)
_STEP = re.compile(r"^- Workflow: (?P<wid>\S+) · step (?P<step>\S+) · role (?P<role>\S+)$",
                   re.MULTILINE)
_ARTIFACT = re.compile(r"^- Write your artifact to exactly this absolute path: (?P<p>/\S+)$",
                       re.MULTILINE)
_PHASE = re.compile(r"^- Implement phase (?P<n>\S+) of (?P<plan>/\S+) only;", re.MULTILINE)
_WORKTREE = re.compile(r"^- Work in your own git worktree (?P<wt>/\S+) \(branch", re.MULTILINE)
_TASK = re.compile(r"^## Task\n\n(?P<task>.*)\Z", re.MULTILINE | re.DOTALL)
_CONTRACT_KEYS = ("TOPIC", "PLAN_PATH", "REPORT_PATHS", "SCOPE", "RESEARCH_COMPLEXITY",
                  "TOPICS_JSON", "RESEARCH_METADATA", "ITERATION", "MAX_ITERATIONS",
                  "SUMMARIES_DIR", "TEST_OUTPUT")


@dataclass(frozen=True)
class Answer:
    """What the model decides for one step: write `content` at `path`, then say `final`.
    A phase working in its own git worktree first writes `code` (path, content) there."""

    path: str
    content: str
    final: str
    code: tuple[str, str] | None = None

    def writes(self) -> list[tuple[str, str]]:
        return [*([self.code] if self.code else []), (self.path, self.content)]


def contract_of(prompt: str) -> dict[str, str] | None:
    """The BATON_* contract an engine prompt states, or None for a prompt that is not one."""
    step, artifact = _STEP.search(prompt), _ARTIFACT.search(prompt)
    if step is None or artifact is None:
        return None
    env = {"BATON_WORKFLOW_ID": step["wid"], "BATON_STEP_ID": step["step"],
           "BATON_ROLE": step["role"], "BATON_ARTIFACT_PATH": artifact["p"]}
    titles = {key.replace("_", " ").title(): key for key in _CONTRACT_KEYS}
    for m in _LINE.finditer(prompt):
        if m["key"] in titles:
            env[f"BATON_{titles[m['key']]}"] = m["value"]
    phase = _PHASE.search(prompt)
    if phase is not None:
        env["BATON_PHASE"] = phase["n"]
        env.setdefault("BATON_PLAN_PATH", phase["plan"])
    task = _TASK.search(prompt)
    env["BATON_DESCRIPTION"] = task["task"].strip() if task else ""
    return env


def answer(prompt: str) -> Answer | None:
    """The scripted agent's answer to an engine prompt (None: not an engine prompt)."""
    contract = contract_of(prompt)
    if contract is None:
        return None
    real = contract["BATON_ARTIFACT_PATH"]
    with tempfile.TemporaryDirectory(prefix="baton-model-") as scratch:
        draft = Path(scratch) / "artifact"
        env = {"PATH": os.environ.get("PATH", ""), **contract,
               "BATON_ARTIFACT_PATH": str(draft), "BATON_WORKSPACE": scratch}
        proc = subprocess.run([sys.executable, "-P", "-m", "baton_lsp.workflow.scripted"],
                              input="", capture_output=True, text=True, env=env, cwd=scratch,
                              timeout=60, check=False)
        content = draft.read_text(encoding="utf-8") if draft.is_file() else ""
    lines = [line.replace(str(draft), real) for line in proc.stdout.splitlines()
             if not line.startswith("PROGRESS:")]
    tree = _WORKTREE.search(prompt)
    code = (f"{tree['wt']}/src/phase_{contract.get('BATON_PHASE')}.py",
            f"PHASE = {contract.get('BATON_PHASE')!r}\n") if tree else None
    return Answer(real, content, "\n".join(["Done.", *lines]), code)


def engine_prompt(body: object) -> str:
    """The engine's prompt inside a request body (the text block with Baton's contract)."""
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "## Input contract (from Baton)" in item:
                return item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return ""


def anthropic_agent() -> object:
    """A FakeAnthropic responder that plays every agent of a workflow through claude's own
    Write tool; a refused write is answered the way an agent would (TASK_ERROR)."""
    from tests.agents import fake_anthropic as fa

    def respond(req: fa.Recorded) -> fa.Reply:
        ans = answer(engine_prompt(req.body))
        if ans is None:
            return fa.Text("Nothing to do.")
        results = req.last_tool_results()
        if results and results[-1].get("is_error"):
            return fa.Text("The write was refused.\n"
                           "TASK_ERROR: file_error - the artifact could not be written")
        done = sum(1 for m in req.body.get("messages") or [] if m.get("role") == "user"
                   for b in (m.get("content") if isinstance(m.get("content"), list) else [])
                   if isinstance(b, dict) and b.get("type") == "tool_result")
        writes = ans.writes()
        if done < len(writes):
            path, content = writes[done]
            return fa.ToolUse("Write", {"file_path": path, "content": content},
                              text="Writing the code." if done < len(writes) - 1
                              else "Writing the artifact.")
        return fa.Text(ans.final)

    return respond


def openai_agent(tool: str = "exec_command") -> object:
    """A FakeOpenAI responder playing a workflow's agents through codex's shell tool (the
    tool codex offers for every model) or, with `tool="apply_patch"`, its patch tool (offered
    to models with bundled metadata, e.g. gpt-5.5); a failed write is answered with
    TASK_ERROR."""
    from tests.agents import fake_openai as fo

    def respond(req: fo.Recorded) -> fo.Reply:
        ans = answer(engine_prompt(req.body))
        if ans is None:
            return fo.Text("Nothing to do.")
        outputs = req.tool_outputs()
        if not outputs and tool == "apply_patch":
            return fo.CustomToolCall("apply_patch", fo.add_file_patch(ans.path, ans.content))
        if not outputs:
            return fo.FunctionCall("exec_command", {
                "cmd": fo.shell_write_command(ans.path, ans.content), "yield_time_ms": 5000})
        if not fo.succeeded(str(outputs[-1].get("output", ""))):
            return fo.Text("The write failed.\n"
                           "TASK_ERROR: file_error - the artifact could not be written")
        return fo.Text(ans.final)

    return respond


def gemini_agent() -> object:
    """A fake_gemini Script playing a workflow's agents through gemini's write_file tool."""
    from tests.agents import fake_gemini as fg

    return fg.Script(behaviour="success", agent=lambda body: answer(engine_prompt(body)))


def opencode_agent() -> object:
    """A FakeAnthropic responder playing a workflow's agents through opencode's own `write`
    tool ({filePath, content}); a refused write is answered with TASK_ERROR. opencode's side
    requests without tools (the session title, asked of the provider's small model) get a
    plain title."""
    from tests.agents import fake_anthropic as fa

    def respond(req: fa.Recorded) -> fa.Reply:
        if not req.body.get("tools"):
            return fa.Text("Baton step")
        ans = answer(engine_prompt(req.body))
        if ans is None:
            return fa.Text("Nothing to do.")
        results = req.last_tool_results()
        if results and (results[-1].get("is_error")
                        or not fa.text_of(results[-1]).startswith("Wrote file successfully")):
            return fa.Text("The write was refused.\n"
                           "TASK_ERROR: file_error - the artifact could not be written")
        writes = ans.writes()
        done = sum(1 for m in req.body.get("messages") or [] if m.get("role") == "user"
                   for b in (m.get("content") if isinstance(m.get("content"), list) else [])
                   if isinstance(b, dict) and b.get("type") == "tool_result")
        if done < len(writes):
            path, content = writes[done]
            return fa.ToolUse("write", {"filePath": path, "content": content},
                              text="Writing the code." if done < len(writes) - 1
                              else "Writing the artifact.")
        return fa.Text(ans.final)

    return respond
