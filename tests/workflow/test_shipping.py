"""Phases shipped to another machine as git bundles and brought back as branches (issue 36):
real git, real files, the engine's own functions (`initialize`, `prepare`, `ship`,
`landing`, `agent_step`, `merge_wave`) on a real workflow record; the worker's side runs
`shipping` in a directory outside the workspace, as a worker machine would. No cluster:
the executor that carries the bytes is tested with Dask on its own."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from baton_lsp.model.plan import STARTED
from baton_lsp.model.states import RunStatus, State
from baton_lsp.runs.record import PhaseGit
from baton_lsp.workflow import shipping
from baton_lsp.workflow.agent_step import StepSpec, agent_step
from baton_lsp.workflow.failures import PERMANENT, StepFailure
from baton_lsp.workflow.isolation import Isolation
from baton_lsp.workflow.run import Run
from baton_lsp.workflow.states.implement import (
    commit_message,
    landing,
    mark_plan,
    merge_wave,
    prepare,
    ship,
    state_in_tree,
)
from tests.workflow.ship_harness import (
    PLAN,
    done_step,
    git,
    land_record,
    make_repo,
    open_run,
    phase_inputs,
    resume_run,
    shipped_worker,
    summary_of,
    work,
)

WID = "wf"
REPO = Path(__file__).resolve().parents[2]


def titles(n: int) -> dict[str, str]:
    return {str(i): f"Step {i}" for i in range(1, n + 1)}


def history(root: Path) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The first-parent line as (message, tree, [(message, tree) of each parent]): what
    must not depend on where a phase ran (commit ids do: times and machines differ)."""
    out = []
    for sha in git(root, "rev-list", "--first-parent", "HEAD").split():
        parents = git(root, "show", "-s", "--format=%P", sha).split()
        out.append((git(root, "show", "-s", "--format=%B", sha),
                    git(root, "show", "-s", "--format=%T", sha).strip(),
                    [(git(root, "show", "-s", "--format=%B", p),
                      git(root, "show", "-s", "--format=%T", p).strip()) for p in parents]))
    return out


def run_waves(run: Run, iso: Isolation, plan: Path, waves: list[list[str]], shipped: bool,
              workers: Path, files: dict[str, dict[str, str]] | None = None
              ) -> StepFailure | None:
    """The implement state's waves, each phase run by the scripted change either in its
    local worktree (`open_tree` … `commit_tree`) or shipped (`ship` … `landing`, the
    phases of a wave on their workers at once), then merged by `merge_wave`. A shipped
    phase's worker also gets the plan as the caller's tree holds it (its `[IN PROGRESS]`
    markers), as an executor ships a step's input files."""
    names = titles(sum(len(w) for w in waves))
    prepare(run, iso, plan, names)
    workers.mkdir(exist_ok=True)
    for todo in waves:
        base = iso.repo.head()
        assert base is not None
        for pid in todo:
            mark_plan(run, plan, pid, STARTED)
        records: dict[str, PhaseGit] = {}
        if shipped:
            shipments = {pid: ship(run, iso, pid, names[pid], base, phase_inputs(run, plan, pid))
                         for pid in todo}
            errors: list[BaseException] = []
            start = threading.Barrier(len(todo))
            shipped_plan = {str(plan.relative_to(run.root)): plan.read_text()}
            threads = [threading.Thread(target=remote, args=(
                iso, shipments[p], workers / p, p, {**shipped_plan, **(files or {}).get(p, {})},
                start, records, errors)) for p in todo]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
        else:
            for pid in todo:
                sid = f"implement.phase-{pid}"
                tree = iso.open_tree(sid, pid, base)
                state_in_tree(run, tree)
                work(tree.cwd, pid, (files or {}).get(pid))
                records[pid] = iso.commit_tree(sid, tree, commit_message(
                    run, pid, names[pid], "in its own worktree"))
        for pid in todo:
            run.steps[f"implement.phase-{pid}"] = done_step(records[pid])
        with iso.integrating_now("implement", "merging"):
            conflict, landed = merge_wave(run, iso, todo, names, plan)
        iso.discard(landed)
        if conflict is not None:
            return conflict
    return None


