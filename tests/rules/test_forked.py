"""The forked check (`rules/forked.py`): the same findings as one process, every file checked
once however the processes are paced, a copy that dies or is interrupted, its stderr, its
cache entries and looks, and the spawned pool where fork cannot be used."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Range, Severity
from baton_lsp.rules import forked
from baton_lsp.rules.cache import ResultCache
from baton_lsp.rules.checker import check_paths
from baton_lsp.rules.forked import FORK_MIN_FILES, can_fork, check_forked, segments_of
from baton_lsp.rules.replay import Target

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                                reason="no forked check here (macOS, Windows)")

ITEMS = 40


def _finding(n: int) -> Finding:
    return Finding(code="TST001", rule="test", severity=Severity.WARNING, message=str(n),
                   path=f"/f{n:03}", range=Range.of_line(0))


def _noted(log: Path) -> list[tuple[int, int]]:
    """(pid, item) per check call, in the order written."""
    return [(int(a), int(b)) for a, b in (line.split() for line in
                                          log.read_text().splitlines())]


TIMEOUT = 30.0
"""How long a test waits for a notification from another process before it fails."""


def _wait(fd: int, timeout: float = TIMEOUT) -> bool:
    """Whether `fd` (the read end of a notification pipe) became readable in time."""
    return bool(select.select([fd], [], [], timeout)[0])


def _take(fd: int, count: int) -> bytes:
    """`count` notification bytes from `fd`; fails the test when they do not come in time."""
    got = b""
    while len(got) < count:
        assert _wait(fd), f"waited {TIMEOUT} s for a notification from another process"
        got += os.read(fd, count - len(got))
    return got


def _note(log: Path, n: int) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{os.getpid()} {n}\n".encode())  # O_APPEND: whole lines from any process
    os.close(fd)


def test_a_slow_copy_is_helped_and_every_item_is_checked_once(tmp_path: Path) -> None:
    """A copy on a busy core (here: held on a gate until the parent has checked all but one
    file) does not hold the check up: the parent finishes its own run, then takes the
    copy's files from its pipe; no file twice."""
    log = tmp_path / "log"
    parent = os.getpid()
    gate_r, gate_w = os.pipe()
    items = list(range(ITEMS))
    half = ITEMS // 2
    mine = {"n": 0}

    def check(some: Sequence[int]) -> list[Finding]:
        for n in some:
            _note(log, n)
            if os.getpid() != parent:
                assert _wait(gate_r)  # the copy's core is busy until the gate opens
            else:
                mine["n"] += 1
                if mine["n"] == ITEMS - 1:  # the copy can hold one file at most
                    os.write(gate_w, b"x")
        return [_finding(n) for n in some]

    try:
        found = check_forked(items, [items[:half], items[half:]], check, None)
    finally:
        os.close(gate_r)
        os.close(gate_w)
    assert sorted(int(f.message) for f in found) == items
    noted = _noted(log)
    assert sorted(n for _, n in noted) == items
    assert len([n for pid, n in noted if pid == parent]) > half + 5, noted


def test_runs_longer_than_a_pipe_holds_are_checked_without_sharing(tmp_path: Path) -> None:
    """A run of file numbers a pipe cannot hold (no reader yet: the write would block for
    ever) is not shared out: each process checks its own run, every file once."""
    seen = tmp_path / "seen"
    parent = os.getpid()
    items = list(range(40_000))  # 160 KB of numbers a run: more than a Linux pipe holds

    def check(some: Sequence[int]) -> list[Finding]:
        if os.getpid() != parent and some[0] % 5000 == 0:
            fd = os.open(seen, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, f"{some[0]}\n".encode())
            os.close(fd)
        return [_finding(n) for n in some] if some[0] % 1000 == 0 else []

    found = check_forked(items, [items[:20_000], items[20_000:]], check, None)
    assert sorted(int(f.message) for f in found) == list(range(0, 40_000, 1000))
    assert sorted(int(n) for n in seen.read_text().split()) == [20_000, 25_000, 30_000,
                                                                35_000]


