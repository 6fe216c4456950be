"""Baton's defaults through each real agent CLI as a normal (non-root) user.

Sessions and CI run as root, so tests/agents/test_workflows_*.py only prove the root case,
and the CLIs do look at who runs them: Claude Code refuses `--dangerously-skip-permissions`
as root (its check is `process.getuid() === 0`), and codex's `workspace-write` sandbox (its
bundled bubblewrap plus seccomp) must be set up without privileges. Here the same
research-and-plan workflow (the fixtures and fake model servers of test_workflows_*.py, Baton's
defaults; gemini only gets its model, as there; opencode its configuration) runs with
getuid() == 1000.

How, when the tests run as root: `unshare --user --map-user=1000 --map-group=1000` runs
`baton` in a new user namespace where the process is uid/gid 1000 with no capabilities
(unshare execs the command as a non-zero uid, so the namespace's capabilities are dropped);
everything it starts — preflight's `--version` calls, the agent CLIs, codex's sandboxed shell
— inherits that namespace and cannot become root again. The kernel still checks file access
against the real uid, mapped to 1000: root's files look like the user's own (the Python under
/root/.pyenv, the CLIs under /root/.cache/baton-agents, pytest's temporary directory), which
is what a normal user who owns their checkout, home and tools sees. When the tests do not
run as root they already are a normal user and run directly. A root run where the kernel or
container refuses `unshare --user` is skipped, saying so.

Why not a real account (useradd): /root is mode 700 and the test Python, the venv's
interpreter and the installed CLIs live under it, so another uid could not even start them
without copying or re-permissioning the toolchain — a change to the machine, not a test.

What is proven, and how: a recording shim named like the CLI stands first on PATH (so
Baton's default `executable` still resolves to it) and writes `id -u`, `id -g` and its argv,
then `exec`s the real CLI — the same process, so those are the CLI's own credentials. On
disk, files written in the namespace belong to the real uid (the mapping's outside end), so
ownership can only show that nothing else wrote them; that is asserted too. For claude, its
own root check is probed directly: `claude -p --dangerously-skip-permissions` is refused as
root and accepted in the namespace. For codex, every shell command of the model also echoes
`id -u` and tries a write outside the workspace, which the sandbox must refuse.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from tests.agents import fake_gemini as fg
from tests.agents import fake_openai as fo
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic, Text, opencode_config
from tests.agents.model import anthropic_agent, gemini_agent, openai_agent, opencode_agent
from tests.agents.workspace import Box

NORMAL_UID = 1000
ROOT_REFUSAL = "cannot be used with root/sudo privileges"
GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                   "privacy": {"usageStatisticsEnabled": False},
                   "telemetry": {"enabled": False},
                   "general": {"enableAutoUpdate": False,
                               "enableAutoUpdateNotification": False, "maxAttempts": 1}}


@dataclass(frozen=True)
class User:
    """How to run a command as a normal user (`wrap`, an argv prefix) and who that is."""

    wrap: tuple[str, ...]
    uid: int
    gid: int


@pytest.fixture(scope="module")
def normal_user() -> User:
    if os.getuid() != 0:
        return User((), os.getuid(), os.getgid())
    wrap = ("unshare", "--user", f"--map-user={NORMAL_UID}", f"--map-group={NORMAL_UID}",
            "--")
    probe = ("import os; s = open('/proc/self/status').read(); "
             "cap = [ln.split()[1] for ln in s.splitlines() if ln.startswith('CapEff:')][0]; "
             "print(os.getuid(), os.getgid(), int(cap, 16))")
    try:
        proc = subprocess.run([*wrap, sys.executable, "-c", probe], capture_output=True,
                              text=True, timeout=60, check=False)
    except OSError as exc:
        pytest.skip(f"running as root and `unshare` cannot run ({exc}): no normal user here")
    if proc.returncode != 0:
        pytest.skip("running as root and `unshare --user` is refused here, so there is no "
                    f"normal user to run as: {(proc.stderr.strip() or proc.stdout)[-300:]}")
    # getuid/getgid are the normal user's, and nothing of root's power came along
    assert proc.stdout.split() == [str(NORMAL_UID), str(NORMAL_UID), "0"], proc.stdout
    return User(wrap, NORMAL_UID, NORMAL_UID)


def _record_launches(box: Box, name: str, cli: str) -> Path:
    """Put a shim named `name` first on PATH that logs its uid, gid and argv (NUL-separated,
    one file per process) and then becomes the real `cli`; return the log directory."""
    shims, log = box.home.parent / "shims", box.home.parent / "launches"
    shims.mkdir()
    log.mkdir()
    shim = shims / name
    shim.write_text("#!/bin/sh\n"
                    f"printf '%s\\0' \"$(id -u)\" \"$(id -g)\" \"$@\" > {shlex.quote(str(log))}"
                    "/$$\n"
                    f"exec {shlex.quote(cli)} \"$@\"\n")
    shim.chmod(0o755)
    box.env["PATH"] = f"{shims}{os.pathsep}{box.env['PATH']}"
    return log


def _agent_launches(log: Path) -> list[tuple[int, int, list[str]]]:
    """(uid, gid, argv) of every launch but the `--version` calls of preflight."""
    out = []
    for entry in sorted(log.iterdir()):
        uid, gid, *argv = entry.read_bytes().decode().split("\0")[:-1]
        if argv != ["--version"]:
            out.append((int(uid), int(gid), argv))
    return out


def _run_research_and_plan(box: Box) -> subprocess.CompletedProcess[str]:
    return box.run("Research rate limiting and plan the login throttle",
                   "--scope", "research-and-plan", "--complexity", "1", "--topic", "limits")


def _assert_completed(box: Box, r: subprocess.CompletedProcess[str], log: Path,
                      user: User) -> list[list[str]]:
    """The workflow completed, every step's artifact is on disk, every agent ran as `user`;
    the agents' argv are returned."""
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete", cp.get("last_error")
    steps = cp["baton"]["steps"]
    assert {"research.1", "plan"} <= set(steps), sorted(steps)
    for sid, step in steps.items():
        artifact = Path(step["artifact"])
        assert step["status"] == "done" and artifact.is_file(), (sid, step)
        # written through the namespace: owned by its outside end, i.e. by nobody else
        assert artifact.stat().st_uid == os.getuid(), (sid, artifact.stat())
    assert "## Implementation Phases" in Path(cp["baton"]["paths"]["plan"]).read_text()
    launches = _agent_launches(log)
    assert len(launches) >= len(steps), launches
    assert {(uid, gid) for uid, gid, _ in launches} == {(user.uid, user.gid)}
    assert user.uid != 0
    return [argv for _, _, argv in launches]