def remote(iso: Isolation, shipment: shipping.Shipment, into: Path, pid: str,
           files: dict[str, str] | None, start: threading.Barrier,
           records: dict[str, PhaseGit], errors: list[BaseException]) -> None:
    """One shipped phase as its executor thread carries it: all of a wave's phases start
    together, their worker sides and landings at once."""
    try:
        start.wait(60)
        shipment.receive(shipped_worker(shipment, into, pid, files))
        records[pid] = land_record(iso, pid, shipment)
    except BaseException as exc:
        errors.append(exc)


def pair(tmp_path: Path, deps: list[list[int]], files: dict[str, str] | None = None,
         plan_at: str = PLAN, below: str = "") -> dict[str, tuple[Run, Isolation, Path]]:
    """The same repository twice (same content, same workflow id): one runs its phases
    locally, the other ships them; the workspace is the repository's top, or `below` it."""
    out = {}
    for kind in ("local", "shipped"):
        top = tmp_path / kind / "ws"
        root = top / below if below else top
        root.mkdir(parents=True)
        plan = make_repo(root, deps, files, plan_at, top=top)
        run, iso = open_run(root, WID, plan)
        out[kind] = (run, iso, plan)
    return out


def outside_snapshot(tmp_path: Path, *inside: Path) -> dict[str, tuple[int, int]]:
    """Every file under tmp_path but the given trees, with size and mtime: what must not
    change when nothing may be written outside them."""
    skip = [str(p) for p in inside]
    found = {}
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        dirnames[:] = [d for d in dirnames
                       if not any(os.path.join(dirpath, d).startswith(s) for s in skip)]
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            found[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return found


def test_a_shipped_phase_lands_as_a_local_one(tmp_path: Path) -> None:
    """Two parallel phases, then one after both: shipped (base bundle → checkout outside
    the repository → change → bundle_branch → land_bundle → merge_wave) gives the same tree
    and the same first-parent history as in local worktrees."""
    runs = pair(tmp_path, [[], [], [1, 2]], {"src/shared.py": "value = 0\n"})
    for kind, (run, iso, plan) in runs.items():
        assert run_waves(run, iso, plan, [["1", "2"], ["3"]], kind == "shipped",
                         tmp_path / "workers") is None
    local, shipped = (runs[k][1].repo.top for k in ("local", "shipped"))
    assert history(shipped) == history(local)
    assert [m.splitlines()[0] for m, _, _ in history(shipped)] == [
        f"Merge phase 3: Step 3 ({WID})", f"Merge phase 2: Step 2 ({WID})",
        f"Merge phase 1: Step 1 ({WID})", "base"]
    assert git(shipped, "rev-parse", "HEAD^{tree}") == git(local, "rev-parse", "HEAD^{tree}")
    run = runs["shipped"][0]
    for pid in "123":
        record = run.steps[f"implement.phase-{pid}"].git
        assert record is not None
        assert record.status == "merged" and record.worktree is None
        # the phase's commit holds its module only: Baton's own places stayed out
        assert git(shipped, "show", "--name-only", "--format=", str(record.commit)).split() == [
            f"src/phase_{pid}.py"]
        assert record.shipped is not None and Path(record.shipped["bundle"]).is_file()
    # wave 2 was checked out from the commit holding wave 1 (its base bundle's)
    third, second = (run.steps[f"implement.phase-{p}"].git for p in "32")
    assert third is not None and second is not None and third.base == second.merged
    # no branch, no worktree, no scratch repository left; the user's tree clean
    assert git(shipped, "branch", "--list", "baton/*") == ""
    assert git(shipped, "status", "--porcelain", "--untracked-files=no") == ""
    assert not list((run.store.dir / "bundles").glob(".check-*"))  # type: ignore[union-attr]
    assert not list(Path(shipped).glob("refs/baton/*"))
    assert git(shipped, "for-each-ref", "refs/baton/") == ""


def test_a_workspace_below_the_repository_top_ships_as_it_runs_locally(
        tmp_path: Path) -> None:
    """The workspace two directories below the top: the worker's agent works in the same
    place of its checkout, Baton's places there stay out, the history is the local one."""
    runs = pair(tmp_path, [[], []], below="apps/web")
    for kind, (run, iso, plan) in runs.items():
        assert str(iso.prefix) == "apps/web"
        assert run_waves(run, iso, plan, [["1", "2"]], kind == "shipped",
                         tmp_path / "workers") is None
    local, shipped = (runs[k][1].repo.top for k in ("local", "shipped"))
    assert history(shipped) == history(local)
    commit = str(runs["shipped"][0].steps["implement.phase-1"].git.commit)  # type: ignore[union-attr]
    assert git(shipped, "show", "--name-only", "--format=", commit).split() == [
        "apps/web/src/phase_1.py"]


def test_a_tracked_plan_outside_the_topic_keeps_its_markers_out_of_shipped_commits(
        tmp_path: Path) -> None:
    """The plan tracked outside the topic directory: the worker's copy (with the caller's
    `[IN PROGRESS]` markers) is never committed by the phase — each merge commit carries
    its own `[COMPLETE]` marker edit, as for a local worktree."""
    runs = pair(tmp_path, [[], [], [1, 2]], plan_at="docs/feature/plan.md")
    for kind, (run, iso, plan) in runs.items():
        assert iso.plan == "docs/feature/plan.md" and iso.plan not in iso.own
        assert run_waves(run, iso, plan, [["1", "2"], ["3"]], kind == "shipped",
                         tmp_path / "workers") is None
    local, shipped = (runs[k][1].repo.top for k in ("local", "shipped"))
    assert history(shipped) == history(local)
    for pid in "123":
        commit = str(runs["shipped"][0].steps[f"implement.phase-{pid}"].git.commit)  # type: ignore[union-attr]
        assert git(shipped, "show", "--name-only", "--format=", commit).split() == [
            f"src/phase_{pid}.py"]
    assert "### Phase 3: Step 3 [COMPLETE]" in git(shipped, "show", "HEAD:docs/feature/plan.md")


def test_a_conflict_of_shipped_phases_is_btn506_as_locally(tmp_path: Path) -> None:
    runs = pair(tmp_path, [[], []], {"src/shared.py": "value = 0\n"})
    changes = {"1": {"src/shared.py": "value = 1\n"}, "2": {"src/shared.py": "value = 2\n"}}
    found: dict[str, StepFailure] = {}
    for kind, (run, iso, plan) in runs.items():
        failure = run_waves(run, iso, plan, [["1", "2"]], kind == "shipped",
                            tmp_path / "workers", changes)
        assert failure is not None
        found[kind] = failure
        # the run fails on it as `baton run` would, its lock released for the checker
        run.status = RunStatus.FAILED
        run.save("failed")
        assert run.store is not None
        run.store.release()
    assert found["shipped"].message == found["local"].message
    assert found["shipped"].context == found["local"].context
    assert found["shipped"].context["merge_conflict"] is True
    assert f"phase 2's branch baton/{WID}/phase-2 does not merge cleanly into main: " \
           "conflicts in src/shared.py" in found["shipped"].message
    btn506 = {}
    for kind, (_, iso, _) in runs.items():
        r = subprocess.run([sys.executable, "-m", "baton_lsp", "check", ".", "--format",
                            "json"], capture_output=True, text=True, check=False,
                           cwd=iso.repo.top)
        assert r.returncode in (0, 1), r.stderr
        btn506[kind] = [(f["filename"], f["location"]["line"], f["message"])
                        for f in json.loads(r.stdout) if f["code"] == "BTN506"]
    assert btn506["shipped"] == btn506["local"] and len(btn506["shipped"]) == 1
    assert "src/shared.py" in btn506["shipped"][0][2]


def test_landing_the_same_key_twice_imports_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    run, iso = open_run(root, WID, plan)
    base = iso.repo.head()
    assert base is not None
    shipment = ship(run, iso, "1", "Step 1", base, phase_inputs(run, plan, "1"))
    data = shipped_worker(shipment, tmp_path / "worker", "1")
    first = iso.land_bundle(shipment.sid, "1", data, shipment.key, base=base)
    again = iso.land_bundle(shipment.sid, "1", data, shipment.key, base=base)
    kept = iso.land_bundle(shipment.sid, "1", None, shipment.key, base=base)  # a resume's
    assert first == again == kept and first.status == "committed"
    branch = f"refs/heads/baton/{WID}/phase-1"
    # one import: one update of the branch in its reflog
    assert git(root, "reflog", "show", "--format=%H", branch).split() == [first.commit]
    assert Path((first.shipped or {})["bundle"]).read_bytes() == data
    assert sorted(p.name for p in Path((first.shipped or {})["bundle"]).parent.iterdir()) == [
        f"implement.phase-1-{shipment.key}.bundle"]


def test_a_later_attempts_bundle_is_the_one_landed(tmp_path: Path) -> None:
    """Attempt 1's worker returned a bundle, then the step failed its checks: attempt 2's
    bundle replaces it (`receive`), and a new attempt forgets the old one as it starts
    (`start_attempt`), so a resume never lands an older attempt's work."""
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    run, iso = open_run(root, WID, plan)
    base = iso.repo.head()
    assert base is not None
    shipment = ship(run, iso, "1", "Step 1", base, phase_inputs(run, plan, "1"))
    shipment.receive(shipped_worker(shipment, tmp_path / "attempt-1", "1",
                                    {"src/try.py": "attempt = 1\n"}))
    shipment.start_attempt()
    assert iso.kept_bundle(shipment.sid, shipment.key) is None and shipment.returned is None
    shipment.receive(shipped_worker(shipment, tmp_path / "attempt-2", "1",
                                    {"src/try.py": "attempt = 2\n"}))
    shipment.receive(shipped_worker(shipment, tmp_path / "attempt-3", "1",
                                    {"src/try.py": "attempt = 3\n"}))
    record = land_record(iso, "1", shipment)
    assert git(root, "show", f"{record.commit}:src/try.py") == "attempt = 3\n"
    resumed = iso.land_bundle(shipment.sid, "1", None, shipment.key, base=base)
    assert resumed.commit == record.commit


def test_what_a_killed_shipping_left_is_swept_on_resume(tmp_path: Path) -> None:
    """A run killed while the base ref existed or a throw-away repository was checking a
    bundle: the resume's `prepare` removes both (this workflow's only)."""
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    run, iso = open_run(root, WID, plan)
    base = iso.repo.head()
    assert base is not None and run.store is not None
    git(root, "update-ref", f"refs/baton/{WID}/base", base)
    git(root, "update-ref", "refs/baton/other/base", base)
    scratch = run.store.dir / "bundles" / ".check-0123456789ab"
    (scratch / "objects").mkdir(parents=True)
    kept = run.store.dir / "bundles" / "implement.phase-1-k.bundle"
    kept.write_bytes(b"# v2 git bundle\n")
    prepare(run, iso, plan, titles(1))
    assert git(root, "for-each-ref", "--format=%(refname)", "refs/baton/").split() == [
        "refs/baton/other/base"]
    assert not scratch.exists() and kept.exists()


def test_workers_fetching_from_the_remote_get_only_what_it_lacks(tmp_path: Path) -> None:
    """With the repository's remote: the worker fetches the pushed history from it and the
    bundle carries only the commits the remote lacks — nothing once the base is pushed."""
    remote = tmp_path / "remote.git"
    remote.mkdir()
    git(remote, "init", "-q", "--bare")
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[], [1]], {"lib/big.txt": os.urandom(30000).hex()})
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "origin", "main")
    (root / "local.txt").write_text("not pushed\n")
    git(root, "add", "local.txt")
    git(root, "commit", "-qm", "local only")
    run, iso = open_run(root, WID, plan)
    names = titles(2)
    prepare(run, iso, plan, names)
    base = iso.repo.head()
    assert base is not None
    shipment = ship(run, iso, "1", "Step 1", base, phase_inputs(run, plan, "1"), remote="origin")
    source = shipment.source()
    assert (source.remote, source.fetch) == (str(remote), ("refs/heads/main",))
    assert 0 < len(source.bundle) < len(iso.base_bundle(base)) // 4
    shipment.receive(shipped_worker(shipment, tmp_path / "worker-1", "1"))
    assert git(tmp_path / "worker-1", "rev-parse", "origin/main") == git(
        remote, "rev-parse", "main")
    run.steps[shipment.sid] = done_step(land_record(iso, "1", shipment))
    with iso.integrating_now("implement", "merging"):
        assert merge_wave(run, iso, ["1"], names, plan)[0] is None
    git(root, "push", "-q", "origin", "main")
    git(root, "fetch", "-q", "origin")
    base = iso.repo.head()
    assert base is not None
    second = ship(run, iso, "2", "Step 2", base, phase_inputs(run, plan, "2"), remote="origin")
    assert second.source() == shipping.BaseSource(b"", str(remote), ("refs/heads/main",))
    second.receive(shipped_worker(second, tmp_path / "worker-2", "2"))
    run.steps[second.sid] = done_step(land_record(iso, "2", second))
    with iso.integrating_now("implement", "merging"):
        assert merge_wave(run, iso, ["2"], names, plan)[0] is None
    assert git(root, "log", "--first-parent", "--format=%s").splitlines() == [
        f"Merge phase 2: Step 2 ({WID})", f"Merge phase 1: Step 1 ({WID})", "local only",
        "base"]
    assert sorted(git(root, "ls-files", "src").split()) == ["src/phase_1.py", "src/phase_2.py"]
    # a worker that cannot reach that remote says so
    with pytest.raises(shipping.ShippingError, match="cannot check the base bundle out"):
        shipping.checkout_bundle(b"", base, second.branch, tmp_path / "worker-3",
                                 remote=str(tmp_path / "gone.git"), fetch=["refs/heads/main"])
    with pytest.raises(shipping.ShippingError, match="would read it as an option"):
        shipping.checkout_bundle(b"", base, second.branch, tmp_path / "worker-4",
                                 remote=f"--upload-pack=touch {tmp_path / 'owned'}",
                                 fetch=["refs/heads/main"])
    assert not (tmp_path / "owned").exists() and not (tmp_path / "worker-4").exists()