def test_a_copy_killed_midway_has_its_files_checked_here(tmp_path: Path) -> None:
    """A copy killed after three files (SIGKILL: no payload, no exit code 0): every file is
    still checked and reported exactly once, the ones it took by the parent."""
    log = tmp_path / "log"
    parent = os.getpid()
    took_r, took_w = os.pipe()
    items = list(range(ITEMS))
    calls = {"n": 0}

    def check(some: Sequence[int]) -> list[Finding]:
        for n in some:
            _note(log, n)
            calls["n"] += 1
            if os.getpid() != parent:
                os.write(took_w, b"x")
                if calls["n"] == 3:
                    os.kill(os.getpid(), signal.SIGKILL)
            elif calls["n"] == 1:
                _take(took_r, 3)  # the copy has taken three files and died
        return [_finding(n) for n in some]

    try:
        found = check_forked(items, [items[:10], items[10:]], check, None)
    finally:
        os.close(took_r)
        os.close(took_w)
    assert sorted(int(f.message) for f in found) == items
    noted = _noted(log)
    by_copy = [n for pid, n in noted if pid != parent]
    assert len(by_copy) == 3 and all((parent, n) in noted for n in by_copy)


def test_an_interrupted_check_leaves_no_copy_behind() -> None:
    """Ctrl-C in the parent while copies check: the copies are killed and reaped, never
    left running or as zombies."""
    parent = os.getpid()
    pids_r, pids_w = os.pipe()
    never_r, never_w = os.pipe()  # nothing is ever written: a copy busy for TIMEOUT
    copies: list[int] = []

    def check(some: Sequence[int]) -> list[Finding]:
        if os.getpid() != parent:
            os.write(pids_w, os.getpid().to_bytes(4, "little"))
            _wait(never_r)
            return []
        got = _take(pids_r, 8)  # both copies are checking
        copies.extend(int.from_bytes(got[i:i + 4], "little") for i in (0, 4))
        raise KeyboardInterrupt

    items = list(range(6))
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            check_forked(items, [items[:2], items[2:4], items[4:]], check, None)
    finally:
        for fd in (pids_r, pids_w, never_r, never_w):
            os.close(fd)
    assert time.monotonic() - started < TIMEOUT - 5  # killed, not waited for
    assert len(copies) == 2
    for pid in copies:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # already reaped: not our child any more
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


_KILLED_PARENT = """
import os, select, sys
from baton_lsp.rules.forked import check_forked
log, took, gate, never = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
parent = os.getpid()
def check(items):
    if os.getpid() == parent:
        select.select([never], [], [], 30)  # busy until killed
        return []
    with open(log, "a") as f:
        f.write(f"{items[0]}\\n")
    os.write(took, b"x")
    select.select([gate], [], [], 30)  # the copy's file takes until the gate opens
    return []
items = list(range(200))
check_forked(items, [items[:100], items[100:]], check, None)
"""


def test_copies_of_a_killed_check_stop_at_their_next_file(tmp_path: Path) -> None:
    """`baton check` killed (SIGKILL: no handler runs) while its copy has a hundred files
    left: the copy stops at its next file instead of checking on for nobody."""
    log = tmp_path / "log"
    took_r, took_w = os.pipe()
    gate_r, gate_w = os.pipe()
    never_r, never_w = os.pipe()
    life_r, life_w = os.pipe()  # held open by the check and its copy: EOF once both are gone
    fds = (took_w, gate_r, never_r, life_w)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT, str(log),
                             *(str(fd) for fd in fds[:3])], pass_fds=fds)
    try:
        for fd in fds:
            os.close(fd)
        _take(took_r, 1)  # the copy is checking its first file
    finally:
        proc.kill()
        proc.wait()
    os.write(gate_w, b"x")  # its file is done: the next one is where it must stop
    assert _wait(life_r), "the copy went on checking after its parent was killed"
    assert os.read(life_r, 1) == b""
    for fd in (took_r, gate_w, never_w, life_r):
        os.close(fd)
    assert len(log.read_text().split()) == 1, log.read_text()


