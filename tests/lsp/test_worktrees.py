"""A merge conflict between two parallel phases, in the editor over a real LSP connection:
the workflow started from the editor in a git repository fails with BTN506 on the phase's
heading, a lens and a code action open the conflict, and after the user resolves and
commits, the resume action finishes the workflow without running a finished phase again."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import CLIENTS, make_config, open_doc, setup
from tests.lsp.test_runs import code, diagnostics, lenses, run_action
from tests.lsp.test_workflows import _workspace, command, finished, wait_changed

CONFLICTING = {"implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}},
               "implement.phase-3": {"files": {"src/shared.py": "value = 3\n"}}}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com",
                           *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


@pytest_lsp.fixture(config=make_config(), params=CLIENTS)
async def editor(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path: Path) -> AsyncIterator[LanguageClient]:
    root = _workspace(tmp_path, CONFLICTING)
    (root / "src").mkdir()
    (root / "src" / "shared.py").write_text("value = 0\n")
    (root / ".gitignore").write_text(".claude/baton-script.json\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    yield await setup(lsp_client, request, root)
    await lsp_client.shutdown_session()


async def test_a_merge_conflict_is_shown_opened_and_resumed(editor: LanguageClient) -> None:
    root: Path = editor.workspace_root  # type: ignore[attr-defined]
    wid = (await command(editor, "workflow.start", {"description": "Add a greeting",
                                                    "scope": "full-implementation"})
           )["workflow_id"]
    done = await wait_changed(editor, finished(wid))
    assert done["event"]["status"] == "failed"
    plan = Path((await command(editor, "workflow.status", {"id": wid}))["plan"])
    uri = await open_doc(editor, plan)
    lines = plan.read_text().splitlines()

    items = await diagnostics(editor, uri, lambda ds: code(ds, "BTN506"))
    (conflict,) = code(items, "BTN506")
    assert lines[conflict.range.start.line].startswith("### Phase 3")
    assert f"baton/{wid}/phase-3" in conflict.message and "src/shared.py" in conflict.message
    assert not code(items, "BTN502")  # the phase itself did its work
    phase3 = [t for line, t, _ in await lenses(editor, uri)
              if line == conflict.range.start.line]
    assert "✗ merge conflict: src/shared.py" in phase3

    actions = await editor.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=conflict.range,
        context=types.CodeActionContext(diagnostics=[conflict])))
    by_title = {a.title: a for a in actions or []}
    opener = by_title["Open merge conflict in src/shared.py"]
    await run_action(editor, opener)
    shown = editor.shown_documents[-1]  # type: ignore[attr-defined]
    assert shown.uri == (root / "src" / "shared.py").as_uri()
    marker = (root / "src" / "shared.py").read_text().splitlines().index("<<<<<<< HEAD")
    assert shown.selection.start.line == marker

    # the user resolves the conflict and commits the merge; Resume finishes the workflow
    (root / "src" / "shared.py").write_text("value = 5\n")
    git(root, "commit", "-qam", "resolve the greeting conflict")
    resume = next(a for t, a in by_title.items() if t.startswith("Resume workflow") and
                  "earlier" not in t)
    assert (await run_action(editor, resume))["resumed"] is True
    asked = editor.asked[-1].message  # type: ignore[attr-defined]
    assert "implement.phase-3" in asked.split("Will skip")[1].split("Will run again")[0]
    assert "Will run again" not in asked
    await wait_changed(editor, lambda p: finished(wid)(p) and
                       p["event"]["status"] == "complete")
    await diagnostics(editor, uri, lambda ds: not code(ds, "BTN506"))
    log = (root / ".claude" / "tmp" / "scripted_runs.log").read_text().split()
    assert log.count("implement.phase-3") == 2  # its start and end: run once
    assert (root / "src" / "shared.py").read_text() == "value = 5\n"
    subjects = git(root, "log", "--first-parent", "--format=%s").splitlines()
    assert subjects[0].startswith("Merge phase 4: Integration (")
    assert subjects[1] == "resolve the greeting conflict"
    assert json.loads((root / ".claude" / "baton-script.json").read_text()) == CONFLICTING