def test_a_phase_that_changed_nothing_lands_empty(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    run, iso = open_run(root, WID, plan)
    base = iso.repo.head()
    assert base is not None
    shipment = ship(run, iso, "1", "Step 1", base, phase_inputs(run, plan, "1"))
    tree = shipping.checkout_bundle(shipment.bundle(), base, shipment.branch,
                                    tmp_path / "worker")
    data = shipping.bundle_branch(tree, shipment.branch, base, shipment.message,
                                  exclude=shipment.exclude)
    record = iso.land_bundle(shipment.sid, "1", data, shipment.key, base=base)
    assert record.status == "empty" and record.commit is None


def wait_for(path: Path, proc: subprocess.Popen[bytes], deadline: float = 120.0) -> None:
    """Until the child says it wrote `path` (its "kept" line on stdout) or ends."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], deadline)
    line = proc.stdout.readline() if ready else b""
    if line.strip() != b"kept":
        raise AssertionError(f"the caller exited ({proc.poll()}) or never kept: "
                             f"{proc.stderr.read().decode() if proc.stderr else ''}")
    assert path.exists()


def test_a_bundle_kept_before_the_caller_is_killed_is_imported_on_resume(
        tmp_path: Path) -> None:
    """A real caller process keeps the worker's bundle, then is SIGKILLed before it imports
    or records anything; the resume's `agent_step` keeps the phase (its agent finished
    before the engine died) by landing the kept bundle: no agent runs again."""
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    mark = tmp_path / "kept"
    proc = subprocess.Popen([sys.executable, "-m", "tests.workflow.ship_harness", str(root),
                             WID, str(tmp_path / "worker"), str(mark)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        wait_for(mark, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(60)
    assert proc.returncode == -signal.SIGKILL
    branch = f"baton/{WID}/phase-1"
    assert git(root, "branch", "--list", branch) == ""  # killed before the import
    run, iso = resume_run(root, WID)
    sid = "implement.phase-1"
    assert sid in run.launched and sid not in run.steps
    prepare(run, iso, plan, titles(1))
    base = iso.repo.head()
    assert base is not None
    inputs = phase_inputs(run, plan, "1")
    shipment = ship(run, iso, "1", "Step 1", base, inputs)
    assert iso.kept_bundle(sid, shipment.key) is not None
    reader = asyncio.run(agent_step(run, StepSpec(
        sid, State.IMPLEMENT, "implement", summary_of(run, "1"), {"BATON_PHASE": "1"},
        inputs, fields=landing(iso, "1", shipment), shipment=shipment)))
    assert reader is not None
    step = run.steps[sid]
    assert step.status == "done" and step.kept
    assert step.git is not None and step.git.status == "committed"
    # the scripted agent never ran here: its journal does not exist
    assert not (root / ".claude" / "tmp" / "scripted_runs.log").exists()
    with iso.integrating_now("implement", "merging"):
        conflict, _ = merge_wave(run, iso, ["1"], titles(1), plan)
    assert conflict is None
    assert git(root, "log", "--first-parent", "--format=%s").splitlines() == [
        f"Merge phase 1: Step 1 ({WID})", "base"]
    assert git(root, "show", "HEAD:src/phase_1.py") == "PHASE = '1'\n"


def hostile_setup(tmp_path: Path) -> tuple[Isolation, shipping.Shipment, Path, str]:
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    run, iso = open_run(root, WID, plan)
    base = iso.repo.head()
    assert base is not None
    shipment = ship(run, iso, "1", "Step 1", base, phase_inputs(run, plan, "1"))
    tree = shipping.checkout_bundle(shipment.bundle(), base, shipment.branch,
                                    tmp_path / "worker")
    work(tree, "1")
    return iso, shipment, tree, base


def refused(iso: Isolation, shipment: shipping.Shipment, data: bytes | None, base: str,
            tmp_path: Path, *, tip: str | None = None) -> str:
    """Land `data`: a clear failure, no branch, the tip's objects not in the repository,
    no file outside the workspace and worker changed, no scratch repository left."""
    before = outside_snapshot(tmp_path, iso.repo.top, tmp_path / "worker")
    with pytest.raises(StepFailure) as caught:
        iso.land_bundle(shipment.sid, "1", data, shipment.key, base=base)
    assert caught.value.failure == PERMANENT
    assert caught.value.message.startswith(
        "phase 1's work returned from another machine cannot be landed: ")
    assert git(iso.repo.top, "for-each-ref", "refs/heads/baton/") == ""
    if tip is not None:
        found = subprocess.run(["git", "cat-file", "-e", tip], cwd=iso.repo.top,
                               capture_output=True, check=False)
        assert found.returncode != 0, "the rejected bundle's commit was imported"
    assert outside_snapshot(tmp_path, iso.repo.top, tmp_path / "worker") == before
    bundles = iso.bundle_path(shipment.sid, shipment.key).parent
    if bundles.is_dir() and not bundles.is_symlink():
        assert not list(bundles.glob(".check-*"))
    return caught.value.message


def test_a_bundle_with_an_extra_ref_is_refused(tmp_path: Path) -> None:
    iso, shipment, tree, base = hostile_setup(tmp_path)
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "work")
    git(tree, "branch", "extra")
    data = subprocess.run(["git", "bundle", "create", "-q", "-", f"{base}..{shipment.branch}",
                           f"{base}..extra"], cwd=tree, capture_output=True, check=True).stdout
    tip = git(tree, "rev-parse", "HEAD").strip()
    message = refused(iso, shipment, data, base, tmp_path, tip=tip)
    assert "refs/heads/extra" in message and f"exactly refs/heads/{shipment.branch} was " \
        "expected" in message
    # not kept: the same key may land a sound bundle later
    assert not iso.bundle_path(shipment.sid, shipment.key).exists()


def test_a_bundle_whose_tip_does_not_descend_from_the_base_is_refused(tmp_path: Path) -> None:
    iso, shipment, tree, base = hostile_setup(tmp_path)
    git(tree, "checkout", "-q", "--orphan", "elsewhere")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "unrelated history")
    git(tree, "branch", "-f", shipment.branch, "HEAD")
    data = subprocess.run(["git", "bundle", "create", "-q", "-", shipment.branch], cwd=tree,
                          capture_output=True, check=True).stdout
    tip = git(tree, "rev-parse", "HEAD").strip()
    message = refused(iso, shipment, data, base, tmp_path, tip=tip)
    assert f"does not descend from the phase's base {base}" in message
    assert not iso.bundle_path(shipment.sid, shipment.key).exists()


def test_a_truncated_bundle_is_refused(tmp_path: Path) -> None:
    iso, shipment, tree, base = hostile_setup(tmp_path)
    data = shipping.bundle_branch(tree, shipment.branch, base, shipment.message,
                                  exclude=shipment.exclude)
    tip = git(tree, "rev-parse", shipment.branch).strip()
    message = refused(iso, shipment, data[:-40], base, tmp_path, tip=tip)
    assert "cannot be read in full" in message  # `git bundle verify` alone passes it


def test_a_partial_bundle_is_refused(tmp_path: Path) -> None:
    iso, shipment, tree, base = hostile_setup(tmp_path)
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "work")
    data = subprocess.run(["git", "bundle", "create", "-q", "-", "--filter=blob:none",
                           f"{base}..{shipment.branch}"], cwd=tree, capture_output=True,
                          check=True).stdout
    message = refused(iso, shipment, data, base, tmp_path,
                      tip=git(tree, "rev-parse", "HEAD").strip())
    assert "it is a partial bundle (@filter=blob:none)" in message
    assert not iso.bundle_path(shipment.sid, shipment.key).exists()
    message = refused(iso, shipment, b"PK\x03\x04 a zip file", base, tmp_path)
    assert "does not start with a git bundle signature" in message


@pytest.mark.parametrize("planted", ["fifo", "symlink", "directory-link"])
def test_a_file_planted_at_the_bundle_path_is_refused(tmp_path: Path, planted: str) -> None:
    iso, shipment, tree, base = hostile_setup(tmp_path)
    data = shipping.bundle_branch(tree, shipment.branch, base, shipment.message,
                                  exclude=shipment.exclude)
    path = iso.bundle_path(shipment.sid, shipment.key)
    outside = tmp_path / "outside"
    outside.mkdir()
    if planted == "fifo":
        path.parent.mkdir(parents=True)
        os.mkfifo(path)
    elif planted == "symlink":
        path.parent.mkdir(parents=True)
        path.symlink_to(outside / "stolen.bundle")
    else:
        path.parent.symlink_to(outside)
    message = refused(iso, shipment, data, base, tmp_path,
                      tip=git(tree, "rev-parse", shipment.branch).strip())
    assert "refusing" in message
    if planted == "fifo":
        assert "a FIFO" in message and str(path) in message
    elif planted == "symlink":
        assert "symbolic link" in message and str(path) in message
    else:
        assert "leaves the workspace" in message or "outside" in message, message
    assert list(outside.iterdir()) == []
    assert os.path.lexists(path if planted != "directory-link" else path.parent)  # kept


def test_the_worker_never_follows_a_committed_link_out_of_its_tree(tmp_path: Path) -> None:
    """A base that commits a link to a directory outside the tree (and one where Baton's
    own files go): the agent's changes are staged as the link, nothing outside is read
    into the commit or written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    (root / "escape").symlink_to(outside)
    git(root, "add", "escape")
    git(root, "commit", "-qm", "a link out")
    run, iso = open_run(root, WID, plan)
    base = iso.repo.head()
    assert base is not None
    shipment = ship(run, iso, "1", "Step 1", base, phase_inputs(run, plan, "1"))
    before = outside_snapshot(tmp_path, root, tmp_path / "worker")
    tree = shipping.checkout_bundle(shipment.bundle(), base, shipment.branch,
                                    tmp_path / "worker")
    assert os.readlink(tree / "escape") == str(outside)
    work(tree, "1", {"notes.md": "done\n"})
    data = shipping.bundle_branch(tree, shipment.branch, base, shipment.message,
                                  exclude=shipment.exclude)
    record = iso.land_bundle(shipment.sid, "1", data, shipment.key, base=base)
    assert outside_snapshot(tmp_path, root, tmp_path / "worker") == before
    listing = git(root, "ls-tree", "-r", str(record.commit))
    assert "120000 blob" in next(ln for ln in listing.splitlines() if ln.endswith("\tescape"))
    assert "secret" not in listing
    assert sorted(git(root, "show", "--name-only", "--format=", str(record.commit)).split()) == [
        "notes.md", "src/phase_1.py"]