def test_claude_sees_a_normal_user(tmp_path: Path, normal_user: User) -> None:
    # Claude Code's own root check (`process.getuid() === 0`) is what matters: as root it
    # refuses --dangerously-skip-permissions before any request, as the normal user it runs.
    cli = cli_path("claude")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
           "ANTHROPIC_API_KEY": "test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}
    argv = [cli, "-p", "--dangerously-skip-permissions", "--output-format", "text"]
    with FakeAnthropic(lambda req: Text("hello from the model")) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        as_user = subprocess.run([*normal_user.wrap, *argv], input="hi", capture_output=True,
                                 text=True, env=env, timeout=120, check=False)
        assert as_user.returncode == 0, as_user.stdout + as_user.stderr
        assert "hello from the model" in as_user.stdout
        if os.getuid() == 0:
            as_root = subprocess.run(argv, input="hi", capture_output=True, text=True,
                                     env=env, timeout=120, check=False)
            assert as_root.returncode != 0 and ROOT_REFUSAL in as_root.stderr, as_root


def test_research_and_plan_through_real_claude(tmp_path: Path, normal_user: User) -> None:
    cli = cli_path("claude")
    box = Box.create(tmp_path, "claude", cli, ANTHROPIC_API_KEY="test-key",
                     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                     CLAUDE_CODE_MAX_RETRIES="1")
    box.wrap = normal_user.wrap
    log = _record_launches(box, "claude", cli)
    with FakeAnthropic(anthropic_agent()) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = _run_research_and_plan(box)
    argvs = _assert_completed(box, r, log, normal_user)
    # Baton's default permission mode, never a bypass, for a normal user too
    for argv in argvs:
        assert argv[:1] == ["-p"], argv
        assert argv[argv.index("--permission-mode") + 1] == "acceptEdits", argv
        assert "bypassPermissions" not in argv and "--dangerously-skip-permissions" not in argv
    assert any("Write" in req.tool_names for req in api.messages)


