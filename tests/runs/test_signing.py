"""Checkpoints signed with a per-user key (HMAC-SHA256, `runs/signing.py`): the key made 0600
on first use in the data directory (`BATON_DATA_DIR` here, never the real one), a sound
checkpoint judged trusted, foreign, edited or unsigned — and still readable by its plain
checksum whatever the verdict."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.runs import signing
from baton_lsp.runs.store import PLACEHOLDER, CheckpointStore, Entry, verify_file
from tests.helpers import rewrite_checkpoint


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "keys"
    monkeypatch.setenv(signing.DATA_DIR_ENV, str(where))
    return where


def _doc() -> dict:
    return {"schema_version": "2.1", "status": "in_progress", "description": "x"}


def test_the_key_is_made_once_0600_in_the_data_dir(keys: Path) -> None:
    assert signing.user_key() is None  # reading makes nothing
    assert not keys.exists()
    key = signing.user_key(create=True)
    assert key is not None and len(key.id) == 16
    path = keys / signing.KEY_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert signing.user_key(create=True) == key


def test_processes_starting_at_once_share_one_key(keys: Path) -> None:
    code = ("from baton_lsp.runs.signing import user_key; print(user_key(create=True).id)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(6)]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and len(ids.pop()) == 16
    assert [p.name for p in keys.iterdir()] == [signing.KEY_FILE]  # no temp file left


def test_a_key_readable_by_others_is_tightened(keys: Path) -> None:
    key = signing.user_key(create=True)
    path = keys / signing.KEY_FILE
    path.chmod(0o644)
    signing.forget()
    assert signing.user_key() == key
    assert path.stat().st_mode & 0o777 == 0o600


def _save(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return CheckpointStore(tmp_path / "ws", "w").save(_doc(), "saved")


def _latest(tmp_path: Path) -> Entry:
    return CheckpointStore(tmp_path / "ws", "w").latest()


def test_own_checkpoints_are_trusted_and_checksummed(tmp_path: Path, keys: Path) -> None:
    path = _save(tmp_path)
    data, problem = verify_file(path)  # the plain checksum: readers without the key
    assert problem is None and data["baton"]["mac"].startswith("hmac-sha256:")
    entry = _latest(tmp_path)
    assert entry.trusted and entry.distrust is None


def test_another_users_key_makes_it_foreign(tmp_path: Path, keys: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _save(tmp_path)
    monkeypatch.setenv(signing.DATA_DIR_ENV, str(tmp_path / "elsewhere"))
    entry = _latest(tmp_path)
    assert entry.ok and entry.trust == signing.FOREIGN
    assert "another machine or by another user" in (entry.distrust or "")
    signing.user_key(create=True)  # a key of its own: still another one
    assert _latest(tmp_path).trust == signing.FOREIGN


def test_an_edit_with_a_recomputed_checksum_is_caught(tmp_path: Path, keys: Path) -> None:
    path = _save(tmp_path)
    rewrite_checkpoint(path, lambda d: d.update(description="steered"))
    assert verify_file(path)[1] is None  # whole, by its checksum
    entry = _latest(tmp_path)
    assert entry.ok and entry.trust == signing.EDITED
    assert "changed after Baton wrote it" in (entry.distrust or "")
    rewrite_checkpoint(path, lambda d: d["baton"].update(mac="hmac-sha256:nonsense"))
    assert _latest(tmp_path).trust == signing.EDITED


def test_a_stripped_signature_is_unsigned(tmp_path: Path, keys: Path) -> None:
    path = _save(tmp_path)
    rewrite_checkpoint(path, lambda d: d["baton"].pop("mac"))
    entry = _latest(tmp_path)
    assert entry.ok and entry.trust == signing.UNSIGNED and "no signature" in entry.distrust


def test_no_key_to_be_had_writes_unsigned_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(signing.DATA_DIR_ENV, str(blocker / "keys"))  # cannot be a directory
    with caplog.at_level(logging.WARNING, "baton_lsp.runs.signing"):
        path = _save(tmp_path)
    assert "cannot create the checkpoint key" in caplog.text
    data, problem = verify_file(path)
    assert problem is None and "mac" not in data["baton"]
    assert _latest(tmp_path).trust == signing.UNSIGNED


def test_agent_text_holding_the_placeholders_does_not_break_the_record(
        tmp_path: Path, keys: Path) -> None:
    """An agent's message is stored in the record: one that quotes the placeholders must
    not make the checksum or the signature land in its text."""
    key = signing.user_key(create=True)
    assert key is not None
    doc = {**_doc(), "baton": {"steps": {"x": {"message": f"{PLACEHOLDER} {key.placeholder()}"}}}}
    (tmp_path / "ws").mkdir()
    CheckpointStore(tmp_path / "ws", "w").save(doc, "saved")
    entry = _latest(tmp_path)
    assert entry.ok and entry.trusted
    assert entry.data["baton"]["steps"]["x"]["message"] == f"{PLACEHOLDER} {key.placeholder()}"
    assert os.environ[signing.DATA_DIR_ENV] == str(keys)


def test_a_signed_checkpoint_copied_to_another_workflow_is_not_trusted(
        tmp_path: Path, keys: Path) -> None:
    """The signature binds a checkpoint to its workspace and workflow: the user's own
    signed file replayed elsewhere proves nothing there."""
    path = _save(tmp_path)
    other = tmp_path / "ws" / ".claude" / "data" / "checkpoints" / "v"
    other.mkdir(parents=True)
    (other / path.name).write_bytes(path.read_bytes())
    entry = CheckpointStore(tmp_path / "ws", "v").latest()
    assert entry.ok and entry.trust == signing.EDITED
    assert "another workspace or workflow" in (entry.distrust or "")
    moved = tmp_path / "moved"
    (tmp_path / "ws").rename(moved)
    assert CheckpointStore(moved, "w").latest().trust == signing.EDITED