def test_worker_side_refusals_are_clear(tmp_path: Path) -> None:
    iso, shipment, tree, base = hostile_setup(tmp_path)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x\n")
    with pytest.raises(shipping.ShippingError, match="not an empty directory"):
        shipping.checkout_bundle(shipment.bundle(), base, shipment.branch, busy)
    other = "0" * 40
    with pytest.raises(shipping.ShippingError, match=f"does not hold the base commit {other}"):
        shipping.checkout_bundle(shipment.bundle(), other, shipment.branch,
                                 tmp_path / "fresh")
    with pytest.raises(shipping.ShippingError, match="cannot create"):
        shipping.checkout_bundle(shipment.bundle(), base, shipment.branch,
                                 tmp_path / "no-such-parent" / "tree")
    assert not (tmp_path / "no-such-parent").exists()
    # a tree whose `.git` is no longer the repository checkout_bundle made
    moved = tmp_path / "moved.git"
    os.rename(tree / ".git", moved)
    (tree / ".git").write_text(f"gitdir: {moved}\n")
    with pytest.raises(shipping.ShippingError, match="is not a directory"):
        shipping.bundle_branch(tree, shipment.branch, base, shipment.message)
    (tree / ".git").unlink()
    os.rename(moved, tree / ".git")
    (tree / "src" / "phase_1.py").write_text("<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n")
    with pytest.raises(shipping.ConflictMarkers) as caught:
        shipping.bundle_branch(tree, shipment.branch, base, shipment.message,
                               exclude=shipment.exclude)
    # as the executor brings it back from the worker (pickled), the step's fields fail
    shipment.fail(pickle.loads(pickle.dumps(caught.value)))
    with pytest.raises(StepFailure) as failed:
        land_record(iso, "1", shipment)
    assert failed.value.failure == PERMANENT and "phase 1 left conflict markers in " \
        "src/phase_1.py (its tree on the worker " in failed.value.message
    assert failed.value.context["conflict_markers"] == ["src/phase_1.py"]
