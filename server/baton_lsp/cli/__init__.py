"""The `baton` command line: the same core as the language server, on the terminal."""
