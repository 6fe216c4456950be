"""Writes confined to the workspace (`runs/confine.py`), on real files and real links: links
inside the workspace are followed, links leaving it are refused naming them, a link in place
of a replaced file is replaced, hard links and FIFOs are never written through."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from baton_lsp.runs import confine
from baton_lsp.runs.confine import UnsafePath


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    return Path(os.path.realpath(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    return out


def test_directories_and_files_are_created_inside(ws: Path) -> None:
    path = ws / ".claude" / "data" / "checkpoints" / "w" / "000001.json"
    confine.write_atomic(ws, path, b"{}\n")
    assert path.read_bytes() == b"{}\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["000001.json"]  # no temp file left
    confine.write_atomic(ws, path, b"{\"a\":1}\n")  # replaced
    assert path.read_bytes() == b"{\"a\":1}\n"


@pytest.mark.parametrize("planted", [".claude", ".claude/data", ".claude/data/logs"])
def test_a_link_leaving_the_workspace_is_refused_naming_it(ws: Path, outside: Path,
                                                           planted: str) -> None:
    link = ws / planted
    if link.exists():
        link.rmdir()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    for write in (lambda p: confine.write_atomic(ws, p, b"x"),
                  lambda p: confine.makedirs(ws, p.parent),
                  lambda p: confine.write_new(ws, p, b"x")):
        with pytest.raises(UnsafePath) as info:
            write(ws / ".claude" / "data" / "logs" / "errors.jsonl")
        assert planted in str(info.value) and str(outside) in str(info.value)
        assert "symbolic link" in str(info.value)
    assert list(outside.iterdir()) == []


def test_links_inside_the_workspace_are_followed(ws: Path) -> None:
    (ws / ".claude" / "specs").mkdir()
    (ws / "specs").symlink_to(".claude/specs")  # relative
    (ws / "abs").symlink_to(ws / ".claude")  # absolute, inside
    confine.write_atomic(ws, ws / "specs" / "001_x" / "reports" / "r.md", b"r")
    confine.write_atomic(ws, ws / "abs" / "tmp" / "s.sh", b"s")
    assert (ws / ".claude" / "specs" / "001_x" / "reports" / "r.md").read_bytes() == b"r"
    assert (ws / ".claude" / "tmp" / "s.sh").read_bytes() == b"s"


def test_dot_dot_out_of_the_workspace_is_refused(ws: Path, outside: Path) -> None:
    (ws / "up").symlink_to("../outside")
    with pytest.raises(UnsafePath, match="up"):
        confine.write_atomic(ws, ws / "up" / "x", b"x")
    with pytest.raises(UnsafePath, match="outside the workspace"):
        confine.write_atomic(ws, ws / ".." / "outside" / "x", b"x")
    (ws / "loop").symlink_to("loop")
    with pytest.raises(UnsafePath, match="too many symbolic links"):
        confine.makedirs(ws, ws / "loop" / "x")
    assert list(outside.iterdir()) == []


def test_a_link_in_place_of_a_replaced_file_is_replaced(ws: Path, outside: Path) -> None:
    bashrc = outside / ".bashrc"
    bashrc.write_text("mine\n")
    state = ws / ".claude" / "tmp" / "workflow_x.sh"
    state.parent.mkdir()
    state.symlink_to(bashrc)
    confine.write_atomic(ws, state, b"export X=1\n", durable=False)
    assert bashrc.read_text() == "mine\n" and not state.is_symlink()
    log = ws / ".claude" / "x.log"
    log.symlink_to(bashrc)
    confine.write_new(ws, log, b"log\n")
    assert bashrc.read_text() == "mine\n" and log.read_bytes() == b"log\n"


def test_append_follows_inside_refuses_outside_hard_links_and_fifos(ws: Path,
                                                                    outside: Path) -> None:
    logs = ws / ".claude" / "data" / "logs"
    logs.mkdir(parents=True)
    real = ws / ".claude" / "errors-real.jsonl"
    (logs / "errors.jsonl").symlink_to(real)
    with confine.open_append(ws, logs / "errors.jsonl") as fd:
        os.write(fd, b"one\n")
    assert real.read_bytes() == b"one\n"
    bashrc = outside / ".bashrc"
    bashrc.write_text("mine\n")
    (logs / "errors.jsonl").unlink()
    (logs / "errors.jsonl").symlink_to(bashrc)
    with pytest.raises(UnsafePath, match="symbolic link"), \
            confine.open_append(ws, logs / "errors.jsonl"):
        pass
    (logs / "errors.jsonl").unlink()
    os.link(bashrc, logs / "errors.jsonl")
    with pytest.raises(UnsafePath, match="2 hard links"), \
            confine.open_append(ws, logs / "errors.jsonl"):
        pass
    assert bashrc.read_text() == "mine\n"
    (logs / "errors.jsonl").unlink()
    os.mkfifo(logs / "errors.jsonl")
    with pytest.raises(UnsafePath, match="not a regular file"), \
            confine.open_append(ws, logs / "errors.jsonl"):
        pass


def test_a_new_file_replaces_a_hard_link_instead_of_writing_through_it(
        ws: Path, outside: Path) -> None:
    other = outside / "other"
    other.write_text("theirs\n")
    log = ws / ".claude" / "a.log"
    os.link(other, log)
    confine.write_new(ws, log, b"ours\n")
    assert other.read_text() == "theirs\n" and log.read_text() == "ours\n"


def test_a_file_in_the_way_of_a_directory(ws: Path) -> None:
    (ws / ".claude" / "data").write_text("")
    with pytest.raises(NotADirectoryError):
        confine.makedirs(ws, ws / ".claude" / "data" / "logs")


def test_check_dir_refuses_only_a_leaving_link(ws: Path, outside: Path) -> None:
    confine.check_dir(ws, ws / ".claude" / "worktrees")  # absent: fine, nothing created
    assert not (ws / ".claude" / "worktrees").exists()
    (ws / ".claude" / "worktrees").symlink_to(outside)
    with pytest.raises(UnsafePath, match=r"\.claude/worktrees"):
        confine.check_dir(ws, ws / ".claude" / "worktrees")


def test_read_bytes_refuses_a_leaving_link_and_never_blocks_on_a_fifo(ws: Path,
                                                                       outside: Path) -> None:
    secret = outside / "id_rsa"
    secret.write_text("key")
    data = ws / ".claude" / "data"
    data.mkdir()
    (data / "run.json").write_text("{}")
    (data / "inside.json").symlink_to("run.json")
    assert confine.read_bytes(ws, data / "inside.json") == b"{}"  # a link inside: followed
    (data / "out.json").symlink_to(secret)
    with pytest.raises(UnsafePath, match=r"refusing to read through \.claude/data/out\.json"):
        confine.read_bytes(ws, data / "out.json")
    os.mkfifo(data / "fifo.json")  # no writer: a blocking open would never return
    with pytest.raises(UnsafePath, match="not a regular file"):
        confine.read_bytes(ws, data / "fifo.json")
    with pytest.raises(UnsafePath, match="more than 1"):
        confine.read_bytes(ws, data / "run.json", limit=1)


def test_an_own_lock_is_never_a_link_nor_in_a_linked_directory(ws: Path) -> None:
    runs = ws / ".claude" / "data" / "checkpoints"
    live = runs / "live" / "lock"
    os.close(confine.open_lock(ws, live, own=True))
    (runs / "a").mkdir()
    (runs / "a" / "lock").symlink_to("../live/lock")  # inside the workspace, still refused
    with pytest.raises(UnsafePath, match=r"checkpoints/a/lock as a lock: it is a symbolic"):
        confine.open_lock(ws, runs / "a" / "lock", os.O_RDONLY, own=True)
    os.close(confine.open_lock(ws, runs / "a" / "lock", os.O_RDONLY))  # not own: followed
    (runs / "b").symlink_to("live")
    with pytest.raises(UnsafePath, match=r"checkpoints/b: it is a symbolic link to live"):
        confine.open_lock(ws, runs / "b" / "lock", own=True)
    (runs / "c").mkdir()
    os.mkfifo(runs / "c" / "lock")
    with pytest.raises(UnsafePath, match="not a regular file"):
        confine.open_lock(ws, runs / "c" / "lock", own=True)


def test_concurrent_makedirs_of_one_tree(ws: Path) -> None:
    errors: list[BaseException] = []

    def make() -> None:
        try:
            confine.makedirs(ws, ws / "specs" / "001_x" / "debug")
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and (ws / "specs" / "001_x" / "debug").is_dir()


def test_outside_judges_paths_read_back(ws: Path, outside: Path) -> None:
    assert confine.outside(ws, ws / "specs" / "x.md") is None
    assert confine.outside(ws, "specs/x.md") is None
    assert "outside the workspace" in (confine.outside(ws, outside / "plan.md") or "")
    assert "outside the workspace" in (confine.outside(ws, ws / ".." / "x") or "")
    (ws / "specs").symlink_to(outside)
    assert "resolves to" in (confine.outside(ws, ws / "specs" / "x.md") or "")


def test_disk_errors_are_described_in_words() -> None:
    assert "disk is full" in confine.describe(OSError(errno.ENOSPC, "x", "/a/b"))
    assert "/a/b" in confine.describe(OSError(errno.ENOSPC, "x", "/a/b"))
    assert "read-only" in confine.describe(OSError(errno.EROFS, "x"))
    assert "quota" in confine.describe(OSError(errno.EDQUOT, "x"))
    assert "file size limit" in confine.describe(OSError(errno.EFBIG, "x"))
    assert confine.is_disk_fault(OSError(errno.ENOSPC, "x"))
    assert not confine.is_disk_fault(UnsafePath("refused"))
    assert not confine.is_disk_fault(OSError(errno.ENOENT, "x"))
