"""`baton migrate`: output, exit codes, dry runs and clean errors on broken checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.cli.main import main
from tests.conftest import REPO
from tests.runs.test_checkpoint import BAD_INPUTS, full_doc, minimal_doc


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, doc: object, name: str = "cp.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return p


def test_migrate_prints_version_steps_and_target(capsys, tmp_path: Path) -> None:
    path = write(tmp_path, full_doc("1.2"))
    original = path.read_bytes()
    code, out, err = run(capsys, "migrate", str(path))
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "source version: 1.2",
        "steps applied: 1.2->1.3, 1.3->2.0, 2.0->2.1",
        f"target: {path} (original kept in {path}.backup)",
    ]
    assert (tmp_path / "cp.json.backup").read_bytes() == original
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == "2.1"
    assert data["state_machine"]["current_state"] == "implement"
    # A second run finds nothing to do and writes nothing.
    before = path.read_bytes()
    code, out, _ = run(capsys, "migrate", str(path))
    assert code == 0
    assert "steps applied: none (already at 2.1)" in out and "(unchanged)" in out
    assert path.read_bytes() == before


def test_migrate_prints_quirk_notes(capsys, tmp_path: Path) -> None:
    doc = full_doc("2.0")
    doc["schema_version"] = "2.1"
    code, out, _ = run(capsys, "migrate", str(write(tmp_path, doc)))
    assert code == 0
    assert "source version: 2.1" in out and "steps applied: 2.0->2.1" in out
    assert "note: schema_version 2.1 without state_machine.classification" in out


def test_dry_run_prints_json_and_writes_nothing(capsys, tmp_path: Path) -> None:
    path = write(tmp_path, minimal_doc("1.0"))
    before = path.read_bytes()
    code, out, err = run(capsys, "migrate", str(path), "--dry-run")
    assert code == 0
    data = json.loads(out)  # stdout is nothing but the migrated document
    assert data["schema_version"] == "2.1"
    assert data["state_machine"]["classification"]["confidence"] == 0.0
    assert "source version: 1.0" in err and "steps applied: 1.0->1.1" in err
    assert "dry run: nothing written" in err
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cp.json"]


@pytest.mark.parametrize("doc, label", [
    ({"version": "2.1", "plan_path": "p.md", "iteration": 1}, "2.1 (iteration checkpoint)"),
    ({"supervisor_id": "s", "workers": []}, "none (supervisor checkpoint)"),
], ids=["iteration", "supervisor"])
def test_side_flavours_are_reported_not_rewritten(capsys, tmp_path: Path, doc, label) -> None:
    path = write(tmp_path, doc)
    code, out, _ = run(capsys, "migrate", str(path))
    assert code == 0 and f"source version: {label}" in out and "(unchanged)" in out
    assert [p.name for p in tmp_path.iterdir()] == ["cp.json"]


def test_corpus_checkpoint_migrates(capsys, corpus: Path, tmp_path: Path) -> None:
    source = next((corpus / ".claude" / "checkpoints").glob("test_*/test_checkpoint.json"))
    path = tmp_path / "test_checkpoint.json"
    path.write_bytes(source.read_bytes())
    code, out, _ = run(capsys, "migrate", str(path))
    assert code == 0 and "source version: 1.2" in out
    assert (tmp_path / "test_checkpoint.json.backup").read_bytes() == source.read_bytes()


@pytest.mark.parametrize(("raw", "message"), [(b, m) for _, b, m in BAD_INPUTS],
                         ids=[n for n, _, _ in BAD_INPUTS])
@pytest.mark.parametrize("dry_run", [False, True], ids=["write", "dry-run"])
def test_corrupt_files_exit_2_with_a_message(capsys, tmp_path: Path, raw: bytes, message: str,
                                            dry_run: bool) -> None:
    path = tmp_path / "cp.json"
    path.write_bytes(raw)
    args = ["migrate", str(path)] + (["--dry-run"] if dry_run else [])
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith(f"baton: error: {path}: ") and message in err
    assert "Traceback" not in err and "internal error" not in err
    assert path.read_bytes() == raw
    assert [p.name for p in tmp_path.iterdir()] == ["cp.json"]


def test_missing_file_and_directory(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "migrate", str(tmp_path / "nope.json"))
    assert code == 2 and err == f"baton: error: {tmp_path / 'nope.json'}: no such file\n"
    code, _, err = run(capsys, "migrate", str(tmp_path))
    assert code == 2 and "not a regular file" in err


def test_no_traceback_from_a_real_process(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "migrate", str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("baton: error:") and "Traceback" not in proc.stderr