def test_a_copy_s_stderr_follows_the_parent_s(tmp_path: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    """What a copy writes to stderr (a failing rule's log line) is written by the parent
    after its own, whole, never interleaved with it line by line."""
    parent = os.getpid()

    wrote_r, wrote_w = os.pipe()

    def check(items: Sequence[int]) -> list[Finding]:
        who = "parent" if os.getpid() == parent else "copy"
        for n in items:
            os.write(2, f"{who} {n}\n".encode())
            if who == "copy":
                os.write(wrote_w, b"x")
            elif n == 0:
                _take(wrote_r, 1)  # the copy has checked (and written) at least one file
        return [_finding(n) for n in items]

    items = list(range(ITEMS))
    try:
        check_forked(items, [items[:20], items[20:]], check, None)
    finally:
        os.close(wrote_r)
        os.close(wrote_w)
    lines = capfd.readouterr().err.splitlines()
    assert sorted(int(line.split()[1]) for line in lines) == items
    whos = [line.split()[0] for line in lines]
    assert "copy" in whos and whos == sorted(whos, key=lambda w: w == "copy")


def test_a_busy_machine_gets_no_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every core busy with other processes: a copy would only take turns with its parent
    (and load its own rules), so the check stays in one process; `--jobs` still decides."""
    monkeypatch.setattr(forked.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(forked, "usable_cores", lambda: 2)
    for busy, copies in ((0, 2), (1, 1), (2, 1), (7, 1)):
        monkeypatch.setattr(forked, "busy_cores", lambda busy=busy: busy)
        assert forked.copies_for(134, None) == copies
    assert forked.copies_for(FORK_MIN_FILES - 1, None) == 1
    assert forked.copies_for(134, 3) == 3


def test_busy_cores_reads_this_machine() -> None:
    assert 0 <= forked.busy_cores() < 10_000


def test_segments_keep_kinds_together_and_balance_cost() -> None:
    """Runs of equal cost, one kind split at most at each cut, costliest first in a run, and
    the parent's run with its kinds in reverse (what a copy takes from it is next to its
    own)."""
    costs = [5, 1, 1, 9, 2, 2, 2, 3, 3, 8, 1, 1]
    ranks = [0, 1, 2, 0, 1, 2, 1, 2, 1, 0, 1, 2]
    runs = segments_of(costs, ranks, 2)
    assert sorted(n for run in runs for n in run) == list(range(len(costs)))
    loads = [sum(costs[n] for n in run) for run in runs]
    assert abs(loads[0] - loads[1]) <= max(costs)
    kinds_in = [{ranks[n] for n in run} for run in runs]
    assert len(kinds_in[0] & kinds_in[1]) <= 1
    assert [ranks[n] for n in runs[0]] == sorted((ranks[n] for n in runs[0]), reverse=True)
    assert [ranks[n] for n in runs[1]] == sorted(ranks[n] for n in runs[1])
    for run in runs:
        for rank in {ranks[n] for n in run}:
            group = [costs[n] for n in run if ranks[n] == rank]
            assert group == sorted(group, reverse=True)


def _hostile_tree(root: Path, hostile: bool = True) -> Path:
    """A workspace of more files than `FORK_MIN_FILES`, with cross-file findings and (with
    `hostile`) the inputs a check must survive: a FIFO, a link out of the workspace, binary
    and non-UTF-8 files, broken front matter."""
    claude = root / ".claude"
    for n in range(FORK_MIN_FILES):
        plan = claude / "specs" / f"{n:03}_f" / "plans" / f"{n:03}-plan.md"
        plan.parent.mkdir(parents=True)
        plan.write_text(f"# Plan {n}\n\n### Phase 1: A\n\n- [ ] a\n\n### Phase 2: B "
                        f"[COMPLETE]\n\n**Dependencies**: [{n % 4}]\n\n- [ ] b\n",
                        encoding="utf-8")
    agents = claude / "agents"
    agents.mkdir()
    for n in range(6):
        (agents / f"a{n}.md").write_text(
            f"---\nname: a{n % 3}\ndescription: An agent.\ntools: Read, Frob\n---\n\n# A\n",
            encoding="utf-8")
    commands = claude / "commands"
    commands.mkdir()
    for n in range(4):
        (commands / f"c{n}.md").write_text(
            "---\ndescription: C\nallowed-tools: Bash\n---\n\n```bash\nsource "
            f".claude/lib/missing{n}.sh\necho ${{ARGUMENTS}}\nif [ \"$X\" = {n} ]\n  echo "
            "no-then\nfi\n```\n\nTask {\n  "
            "subagent_type: nobody\n}\n", encoding="utf-8")
    if not hostile:
        return root
    (agents / "broken.md").write_text("---\nname: [x\n---\n# B\n", encoding="utf-8")
    (agents / "binary.md").write_bytes(b"\x00\x01\xff---\n")
    (agents / "latin.md").write_bytes(b"---\nname: caf\xe9\ndescription: x\n---\n")
    os.mkfifo(commands / "fifo.md")
    outside = root.parent / f"{root.name}-outside.md"
    outside.write_text("# secret\n", encoding="utf-8")
    (agents / "leak.md").symlink_to(outside)
    return root


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    flags = [] if "--shellcheck" in args else ["--no-shellcheck"]
    return subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "json",
                           *flags, *args], capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.parametrize("shellcheck", ["off", "all"])
def test_a_hostile_tree_forked_finds_what_one_process_finds(tmp_path: Path,
                                                           shellcheck: str) -> None:
    """With ShellCheck on, its commands stay in the parent (their blocks go to ShellCheck
    first) while the copies check the rest: the same findings either way."""
    root = _hostile_tree(tmp_path / "ws")
    flags = ["--shellcheck", shellcheck] if shellcheck != "off" else []
    one = _check(*flags, "--no-cache", "--jobs", "1", str(root))
    auto = _check(*flags, "--no-cache", str(root))
    three = _check(*flags, "--no-cache", "--jobs", "3", str(root))
    assert one.returncode == 1 and "Traceback" not in one.stderr, one.stderr
    findings = json.loads(one.stdout)
    assert {f["code"] for f in findings} >= {"BTN400", "BTN211", "BTN319"}
    assert any(f["code"] == "BTN330" for f in findings) == (shellcheck == "all")
    for other in (auto, three):
        assert other.returncode == one.returncode
        assert json.loads(other.stdout) == findings
        assert other.stderr == one.stderr


def test_the_corpus_forked_finds_what_one_process_finds(corpus: Path) -> None:
    one = _check("--no-cache", "--jobs", "1", str(corpus))
    two = _check("--no-cache", "--jobs", "2", str(corpus))  # forked even on a busy machine
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout and one.stderr == two.stderr


def _targets(targets: list[Target]) -> list[tuple[object, ...]]:
    return sorted((t.path, t.kind, t.root, sorted(t.inputs), sorted(t.trees),
                   json.dumps(t.findings, sort_keys=True), t.expires) for t in targets)


def test_a_forked_check_s_cache_and_reads_are_one_process_s(tmp_path: Path) -> None:
    """The copies' cache entries are saved by the parent (a second check finds every file
    there) and the paths they looked at are in the check's reads, as in one process."""
    root = _hostile_tree(tmp_path / "ws", hostile=False)
    serial_cache = ResultCache(tmp_path / "c1", strict=False)
    serial = check_paths([root], {"shellcheck": "off"}, jobs=1, cache=serial_cache)
    forked_cache = ResultCache(tmp_path / "c2", strict=False)
    forked = check_paths([root], {"shellcheck": "off"}, jobs=2, cache=forked_cache)
    assert forked.findings == serial.findings
    assert serial.reads is not None, "the check in one process recorded no reads"
    assert forked.reads is not None, "the forked check recorded no reads"
    assert sorted(set(forked.reads.shape)) == sorted(set(serial.reads.shape))
    assert _targets(forked.reads.targets) == _targets(serial.reads.targets)
    again = ResultCache(tmp_path / "c2", strict=False)
    second = check_paths([root], {"shellcheck": "off"}, jobs=2, cache=again)
    assert second.findings == serial.findings
    assert again.stats() == (second.files, 0)


def test_the_pool_checks_where_fork_cannot(tmp_path: Path) -> None:
    """With another thread running a fork is unsafe: `--jobs 2` uses the spawned pool, which
    finds the same."""
    root = _hostile_tree(tmp_path / "ws")
    serial = check_paths([root], {"shellcheck": "off"}, jobs=1)
    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait, daemon=True)
    waiter.start()
    try:
        assert not can_fork()
        pooled = check_paths([root], {"shellcheck": "off"}, jobs=2)
    finally:
        stop.set()
        waiter.join()
    assert pooled.findings == serial.findings
