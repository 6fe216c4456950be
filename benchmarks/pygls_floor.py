"""The smallest pygls server (one diagnostic on didOpen): the start-up floor of any server
built on pygls + lsprotocol, measured side by side with Baton by `bench_lsp.py --startup`."""

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

server = LanguageServer("pygls-floor", "0.0.1")


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: t.DidOpenTextDocumentParams) -> None:
    doc = ls.workspace.get_text_document(params.text_document.uri)
    first = doc.lines[0].rstrip("\r\n") if doc.lines else ""
    diag = t.Diagnostic(
        range=t.Range(start=t.Position(line=0, character=0),
                      end=t.Position(line=0, character=len(first))),
        message=f"floor: first line is {first!r}", severity=t.DiagnosticSeverity.Warning,
        source="floor", code="F001")
    ls.text_document_publish_diagnostics(
        t.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[diag], version=doc.version))


if __name__ == "__main__":
    server.start_io()
