"""User-facing error types, dependency-free so every entry point can catch them cheaply."""


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


class PathError(Exception):
    """A path given on the command line does not exist or cannot be checked."""
