"""Small helpers for tests: applying fix edits to text, picking findings by code, watching
ShellCheck runs, rewriting a checkpoint as anyone could."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.model.base import Finding, TextEdit


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply edits (0-based line/char ranges) from last to first."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(line: int, char: int) -> int:
        if line >= len(lines):
            return len(text)
        return offsets[line] + char

    out = text
    for e in sorted(edits, key=lambda e: (e.range.start_line, e.range.start_char), reverse=True):
        a = offset(e.range.start_line, e.range.start_char)
        b = offset(e.range.end_line, e.range.end_char)
        out = out[:a] + e.new_text + out[b:]
    return out


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def only(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def apply_fix(text: str, fix: object) -> str:
    """Apply every edit of a `Fix`."""
    return apply_edits(text, fix.edits)  # type: ignore[attr-defined]


class ShellcheckRuns:
    """Every ShellCheck process the BTN330 runner starts, with the blocks it was handed
    (piped on stdin or as `/dev/fd/N` in-memory files); the real ShellCheck still runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from baton_lsp.rules import shellcheck_run

        self.processes: list[list[str]] = []
        self.argvs: list[list[str]] = []
        real = shellcheck_run._execute

        def recording(argv: list[str], stdin: bytes | None, pass_fds: Any,
                      timeout: float) -> Any:
            if stdin is not None:
                handed = [stdin.decode("utf-8", "replace")]
            else:
                handed = [_read_fd(int(a.rsplit("/", 1)[1])) for a in argv
                          if a.startswith("/dev/fd/")]
            self.processes.append(handed)
            self.argvs.append(list(argv))
            return real(argv, stdin, pass_fds, timeout)

        monkeypatch.setattr(shellcheck_run, "_execute", recording)

    @property
    def blocks(self) -> list[str]:
        """Every block handed to ShellCheck, in order."""
        return [block for handed in self.processes for block in handed]

    def clear(self) -> None:
        self.processes.clear()
        self.argvs.clear()


def _read_fd(fd: int) -> str:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0).decode("utf-8", "replace")


def rewrite_checkpoint(path: Path, edit: Callable[[dict], object]) -> None:
    """Edit a checkpoint and recompute its plain SHA-256, as anyone can: the checksum says
    the file is whole, not who wrote it."""
    from baton_lsp.runs.store import PLACEHOLDER

    data = json.loads(path.read_text())
    edit(data)
    data["baton"]["checksum"] = PLACEHOLDER
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    path.write_text(text.replace(PLACEHOLDER, digest, 1))
