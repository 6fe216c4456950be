"""The language server: adapts the core (model/parse/rules/workspace) to LSP.

One module per feature, each exposing `register(server)`; only this package imports pygls
and lsprotocol. Nothing here is imported by the CLI unless `baton lsp` runs, so `baton check`
never pays the ~200 ms lsprotocol import.
"""
