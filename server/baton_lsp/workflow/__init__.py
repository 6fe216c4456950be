"""Workflow engine domain logic: checkpoints, the state machine and (later) runners.

Nothing here imports pygls or lsprotocol: the CLI and the engine process use this package
directly, and the language server only follows the files it writes.
"""
