"""Where a workspace keeps its runs: the checkpoint store, the errors log and the bash
system's checkpoint directories. Dependency-free, so a check can ask whether there is any
run to read before it loads the run store (a plan's first check in a tree with no runs)."""

from __future__ import annotations

from pathlib import Path


def checkpoints_root(root: Path) -> Path:
    return root / ".claude" / "data" / "checkpoints"


def errors_log_path(root: Path) -> Path:
    return root / ".claude" / "data" / "logs" / "errors.jsonl"


def run_sources(root: Path) -> list[Path]:
    """The directories whose contents decide every run of the workspace: Baton's checkpoint
    store and where the bash system keeps its checkpoints (what a result cache must watch)."""
    return [checkpoints_root(root), root / ".claude" / "checkpoints", root / ".claude" / "tmp"]


def tmp_json_path(root: Path, name: str) -> Path:
    """`.claude/tmp/<name>.json`, where the seeds' `save_json_checkpoint NAME` writes and
    `load_json_checkpoint NAME` reads (research_supervisor, supervisor_metadata, …)."""
    return root / ".claude" / "tmp" / f"{name}.json"


SCRIPTED_JOURNAL = "scripted_runs.log"
"""The scripted agents' journal in `.claude/tmp/`: one line per step started or finished."""


def scripted_journal_path(root: Path) -> Path:
    return root / ".claude" / "tmp" / SCRIPTED_JOURNAL
