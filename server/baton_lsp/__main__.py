"""`python -m baton_lsp` starts the language server; with arguments it is the `baton` CLI."""

import sys

from .cli.main import run

run(sys.argv[1:] or ["lsp"])