def test_research_and_plan_through_real_codex(tmp_path: Path, normal_user: User) -> None:
    cli = cli_path("codex")
    box = Box.create(tmp_path, "codex", cli, FAKE_OPENAI_KEY="sk-fake")
    box.wrap = normal_user.wrap
    (box.home / ".codex").mkdir()
    box.env["CODEX_HOME"] = str(box.home / ".codex")
    log = _record_launches(box, "codex", cli)
    # Each shell command the model sends first says who runs it and tries a write outside
    # the workspace (/var/tmp is world-writable: only the sandbox can stop it).
    outside = Path("/var/tmp") / f"baton-normal-user-{os.getpid()}-{tmp_path.name}"
    agent = cast(fo.Responder, openai_agent())

    def respond(req: fo.Recorded) -> fo.Reply:
        reply = agent(req)
        if isinstance(reply, fo.FunctionCall):
            reply.arguments["cmd"] = (f"echo uid=$(id -u); echo x > {outside}; "
                                      + reply.arguments["cmd"])
        return reply

    with fo.FakeOpenAI(respond) as api:
        config = fo.codex_config(api.base_url, model="gpt-5.5")
        (Path(box.env["CODEX_HOME"]) / "config.toml").write_text(config)
        r = _run_research_and_plan(box)
    argvs = _assert_completed(box, r, log, normal_user)
    # codex wrote the artifacts with its shell tool, inside Baton's default sandbox
    for argv in argvs:
        assert argv[:1] == ["exec"], argv
        assert argv[argv.index("--sandbox") + 1] == "workspace-write", argv
    assert {req.model for req in api.turns} == {"gpt-5.5"}
    outputs = [str(o.get("output", "")) for req in api.turns for o in req.tool_outputs()]
    assert outputs and all(f"uid={normal_user.uid}\n" in o and fo.succeeded(o)
                           for o in outputs), outputs
    if outside.parent.is_dir():
        assert not outside.exists(), f"codex's sandbox let the agent write {outside}"
        assert all("Read-only file system" in o for o in outputs), outputs


def test_research_and_plan_through_real_gemini(tmp_path: Path, normal_user: User) -> None:
    cli = cli_path("gemini")
    box = Box.create(tmp_path, "gemini", cli, GEMINI_API_KEY="fake-key")
    box.settings = ("workflow.gemini.model=gemini-2.5-flash",)
    box.wrap = normal_user.wrap
    (box.home / ".gemini").mkdir()
    (box.home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    log = _record_launches(box, "gemini", cli)
    with fg.FakeGemini(gemini_agent()) as api:  # type: ignore[arg-type]
        box.env["GOOGLE_GEMINI_BASE_URL"] = api.url
        r = _run_research_and_plan(box)
    argvs = _assert_completed(box, r, log, normal_user)
    for argv in argvs:
        assert argv[argv.index("--approval-mode") + 1] == "auto_edit", argv
        assert "--skip-trust" in argv and "yolo" not in argv, argv
    chats = [req for req in api.requests if req.action == "streamGenerateContent"]
    assert chats and {req.model for req in chats} == {"gemini-2.5-flash"}


def test_research_and_plan_through_real_opencode(tmp_path: Path, normal_user: User) -> None:
    cli = cli_path("opencode")
    box = Box.create(tmp_path, "opencode", cli, OPENCODE_DISABLE_MODELS_FETCH="1")
    box.wrap = normal_user.wrap
    (box.home / ".config" / "opencode").mkdir(parents=True)
    log = _record_launches(box, "opencode", cli)
    with FakeAnthropic(opencode_agent()) as api:  # type: ignore[arg-type]
        (box.home / ".config" / "opencode" / "opencode.json").write_text(
            opencode_config(api.url))
        r = _run_research_and_plan(box)
    argvs = _assert_completed(box, r, log, normal_user)
    for argv in argvs:
        assert argv[:3] == ["run", "--format", "json"], argv
    assert any("write" in req.tool_names for req in api.messages)
