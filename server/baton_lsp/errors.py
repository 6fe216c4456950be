"""User-facing error types, dependency-free so every entry point can catch them cheaply."""


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


class PathError(Exception):
    """A path given on the command line does not exist or cannot be checked."""


class CheckpointError(Exception):
    """A checkpoint that cannot be read, parsed, validated, migrated or written. Defined here,
    not beside the checkpoint models, so reading the run store (`baton cancel`, a lock's
    owner) never imports pydantic; `runs.checkpoint` re-exports it."""
