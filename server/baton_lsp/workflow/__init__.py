"""The workflow engine: state machine, agent steps, runners, waves, barriers.

It writes run records through `runs/`; nothing here imports pygls or lsprotocol: the CLI
and the engine process use this package directly, and the language server only follows
the files it writes.
"""
