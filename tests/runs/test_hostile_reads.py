"""Every file the run side reads, planted as a real FIFO or as a real symlink to a file
outside the workspace holding a secret, against real `baton` processes.

A repository (or a tarball, or a pull request checked in CI) can ship either at any name
Baton reads back: its checkpoints, `run.json`, the lock, `errors.jsonl`, the state file,
agent logs, the configuration; the user's signing key can be a FIFO. `status` (text and
`--json`), `status ID`, `checkpoints`, `resume --dry-run`, `cancel`, `resume` and `run`
must neither hang (a subprocess timeout fails the test) nor traceback; some output names
the planted file and why it is not read; nothing of the outside file's content appears in
any output (stdout, stderr, `--json`, `--events`); and where a damaged checkpoint today
falls back to the newest good one, a planted one does too.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.runs.store import PLACEHOLDER
from tests.runs.test_foreign import bash_checkpoint
from tests.workflow.conftest import Workspace, agent_started

SECRET = "S3CRET-6f1d2a-do-not-print"
CKPT = ".claude/data/checkpoints/atk"
KEY = "<the signing key>"
"""Not a workspace path: the key file in the data directory (only a FIFO is planted:
a key outside the workspace is the user's own)."""


def _checkpoint_text(ws: Workspace) -> str:
    """A sound (unsigned) copy of the run's newest checkpoint saying the secret."""
    data = json.loads((ws.root / CKPT / "000007.json").read_text())
    data["workflow_description"] = SECRET
    data["status"] = "complete"
    baton = data.pop("baton")
    baton.pop("mac", None)
    baton.pop("checksum", None)
    baton["adopted_from"] = {"path": f"/{SECRET}.json", "sha256": SECRET}
    data["baton"] = {**baton, "checksum": PLACEHOLDER}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.replace(PLACEHOLDER, "sha256:" + hashlib.sha256(text.encode()).hexdigest())


def _error_line(ws: Workspace) -> str:
    first = (ws.root / ".claude/data/logs/errors.jsonl").read_text().splitlines()[0]
    return json.dumps({**json.loads(first), "error_message": SECRET,
                       "error_type": SECRET}) + "\n"


# planted name → the outside file's content (each written as its reader would parse it)
PATHS = {
    f"{CKPT}/000099.json": _checkpoint_text,
    f"{CKPT}/000001.json": _checkpoint_text,
    f"{CKPT}/run.json": lambda ws: json.dumps({"pid": 1, "workflow_id": SECRET,
                                               "launched": {SECRET: {"pgid": 1}}}),
    f"{CKPT}/lock": lambda ws: SECRET,
    f"{CKPT}/logs/research.1.attempt-1.log": lambda ws: f"TASK_ERROR: {SECRET}\n{SECRET}\n",
    ".claude/data/logs/errors.jsonl": _error_line,
    ".claude/tmp/workflow_atk.sh": lambda ws: f'export WORKFLOW_SCOPE="{SECRET}"\n'
                                              f'export WORKFLOW_DESCRIPTION="{SECRET}"\n',
    ".claude/baton.toml": lambda ws: f'[workflow]\nrunner = "{SECRET}"\n',
    "pyproject.toml": lambda ws: f'[tool.baton.workflow]\nrunner = "{SECRET}"\n',
    ".claude/agents/research-specialist.md": lambda ws: f"---\nname: {SECRET}\ndescription: "
                                                      f"{SECRET}\n---\n{SECRET}\n",
    KEY: lambda ws: SECRET,
}

FOLLOW = """
import logging, sys
from pathlib import Path
from baton_lsp.runs.follow import RunIndex
logging.basicConfig(level=logging.WARNING)
view = RunIndex(Path(sys.argv[1])).view("atk")
for step in view.steps.values():
    print(step.id, view.agent_report(step), [e.record.error_message for e in view.errors])
"""
"""What the editor shows of workflow atk (`RunIndex`: each step's errors, an agent's last
words from its log when it printed no signal), with the follower's warnings on stderr."""

COMMANDS = [
    ("status",), ("status", "--json"), ("status", "atk"), ("status", "atk", "--json"),
    ("checkpoints", "atk"), ("resume", "atk", "--dry-run"), ("cancel", "atk"),
    ("status", "bash:implement_demo_20261120_101010"),  # looks up adoptions: each 000001
    FOLLOWER := ("<the editor's follower>",),
    ("resume", "atk", "--events"),
    ("run", "Look at caching", "--scope", "research-only", "--complexity", "1", "--id", "new",
     "--events"),
]
"""Readers first, then the writers (a resume changes the run's history)."""

WHY = {"fifo": ("not a regular file",),
       "symlink": ("symbolic link", "outside the workspace")}


@pytest.fixture
def failed_run(ws: Workspace, tmp_path: Path) -> tuple[Workspace, dict[str, str]]:
    """Workflow `atk` failed in research (resumable), a bash-system checkpoint beside it
    (so status looks up adoptions, reading every run's first checkpoint), and a data
    directory of this test's own for the key."""
    env = {"BATON_DATA_DIR": str(tmp_path / "data")}
    ws.behave({"research.*": {"exit": 1}})
    r = ws.baton("run", "Look at logging", "--scope", "research-only", "--complexity", "1",
                 "--id", "atk", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    ws.behave({})
    bash = ws.root / ".claude/data/checkpoints/implement_demo_20261120_101010.json"
    bash.write_text(json.dumps(bash_checkpoint("plan.md")))
    return ws, env


def plant(ws: Workspace, env: dict[str, str], rel: str, kind: str, outside: Path) -> Path:
    path = Path(env["BATON_DATA_DIR"]) / "checkpoint.key" if rel == KEY else ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "symlink":
        path.symlink_to(outside)
    else:
        os.mkfifo(path)
    return path


CASES = [(rel, kind) for rel in PATHS for kind in ("fifo", "symlink")
         if not (rel == KEY and kind == "symlink")]


@pytest.mark.parametrize(("rel", "kind"), CASES)
def test_a_planted_file_is_named_never_waited_on_nor_read(
        failed_run: tuple[Workspace, dict[str, str]], tmp_path: Path, rel: str, kind: str
        ) -> None:
    ws, env = failed_run
    outside = tmp_path / "outside" / "file"
    outside.parent.mkdir()
    content = PATHS[rel](ws)
    outside.write_text(content)
    planted = plant(ws, env, rel, kind, outside)
    outputs: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}
    for args in COMMANDS:
        # a hang is subprocess.TimeoutExpired here (the process is killed), not forever
        r = subprocess.run([sys.executable, "-c", FOLLOW, str(ws.root)], capture_output=True,
                           text=True, timeout=120, env={**os.environ, **env}) \
            if args == FOLLOWER else ws.baton(*args, timeout=120, env=env)
        out = r.stdout + r.stderr
        outputs[args] = r
        assert "Traceback" not in out and "internal error" not in out.lower(), (args, out)
        assert SECRET not in out, (args, out)
        assert r.returncode in (0, 1, 2), (args, r.returncode, out)
    every = "\n".join(r.stdout + r.stderr for r in outputs.values())
    named = [line for line in every.splitlines()
             if planted.name in line and any(w in line for w in WHY[kind])]
    assert named, every
    assert outside.read_text() == content  # nothing wrote through the link either
    if rel.startswith(f"{CKPT}/0000"):
        # as for a corrupt checkpoint: the newest good one is still what status shows
        # and what the resume starts from
        before = outputs[("status", "atk", "--json")]
        assert json.loads(before.stdout)["status"] == "failed", before.stdout
        dry = outputs[("resume", "atk", "--dry-run")]
        assert dry.returncode == 0 and "from checkpoint 7" in dry.stdout, dry.stdout
        assert outputs[("resume", "atk", "--events")].returncode == 0
    if rel not in (".claude/baton.toml", "pyproject.toml"):
        listed = json.loads(outputs[("status", "--json")].stdout)
        assert "atk" in {row["workflow_id"] for row in listed}, listed


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_read_bytes_holds_its_limit_while_reading() -> None:
    """The size is checked at the open and again while reading: a file that says 0 bytes
    at the `fstat` and then yields more (one growing after the open; /proc's files, which
    report 0 and hold about a kilobyte, are a real one) is refused once it passes the
    limit, never read whole."""
    from baton_lsp.runs import confine

    root = Path("/proc/self")
    assert os.stat(root / "status").st_size == 0
    assert len(confine.read_bytes(root, "status")) > 200
    with pytest.raises(confine.UnsafePath, match="grew past 100 bytes"):
        confine.read_bytes(root, "status", 100)


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_cancel_of_a_running_workflow_names_a_planted_run_json(
        ws: Workspace, tmp_path: Path, kind: str) -> None:
    """While an engine runs (its agent hangs), its `run.json` is replaced by a FIFO or a
    link to a file outside naming a pid: `baton cancel` neither blocks nor trusts it — it
    names the file, signals nothing (exit 1) and the engine runs on; with the engine's own
    record back, the same cancel stops it."""
    ws.behave({"research.1": {"hang": True}})
    run = ws.popen("run", "Research", "--scope", "research-only", "--complexity", "1",
                   "--id", "live")
    try:
        run.wait_event(agent_started("research.1"), timeout=120)
        owner = ws.root / ".claude/data/checkpoints/live/run.json"
        record = owner.read_bytes()
        outside = tmp_path / "outside.json"
        outside.write_text(json.dumps({"pid": os.getpid(), SECRET: SECRET}))
        owner.unlink()
        if kind == "fifo":
            os.mkfifo(owner)
        else:
            owner.symlink_to(outside)
        r = ws.baton("cancel", "live", timeout=120)
        out = r.stdout + r.stderr
        assert r.returncode == 1, out
        assert "Traceback" not in out and SECRET not in out, out
        assert any("run.json" in line and any(w in line for w in WHY[kind])
                   for line in out.splitlines()), out
        assert run.returncode is None and run.proc.poll() is None, out
        owner.unlink()
        owner.write_bytes(record)
        r = ws.baton("cancel", "live", timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert run.wait(120) is not None
    finally:  # the engine's own SIGTERM handling stops its agent's group too
        if run.proc.poll() is None:
            run.proc.send_signal(signal.SIGTERM)
            try:
                run.proc.wait(60)
            except subprocess.TimeoutExpired:
                run.proc.kill()
                run.proc.wait(30)


def test_a_checkpoints_directory_linked_out_of_the_workspace_is_not_listed(
        failed_run: tuple[Workspace, dict[str, str]], tmp_path: Path) -> None:
    """`.claude/data/checkpoints` as a link to a directory outside holding a workflow
    whose very name is the secret: no command lists (or reads) it; status names the link."""
    ws, env = failed_run
    here = ws.root / ".claude/data/checkpoints"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (here / "atk").rename(outside / SECRET)
    (here / "atk").mkdir()  # nothing of atk stays in the workspace: only the link
    here.rename(tmp_path / "kept")
    here.symlink_to(outside)
    every = []
    for args in [("status",), ("status", "--json"), ("checkpoints", "atk"),
                 ("status", "atk")]:
        r = ws.baton(*args, timeout=120, env=env)
        out = r.stdout + r.stderr
        every.append(out)
        assert "Traceback" not in out and r.returncode in (0, 1, 2), (args, out)
        assert SECRET not in out, (args, out)
    assert json.loads(ws.baton("status", "--json", env=env).stdout) == [], every
    assert any("checkpoints" in line and "symbolic link" in line
               for out in every for line in out.splitlines()), every
