"""Configuration, file events, debounce/versions, pull mode and hostile input over LSP."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import TIMEOUT, open_doc, wait_for_diagnostics, wait_indexed

RETRY = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


def is_pull(client: LanguageClient) -> bool:
    td = client.capabilities.text_document
    return bool(td and td.diagnostic)


async def current(client: LanguageClient, uri: str, predicate=None) -> list:
    """Diagnostics for `uri` the way the client would see them (pull or push)."""
    if is_pull(client):
        async def poll() -> list:
            while True:
                report = await client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(
                        text_document=types.TextDocumentIdentifier(uri=uri)))
                if predicate is None or predicate(report.items):
                    return report.items
                await asyncio.sleep(0.05)
        return await asyncio.wait_for(poll(), TIMEOUT)
    return await wait_for_diagnostics(client, uri, predicate)


@pytest.mark.workspace_files({".claude/baton.toml": "severity = { BTN101 = \"fatal\" }\n"})
async def test_invalid_config_is_reported_loudly(client: LanguageClient) -> None:
    root = client.workspace_root
    cfg = (root / ".claude/baton.toml").as_uri()

    async def shown() -> None:
        while not any("invalid configuration" in m.message for m in client.messages):
            await client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
    await asyncio.wait_for(shown(), TIMEOUT)
    msg = next(m for m in client.messages if "invalid configuration" in m.message)
    assert msg.type == types.MessageType.Error and "severity.BTN101" in msg.message

    async def logged() -> None:  # the error is also in the log, whichever thread found it
        while not any("invalid configuration" in m.message for m in client.log_messages):
            await client.wait_for_notification(types.WINDOW_LOG_MESSAGE)
    await asyncio.wait_for(logged(), TIMEOUT)
    if not is_pull(client):
        diags = await wait_for_diagnostics(client, cfg, lambda d: bool(d))
        assert diags[0].code == "BTN001" and diags[0].range.start.line == 0
    # Defaults still apply: the plan is checked.
    uri = await open_doc(client, root / RETRY)
    assert any(d.code == "BTN101" for d in await current(
        client, uri, lambda d: any(x.code == "BTN101" for x in d)))


async def test_configuration_change_revalidates(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / RETRY)
    await current(client, uri, lambda d: any(x.code == "BTN101" for x in d))
    client.set_configuration({"ignore": ["BTN101"], "debounce": 50}, section="baton")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    diags = await current(client, uri, lambda d: d and not any(x.code == "BTN101" for x in d))
    assert any(d.code == "BTN116" for d in diags)


async def test_deleted_agent_updates_commands_that_inject_it(client: LanguageClient) -> None:
    root = client.workspace_root
    cmd = (root / ".claude/commands/research-plan.md").as_uri()
    await wait_indexed(client)
    agent = root / ".claude/agents/research-specialist.md"
    agent.unlink()
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=agent.as_uri(), type=types.FileChangeType.Deleted)]))
    diags = await current(client, cmd, lambda d: any("research-specialist" in x.message
                                                     for x in d))
    assert {"BTN305", "BTN313"} <= {d.code for d in diags}


NO_STATUS_PLAN = ".claude/specs/009_x/plans/001-x-plan.md"
STANDARD_DOC = ".claude/docs/reference/standards/plan-metadata-standard.md"


@pytest.mark.workspace_files({NO_STATUS_PLAN: (
    "# P\n\n## Metadata\n- **Date**: 2025-11-30\n- **Feature**: F\n"
    "- **Estimated Hours**: 3\n- **Standards File**: /home/u/CLAUDE.md\n"
    "- **Research Reports**: none\n\n## Implementation Phases\n\n### Phase 1: A\n")})
async def test_a_plan_standard_created_on_disk_turns_its_rule_on(client: LanguageClient) -> None:
    root = client.workspace_root
    standard = root / STANDARD_DOC
    if standard.exists():
        standard.unlink()
    uri = await open_doc(client, root / NO_STATUS_PLAN)
    diags = await current(client, uri)
    assert not any(d.code == "BTN120" for d in diags)
    standard.parent.mkdir(parents=True, exist_ok=True)
    standard.write_text("# Plan metadata standard\n", encoding="utf-8")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=standard.as_uri(), type=types.FileChangeType.Created)]))
    diags = await current(client, uri, lambda d: any(x.code == "BTN120" for x in d))
    [status] = [d.message for d in diags if d.code == "BTN120"]
    assert status.endswith(": Status")


async def test_rapid_edits_publish_only_the_latest_version(client: LanguageClient) -> None:
    if is_pull(client):
        pytest.skip("push-only behaviour")
    path = client.workspace_root / RETRY
    uri = await open_doc(client, path)
    await wait_for_diagnostics(client, uri, lambda d: bool(d))
    text = path.read_text()
    for version in range(2, 8):
        text = text.replace("dependencies: [2, 7]", "dependencies: [2, 7]", 1)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(
                text=text.replace("[2, 7]", f"[2, {version + 10}]"))]))

    async def latest() -> None:
        while not any(p.uri == uri and p.version == 7 for p in client.published):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    await asyncio.wait_for(latest(), TIMEOUT)
    versions = [p.version for p in client.published if p.uri == uri]
    assert versions[-1] == 7 and not set(versions) & {2, 3, 4, 5, 6}
    final = next(p for p in reversed(client.published) if p.uri == uri)
    assert any("phase 17" in d.message for d in final.diagnostics)


async def test_workspace_pull_and_index_progress(client: LanguageClient) -> None:
    if is_pull(client):
        report = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(
            previous_result_ids=[]))
        uris = {i.uri.rsplit("/", 1)[1]: i for i in report.items}
        assert "001-payment-retry-plan.md" in uris and "implement.md" in uris
    else:
        uri = (client.workspace_root / RETRY).as_uri()
        await wait_for_diagnostics(client, uri, lambda d: bool(d))  # never opened: indexed
    await wait_indexed(client)
    window = client.capabilities.window
    if window and window.work_done_progress:
        assert client.progress_reports, "indexing must report work-done progress"
        reports = next(iter(client.progress_reports.values()))
        assert reports[0].title == "Baton: indexing .claude/"
        assert reports[0].kind == "begin" and reports[-1].kind == "end"


async def test_hostile_requests_do_not_break_the_server(client: LanguageClient) -> None:
    root = client.workspace_root
    uri = await open_doc(client, root / RETRY)
    far = types.Position(line=10_000, character=500)
    assert await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=far)) is None
    await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri="untitled:Untitled-1"), position=far))
    binary = root / ".claude/specs/002_payment_retry/plans/blob-plan.md"
    binary.write_bytes(b"\x00\xff\xfe" * 100)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=binary.as_uri(), language_id="markdown",
                                             version=1, text="\x00" * 10 + "### Phase 1: x")))
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lenses  # still serving


async def test_notifications_do_not_accumulate_in_the_server(client: LanguageClient) -> None:
    """Regression for a pygls leak: every didChange left a future behind in the server."""
    path = client.workspace_root / RETRY
    uri = await open_doc(client, path)
    text = path.read_text()
    for version in range(2, 202):
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(
                text=text + "x" * (version % 7))]))
    stats = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="baton.server.debugInfo", arguments=[]))
    assert stats["live_futures"] < 20, stats


async def test_validate_workspace_command_returns_the_totals(client: LanguageClient) -> None:
    """`baton.server.validateWorkspace` (the extension's Validate Workspace) re-checks every
    file and returns counts that agree with `baton check`."""
    import json
    import subprocess
    import sys

    got = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="baton.server.validateWorkspace", arguments=[]))
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "json",
                           str(client.workspace_root)], capture_output=True, text=True,
                          timeout=120)
    findings = json.loads(proc.stdout)
    rows = findings if isinstance(findings, list) else findings.get("findings", [])
    errors = sum(1 for f in rows if f["severity"] == "error")
    assert got["errors"] == errors and got["files"] > 0, (got, errors)
    info = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="baton.server.debugInfo", arguments=[]))
    assert info["rules"] >= 60


# -- bounded work on any editor input ---------------------------------------------------------

BIG_PLAN = ".claude/specs/003_big/plans/001-big-plan.md"


async def test_an_editor_document_over_the_size_limit_is_reported_not_parsed(
        client: LanguageClient) -> None:
    """`baton check` refuses files over `max-file-size` (4 MiB); documents opened in the
    editor were parsed whatever their size (a 55 MB plan: 5.8 GB RSS, 49 s deaf)."""
    root = client.workspace_root
    path = root / BIG_PLAN
    path.parent.mkdir(parents=True, exist_ok=True)
    big = "# Big\n\n```bash\necho\n```\n" + \
        "### Phase 1: again\ndependencies: [9]\n- [ ] x\n" * 120_000  # 5.2 MiB
    path.write_text("# Big\n", encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                             text=big)))
    diags = await current(client, uri, lambda d: any(x.code == "BTN400" for x in d))
    assert [d.code for d in diags] == ["BTN400"], diags
    assert "MiB" in diags[0].message and "limit" in diags[0].message, diags[0].message
    doc = types.TextDocumentIdentifier(uri=uri)
    assert not await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=doc))
    assert not await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=doc))
    assert not await client.text_document_folding_range_async(types.FoldingRangeParams(
        text_document=doc))  # the markdown scan of 5 MB is not run for folding either
    # Back under the limit: parsed and checked again.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="# Big\n\n### Phase 1: again\ndependencies: [9]\n")]))
    diags = await current(client, uri, lambda d: any(x.code == "BTN101" for x in d))
    assert "BTN400" not in {d.code for d in diags}


async def test_nul_bytes_in_editor_text_are_reported_like_baton_check(
        client: LanguageClient) -> None:
    path = client.workspace_root / ".claude/specs/002_payment_retry/plans/002-nul-plan.md"
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                             text="# P\n\n### Phase 1: x\x00\n")))
    diags = await current(client, uri, lambda d: bool(d))
    assert [d.code for d in diags] == ["BTN400"] and "NUL" in diags[0].message, diags


ODD_URIS = ["file:///tmp/x%00y.md", "file:///tmp/ws/.claude/agents/%00.md",
            "file:///" + "a/" * 3000 + "x.md", "file:///tmp/\ud800.md", "file:",
            "file://server/share/.claude/plan.md", "untitled:Untitled-1", "file:///dev/zero"]


@pytest.mark.parametrize("uri", ODD_URIS, ids=range(len(ODD_URIS)))
async def test_odd_uris_are_served_without_internal_errors(client: LanguageClient,
                                                         uri: str) -> None:
    """`%00` in a URI made every handler fail ("embedded null byte") and pygls show
    "Error in server"; a path too long for the OS or a lone surrogate did the same."""
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                             text="# P\n\n### Phase 1: x\ndependencies: [4]\n")))
    doc = types.TextDocumentIdentifier(uri=uri)
    pos = types.Position(line=3, character=15)
    await client.text_document_hover_async(types.HoverParams(text_document=doc, position=pos))
    await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
    await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=doc))
    await client.text_document_folding_range_async(types.FoldingRangeParams(text_document=doc))
    await client.text_document_definition_async(types.DefinitionParams(text_document=doc,
                                                                       position=pos))
    if is_pull(client):
        await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=doc))
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc))
    # Still serving, and nothing went wrong inside.
    await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="Phase"))
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    failed = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
    assert not errors and not failed, (errors, failed)


async def test_edits_after_a_unicode_line_separator_land_where_the_editor_put_them(
        client: LanguageClient) -> None:
    """LSP lines end at \\n, \\r\\n or \\r only; pygls applied edits by `str.splitlines`,
    which also breaks at U+2028, U+0085 and form feeds, so every edit below such a
    character landed a line off and the server's text drifted from the editor's."""
    path = client.workspace_root / ".claude/specs/002_payment_retry/plans/003-sep-plan.md"
    text = ("# Plan\u2028note\x0cmore\n\n### Phase 1: A\n\n### Phase 2: B\n"
            "dependencies: [7]\n")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                             text=text)))
    await current(client, uri, lambda d: any(x.code == "BTN101" for x in d))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=5, character=15),
                              end=types.Position(line=5, character=16)), text="1")]))
    diags = await current(client, uri, lambda d: not any(x.code == "BTN101" for x in d))
    assert not any(x.code == "BTN101" for x in diags)


async def test_a_path_that_needs_percent_encoding_gets_versioned_diagnostics(
        client: LanguageClient) -> None:
    """pygls keys open documents by the unquoted URI; looking them up by the URI as sent
    (`%20`) found nothing, so diagnostics went out without a version and a superseded
    check was published over a newer one."""
    if is_pull(client):
        pytest.skip("versions are a push-mode matter")
    path = client.workspace_root / ".claude/specs/004_with space/plans/001-é-plan.md"
    path.parent.mkdir(parents=True)
    path.write_text("# P\n\n### Phase 1: A\ndependencies: [9]\n", encoding="utf-8")
    uri = await open_doc(client, path)
    assert "%20" in uri
    await wait_for_diagnostics(client, uri, lambda d: bool(d))

    async def versioned() -> None:
        while not any(p.uri == uri and p.version == 1 for p in client.published):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    await asyncio.wait_for(versioned(), TIMEOUT)
