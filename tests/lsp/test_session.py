"""The session's one document store (`lsp/session.py`), on a real workspace on disk: the
named operations keep the editor's text, its version and the check's overlay together, and
edits follow LSP's line rules (lines end at \\n, \\r\\n or \\r only)."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types

from baton_lsp.lsp.session import DocResult, Session
from baton_lsp.paths import norm
from tests.conftest import EXAMPLE

PLAN = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


def _session(tmp_path: Path) -> tuple[Session, Path]:
    root = tmp_path / "my ws"
    shutil.copytree(EXAMPLE, root)
    session = Session()
    session.initialize({}, [root.as_uri()], None, None)
    return session, root


def _edit(line: int, start: int, end: int, text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=line, character=start),
                          end=types.Position(line=line, character=end)), text=text)


def test_open_change_and_close_keep_the_text_the_version_and_the_overlay(
        tmp_path: Path) -> None:
    session, root = _session(tmp_path)
    path = norm(root / PLAN)
    uri = (root / PLAN).as_uri()
    assert "%20" in uri  # looked up by path, however the URI is quoted
    doc = session.open(uri, "# Plan\u2028note\x0cmore\nsecond line\n", 1, "markdown")
    assert doc is not None and doc.path == path
    index = session.index_for(path)
    assert index.overlay(path) == session.open_text(path) == doc.text

    # Line 1 is "second line": U+2028 and the form feed do not end line 0.
    changed = session.change(uri, 2, [_edit(1, 0, 6, "2nd"), _edit(0, 0, 1, "##")])
    assert changed is doc and doc.version == 2 == session.open_version(uri)
    assert doc.text == "## Plan\u2028note\x0cmore\n2nd line\n"
    assert index.overlay(path) == doc.text

    assert session.close(uri) == path
    assert session.open_document(uri) is None and index.overlay(path) is None
    assert session.open_text(path) is None


def test_an_edit_to_a_document_that_is_not_open_is_dropped(tmp_path: Path) -> None:
    session, root = _session(tmp_path)
    uri = (root / PLAN).as_uri()
    assert session.change(uri, 2, [_edit(0, 0, 0, "x")]) is None
    assert session.documents == {}
    assert session.open("untitled:Untitled-1", "text", 1) is None  # no file of ours


def test_withdraw_forgets_the_results_and_what_the_client_was_sent(tmp_path: Path) -> None:
    session, root = _session(tmp_path)
    path = norm(root / PLAN)
    session.results[path] = DocResult(None, [])
    session.published.add(path)
    session.withdraw(path)
    assert path not in session.results and path not in session.published
