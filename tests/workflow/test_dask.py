"""Agent steps on a real Dask cluster on 127.0.0.1: a scheduler and two `baton worker`
processes (one cluster for the module), the offline scripted agents, real SIGKILL, real
cancel. No timing: steps wait on files the tests create, tests wait on events."""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.workflow.process import group_alive
from tests.workflow.conftest import Workspace, agent_started, make_ws

pytestmark = [pytest.mark.dask, pytest.mark.skipif(
    find_spec("distributed") is None,
    reason="Dask is not installed (pip install 'baton-lsp[dask]')")]

READY = 120.0  # generous: a loaded 2-core machine starts Python processes slowly


class Cluster:
    """A scheduler (allowed-failures 0, as Baton's own) and `baton worker` processes."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
                    "BATON_WORKER_DIR": str(tmp / "worker-dir")}
        self.scheduler = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
             "127.0.0.1", "--port", "0", "--no-dashboard", "--dashboard-address",
             "127.0.0.1:0"], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.address = self._scheduler_address(tmp / "scheduler.log")
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        for name in ("w1", "w2"):
            self.start_worker(name)
        self.wait_workers(2)

    def _scheduler_address(self, log: Path) -> str:
        """The address the scheduler logs once it listens ("Scheduler at: tcp://…"), read
        from its stderr as it comes; a thread then copies the rest into `log`."""
        assert self.scheduler.stderr is not None
        stream, seen = self.scheduler.stderr, b""
        while True:
            ready, _, _ = select.select([stream], [], [], READY)
            line = stream.readline() if ready else b""
            seen += line
            assert line, f"the scheduler never listened: {seen.decode()[-2000:]}"
            if b"Scheduler at:" in line:
                break

        def drain() -> None:
            with open(log, "wb") as out:
                out.write(seen)
                for rest in stream:
                    out.write(rest)

        threading.Thread(target=drain, daemon=True).start()
        return line.decode().split("Scheduler at:", 1)[1].strip()

    def start_worker(self, name: str) -> None:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115
        self.workers[name] = subprocess.Popen(
            [sys.executable, "-m", "baton_lsp", "worker", self.address, "--name", name,
             "--local-directory", str(self.tmp / name), "--version-timeout", "5"],
            env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()

    def info(self) -> dict[str, Any]:
        from distributed import Client

        with Client(self.address, timeout=READY) as client:
            return dict(client.scheduler_info(n_workers=-1)["workers"])

    def wait_workers(self, n: int) -> dict[str, Any]:
        """Until `n` workers have joined (the scheduler tells the client: no polling)."""
        from distributed import Client

        with Client(self.address, timeout=READY) as client:
            client.wait_for_workers(n, timeout=READY)
            return dict(client.scheduler_info(n_workers=-1)["workers"])

    def revive(self) -> None:
        """Restart a worker a test killed: every test starts with two."""
        for name, proc in list(self.workers.items()):
            if proc.poll() is not None:
                self.start_worker(name)
        self.wait_workers(2)

    def close(self) -> None:
        for proc in [*self.workers.values(), self.scheduler]:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.workers.values(), self.scheduler]:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("dask"))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def dws(tmp_path: Path, cluster: Cluster) -> Workspace:
    cluster.revive()
    ws = make_ws(tmp_path)
    ws.config(f'executor = "dask"\n\n[workflow.dask]\nscheduler = "{cluster.address}"\n')
    return ws


def agents_of(wid: str, step: str, attempt: int) -> list[int]:
    """Live agent processes of a step's attempt (by the contract in their environment)."""
    wanted = {f"BATON_WORKFLOW_ID={wid}".encode(), f"BATON_STEP_ID={step}".encode(),
              f"BATON_ATTEMPT={attempt}".encode()}
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = set(Path(f"/proc/{name}/environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if wanted <= env and group_alive(int(name)):
            found.append(int(name))
    return found


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[1])


def steps(ws: Workspace, wid: str) -> dict[str, Any]:
    return dict(ws.status(wid)["steps"])


def started_id(run: Any) -> str:
    event = run.wait_event(lambda e: e.get("event") == "checkpoint", READY)
    return str(event["workflow_id"])


# == what needs no cluster =======================================================================

def test_check_and_the_language_server_never_import_dask(tmp_path: Path) -> None:
    """`distributed` is the Dask executor's own import: a check, the server's modules and
    a local run's engine load neither it nor dask."""
    root = make_ws(tmp_path).root
    probe = ("import sys\nfrom baton_lsp.cli.main import main\n"
             "main(['check', '--no-cache', '--no-shellcheck', sys.argv[1]])\n"
             "import baton_lsp.lsp.server, baton_lsp.workflow.engine, baton_lsp.cli.workflow\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('distributed', 'dask')))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


@pytest.mark.parametrize("address", ["tcp://10.1.2.3:8786", "tcp://example.org:8786",
                                     "tcp://0.0.0.0:8786"])
def test_plain_tcp_to_another_host_is_refused_before_anything_is_written(
        tmp_path: Path, address: str) -> None:
    ws = make_ws(tmp_path)
    ws.config(f'executor = "dask"\n\n[workflow.dask]\nscheduler = "{address}"\n')
    r = ws.baton("run", "research caching", "--scope", "research-only")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "plain tcp:// is refused" in r.stderr and "Traceback" not in r.stderr
    assert not (ws.root / ".claude" / "data" / "checkpoints").exists()


@pytest.mark.parametrize(("address", "said"), [
    ("tcp://10.1.2.3:8786", "plain tcp:// is refused"),
    ("local:2", "needs a scheduler address, not local:N"),
    ("http://127.0.0.1:8786", "expected `local:N`, `tls://host:port`")])
def test_baton_worker_refuses_a_bad_address_clearly(address: str, said: str) -> None:
    r = subprocess.run([sys.executable, "-m", "baton_lsp", "worker", address],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_state_whose_changes_would_stay_on_the_worker_is_refused(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    ws.config('executor = "dask"\n\n[workflow.dask]\nscheduler = "local:1"\n'
              'remote-states = ["research", "debug"]\n')
    r = ws.baton("run", "research caching", "--scope", "research-only")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "remote-states: debug cannot run on a worker" in r.stderr
    assert not (ws.root / ".claude" / "data" / "checkpoints").exists()


def test_no_api_key_of_the_caller_is_in_a_task_payload(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The launch environment a runner builds holds the caller's whole environment; the
    pickled task carries the contract and the runner's own variables only."""
    import cloudpickle

    from baton_lsp.model.config import DaskSettings
    from baton_lsp.workflow.executors import StepLaunch
    from baton_lsp.workflow.executors.dask import DaskExecutor
    from baton_lsp.workflow.runners.base import Invocation
    from baton_lsp.workflow.runners.claude import ClaudeRunner

    secrets = {"ANTHROPIC_API_KEY": "sk-ant-caller-secret-1", "OPENAI_API_KEY":
               "sk-openai-caller-secret-2", "GEMINI_API_KEY": "gemini-caller-secret-3",
               "MY_SERVICE_API_KEY": "service-caller-secret-4"}
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    root = make_ws(tmp_path).root
    artifact = root / "specs" / "001_x" / "reports" / "001_x.md"
    contract = {"BATON_WORKFLOW_ID": "wf_1", "BATON_STEP_ID": "research.1",
                "BATON_ARTIFACT_PATH": str(artifact), "BATON_WORKSPACE": str(root),
                "CLAUDE_PROJECT_DIR": str(root), "WORKFLOW_ID": "wf_1",
                "STATE_FILE": str(root / ".claude" / "tmp" / "workflow_wf_1.sh")}
    launch = ClaudeRunner().launch(Invocation(step_id="research.1", role="research",
                                              prompt="research it", contract=contract,
                                              cwd=root))
    assert launch.env["ANTHROPIC_API_KEY"] == secrets["ANTHROPIC_API_KEY"]  # the caller's
    executor = DaskExecutor(DaskSettings(scheduler="tcp://127.0.0.1:1"), root, print)
    payload, _ = executor.payload(StepLaunch(
        workflow_id="wf_1", sid="research.1", state="research", attempt=1, runner="claude",
        root=root, cwd=root, artifact=artifact, argv=launch.argv, env=launch.env,
        stdin=launch.stdin, contract=contract, timeout=60, stall_timeout=60, grace=1),
        "key-1")
    data = cloudpickle.dumps(payload) + pickle.dumps(payload)
    for value in secrets.values():
        assert value.encode() not in data
    assert payload.env["BATON_STEP_ID"] == "research.1"
    assert "PATH" not in payload.env and "HOME" not in payload.env


# == on the cluster ==============================================================================

def test_research_runs_on_the_workers_and_status_names_them(dws: Workspace,
                                                            cluster: Cluster) -> None:
    r = dws.baton("run", "research caching", "--scope", "research-only", "--complexity", "2",
                  timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wid = dws.only_workflow()
    addresses = set(cluster.info())
    done = steps(dws, wid)
    for sid in ("research.1", "research.2"):
        assert done[sid]["status"] == "done" and done[sid]["worker"] in addresses, done[sid]
        text = Path(done[sid]["artifact"]).read_text()
        assert text.startswith("---\nreport_type: codebase analysis")
    text = dws.baton("status", wid).stdout
    assert f"on {done['research.1']['worker']}" in text
    # the agent's lines came back with the workspace's paths, not the worker's
    log = (dws.root / ".claude" / "data" / "checkpoints" / wid / "logs" /
           "research.1.attempt-1.log").read_text()
    assert f"REPORT_CREATED: {done['research.1']['artifact']}" in log


def test_cancel_stops_the_agent_on_its_worker(dws: Workspace, tmp_path: Path) -> None:
    dws.behave({"research.1": {"until": str(tmp_path / "never")}})
    run = dws.popen("run", "research caching", "--scope", "research-only", "--complexity", "1")
    wid = started_id(run)
    run.wait_event(agent_started("research.1"), READY)
    agents = agents_of(wid, "research.1", 1)
    assert len(agents) == 1
    r = dws.baton("cancel", wid, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert run.wait(120) == 130
    assert not group_alive(agents[0])
    assert steps(dws, wid)["research.1"]["status"] == "cancelled"


def test_sigkill_of_a_worker_mid_step_gives_exactly_one_more_attempt(
        dws: Workspace, cluster: Cluster, tmp_path: Path) -> None:
    """The worker running research.2 is SIGKILLed while its agent waits: the step runs once
    more (on the other worker), research.1 (done) is not run again, and the agent the dead
    worker left behind (its own session) is stopped by the next attempt's sweep."""
    gate = tmp_path / "gate"
    dws.behave({"research.2": {"until": str(gate)}})
    run = dws.popen("run", "research caching", "--scope", "research-only", "--complexity", "2")
    wid = started_id(run)
    run.wait_event(lambda e: e.get("event") == "step" and e.get("step") == "research.1"
                   and e.get("status") == "done", READY)
    run.wait_event(agent_started("research.2"), READY)
    [orphan] = agents_of(wid, "research.2", 1)
    worker = parent_of(orphan)
    assert worker in {p.pid for p in cluster.workers.values()}
    os.kill(worker, signal.SIGKILL)
    run.wait_event(lambda e: e.get("event") == "signal" and e.get("step") == "research.2"
                   and "(attempt 2)" in str(e.get("value")), READY)
    assert not group_alive(orphan)  # swept before attempt 2's agent started
    gate.write_text("go")
    assert run.wait(READY) == 0, run.stderr.read()[-3000:]
    done = steps(dws, wid)
    assert done["research.1"]["attempts"] == 1
    assert done["research.2"]["attempts"] == 2 and done["research.2"]["status"] == "done"
    # attempt 1 on the worker killed (Dask's KilledWorker names it), attempt 2 on one alive
    killed = done["research.2"]["workers"]["1"]
    assert set(done["research.2"]["workers"]) == {"1", "2"}
    assert killed not in cluster.info() and done["research.2"]["worker"] in cluster.info()
    errors = [e for e in dws.errors() if e.get("context", {}).get("worker_lost")]
    assert len(errors) == 1 and errors[0]["context"]["failure_class"] == "transient"
    assert errors[0]["context"]["worker"] == killed


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
def test_a_tls_cluster_with_throw_away_certificates_runs_steps(tmp_path: Path) -> None:
    """`local:1` with TLS files: Baton's own scheduler and `baton worker` speak tls:// with
    one throw-away self-signed certificate for every role, as `Security.temporary()` makes
    (made here with openssl: `temporary` needs the cryptography package)."""
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=dask-internal", "-addext", "subjectAltName=DNS:dask-internal",
                    "-keyout", str(certs / "key.pem"), "-out", str(certs / "cert.pem")],
                   check=True, capture_output=True, timeout=120)
    ws = make_ws(tmp_path)
    cert, key = certs / "cert.pem", certs / "key.pem"
    ws.config(f'executor = "dask"\n\n[workflow.dask]\nscheduler = "local:1"\n'
              f'ca = "{cert}"\ncert = "{cert}"\nkey = "{key}"\n')
    r = ws.baton("run", "research caching", "--scope", "research-only", "--complexity", "1",
                 timeout=300, env={"BATON_WORKER_DIR": str(tmp_path / "worker-dir")})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    step = steps(ws, ws.only_workflow())["research.1"]
    assert step["status"] == "done" and step["worker"].startswith("tls://127.0.0.1:")
    # half the TLS files, or tls:// without them: said before anything runs
    ws.config('executor = "dask"\n\n[workflow.dask]\nscheduler = "tls://127.0.0.1:8786"\n')
    r = ws.baton("run", "research caching", "--scope", "research-only")
    assert r.returncode == 2 and "tls:// needs ca, cert and key" in r.stderr, r.stderr


def test_a_full_implementation_through_dask_makes_the_local_history(
        tmp_path: Path, cluster: Cluster) -> None:
    """The same request in two copies of one repository, once locally and once with
    research and implement on the cluster (parallel phases 2 and 3 shipped as git bundles):
    the same first-parent history, message for message and tree for tree."""
    from tests.workflow.ship_harness import git, make_repo
    from tests.workflow.test_shipping import history

    cluster.revive()
    results = {}
    for where in ("local", "dask"):
        root = tmp_path / where
        root.mkdir()
        make_repo(root, [[]], files={"README.md": "# app\n"})
        ws = Workspace(Path(os.path.realpath(root)))
        ws.config(f'executor = "dask"\n\n[workflow.dask]\nscheduler = "{cluster.address}"\n'
                  'remote-states = ["research", "plan", "implement"]\n')
        git(root, "commit", "-qam", "the cluster's configuration")  # the same in both
        r = ws.baton("run", "add a login throttle", "--scope", "full-implementation",
                     "--complexity", "2", "--id", "full_implementation_1_dask",
                     "--set", f"workflow.executor={where}", timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        done = steps(ws, "full_implementation_1_dask")
        results[where] = (history(ws.root)[:-2], done)  # minus the two base commits
    (local, lsteps), (remote, rsteps) = results["local"], results["dask"]
    assert len(local) >= 4 and local == remote
    phases = [s for s in rsteps if s.startswith("implement.phase-")]
    assert len(phases) == 4
    addresses = set(cluster.info())
    for sid in [*phases, "research.1", "research.2", "plan"]:
        assert rsteps[sid]["worker"] in addresses and "worker" not in lsteps[sid], sid
    assert "worker" not in rsteps["document"]  # not a remote state: ran here
    # the editor names the worker too: each phase's lens on the plan (and the Workflows
    # view's step rows, which carry the same field: client-vscode/test/treeModel.test.ts)
    from baton_lsp.lsp.code_lens import _phase_command
    from baton_lsp.runs.follow import read_view

    view = read_view(Path(os.path.realpath(tmp_path / "dask")), "full_implementation_1_dask")
    for sid in phases:
        title = _phase_command(view, sid.removeprefix("implement.phase-")).title
        assert title.startswith("✓ done in") and title.endswith(
            " · on " + rsteps[sid]["worker"].split("://", 1)[1]), title


def test_the_real_claude_cli_runs_a_step_on_a_worker_with_the_workers_key(
        tmp_path: Path, cluster: Cluster) -> None:
    """A research step through the real `claude` binary on a worker that offers `claude`
    (its own key and API endpoint, the fake model); the caller has no key and no endpoint
    (its preflight leaves the remote roles' credentials to the workers; the debug role it
    would check runs the scripted agent here): every request carried the worker's key."""
    from tests.agents.clis import cli_path
    from tests.agents.fake_anthropic import FakeAnthropic
    from tests.agents.model import anthropic_agent
    from tests.agents.workspace import Box

    cluster.revive()
    claude = cli_path("claude")
    quiet = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
             "CLAUDE_CODE_MAX_RETRIES": "1"}
    box = Box.create(tmp_path, "claude", claude, **quiet)
    box.env.pop("ANTHROPIC_API_KEY", None)
    with FakeAnthropic(anthropic_agent()) as api:
        env = {**box.env, "ANTHROPIC_API_KEY": "worker-key", "ANTHROPIC_BASE_URL": api.url,
               "BATON_WORKER_DIR": str(tmp_path / "worker-dir")}
        log = tmp_path / "claude-worker.log"
        with open(log, "wb") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "baton_lsp", "worker", cluster.address, "--name",
                 "claude-worker", "--local-directory", str(tmp_path / "cw")],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            joined = cluster.wait_workers(3)  # the two of the module and this one
            assert any(w.get("resources", {}).get("claude") for w in joined.values()), \
                log.read_text()[-3000:]
            with open(box.ws / ".claude" / "baton.toml", "a") as f:
                f.write('debug = { agent = "research-specialist", runner = "script" }\n\n'
                        f'[workflow.dask]\nscheduler = "{cluster.address}"\n'
                        'remote-states = ["research"]\n')
            box.settings = ("workflow.executor=dask",)
            r = box.run("Research rate limiting", "--scope", "research-only",
                        "--topic", "rate limiting")  # settled: no classifier agent here
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        step = box.steps()["research.1"]
        assert step["status"] == "done" and step["worker"], step
        keys = {req.headers.get("x-api-key") or req.headers.get("X-Api-Key")
                for req in api.requests if req.path.startswith("/v1/messages")}
    assert keys == {"worker-key"}


def test_sigkill_of_baton_run_stops_its_agent_on_the_worker_and_resume_keeps_finished_steps(
        dws: Workspace, cluster: Cluster, tmp_path: Path) -> None:
    """`baton run` SIGKILLed while research.2 runs on a worker: the scheduler drops the dead
    client's task and the worker stops its agent (Dask cannot interrupt a task; the worker
    checks) long before any timeout would; the resume runs research.2 once more and keeps
    research.1 as it was."""
    dws.config(f'timeout = 3600\nstall-timeout = 3600\nexecutor = "dask"\n\n[workflow.dask]\n'
               f'scheduler = "{cluster.address}"\n')
    gate = tmp_path / "gate"
    dws.behave({"research.2": {"until": str(gate)}})
    run = dws.popen("run", "research caching", "--scope", "research-only", "--complexity", "2")
    wid = started_id(run)
    run.wait_event(lambda e: e.get("event") == "step" and e.get("step") == "research.1"
                   and e.get("status") == "done", READY)
    run.wait_event(agent_started("research.2"), READY)
    [agent] = agents_of(wid, "research.2", 1)
    os.kill(run.pid, signal.SIGKILL)
    run.wait(READY)
    with contextlib.suppress(ProcessLookupError):  # gone already: nothing to wait for
        fd = os.pidfd_open(agent)  # readable once the agent has exited: an event, no poll
        try:
            assert select.select([fd], [], [], READY)[0], \
                "the dead engine's agent still runs on the worker"
        finally:
            os.close(fd)
    assert not group_alive(agent)
    before = steps(dws, wid)["research.1"]
    gate.write_text("go")
    r = dws.baton("resume", wid, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    after = steps(dws, wid)
    assert after["research.1"] == before and after["research.2"]["status"] == "done"


def test_a_runner_no_worker_offers_fails_the_step_at_once(tmp_path: Path,
                                                        cluster: Cluster) -> None:
    """The workers offer `script` and `command` only (no agent CLI is logged in on them):
    a claude step is refused with the fix named, instead of waiting in the scheduler for a
    worker that never comes."""
    import asyncio

    from baton_lsp.model.config import DaskSettings
    from baton_lsp.workflow.executors import StepLaunch
    from baton_lsp.workflow.executors.dask import DaskExecutor
    from baton_lsp.workflow.process import AgentLaunchError

    cluster.revive()
    assert not any(w.get("resources", {}).get("claude") for w in cluster.info().values())
    root = make_ws(tmp_path).root
    executor = DaskExecutor(DaskSettings(scheduler=cluster.address), root, print)
    launch = StepLaunch(workflow_id="wf_1", sid="research.1", state="research", attempt=1,
                        runner="claude", root=root, cwd=root, artifact=root / "r.md",
                        argv=["claude", "-p"], env={}, stdin=None, contract={},
                        timeout=60, stall_timeout=60, grace=1, remote=True)

    async def attempt() -> None:
        try:
            await executor.execute(launch, on_line=print, on_start=print,
                                   cancel=asyncio.Event(), stop=asyncio.Event())
        finally:
            await executor.close()

    with pytest.raises(AgentLaunchError, match=r"no worker of the Dask cluster .* offers "
                       r"`claude`"):
        asyncio.run(asyncio.wait_for(attempt(), READY))


def test_a_scheduler_that_would_rerun_a_task_is_warned_about(tmp_path: Path) -> None:
    """Connecting to a scheduler Baton did not start: its `allowed-failures` is asked, and a
    value above 0 (Dask's default is 3: a task whose workers die is run again elsewhere, a
    paid agent twice) is named with the setting that fixes it."""
    import asyncio

    from distributed import Scheduler

    from baton_lsp.model.config import DaskSettings
    from baton_lsp.workflow.executors.dask import DaskExecutor

    said: list[str] = []

    async def connect() -> None:
        async with Scheduler(host="127.0.0.1", port=0, dashboard_address="127.0.0.1:0",
                             allowed_failures=3) as scheduler:
            executor = DaskExecutor(DaskSettings(scheduler=str(scheduler.address)),
                                    tmp_path, said.append)
            try:
                await executor.client()
            finally:
                await executor.close()

    asyncio.run(asyncio.wait_for(connect(), READY))
    assert any("lets 3 worker(s) die" in line and "allowed-failures: 0" in line
               for line in said), said


def test_a_revise_step_on_a_worker_edits_the_plan_it_is_given(dws: Workspace,
                                                              cluster: Cluster) -> None:
    dws.config(f'executor = "dask"\n\n[workflow.dask]\nscheduler = "{cluster.address}"\n'
               'remote-states = ["research", "plan"]\n')
    plan = dws.write_plan([[], [1]])
    before = plan.read_text()
    r = dws.baton("run", "add rate limits", "--scope", "research-and-revise", "--plan",
                  str(plan), "--complexity", "1", timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    done = steps(dws, dws.only_workflow())
    revised = [done[sid] for sid in done if sid.startswith(("plan", "revise"))]
    assert revised and all(s.get("worker") in cluster.info() for s in revised), done
    text = plan.read_text()
    assert text.startswith(before.rstrip("\n")) and "## Revision" in text


def test_workers_fetch_the_base_from_the_repositorys_remote_when_configured(
        tmp_path: Path, cluster: Cluster) -> None:
    """`[workflow.dask] remote = "origin"`: the phases' bundles hold only what the remote
    lacks, the workers fetch the rest there; parallel phases land and merge as usual."""
    from tests.workflow.ship_harness import git, make_repo

    cluster.revive()
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[], []])
    ws = Workspace(Path(os.path.realpath(root)))
    ws.config(f'executor = "dask"\n\n[workflow.dask]\nscheduler = "{cluster.address}"\n'
              'remote = "origin"\n')
    git(root, "commit", "-qam", "the cluster's configuration")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "-q", "origin", "main")
    r = ws.baton("run", "implement it", "--scope", "implement-only", "--plan", str(plan),
                 timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    done = steps(ws, ws.only_workflow())
    for pid in ("1", "2"):
        assert done[f"implement.phase-{pid}"]["worker"] in cluster.info()
        assert git(root, "show", f"HEAD:src/phase_{pid}.py").startswith('"""Phase')
    merges = git(root, "log", "--first-parent", "--format=%s").splitlines()[:2]
    assert all(m.startswith("Merge phase") for m in merges), merges
