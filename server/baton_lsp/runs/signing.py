"""Who wrote a checkpoint: an HMAC-SHA256 with a per-user key, next to the plain checksum.

The checksum (`baton.checksum`) says a file is whole; anyone can recompute it, so it cannot
say Baton wrote the file. The signature (`baton.mac`, `hmac-sha256:<key id>:<hex>`) is made
with a random key kept in the user's data directory (platformdirs' user data dir for
`baton-lsp`, or `$BATON_DATA_DIR`), created 0600 on first use and never in a repository. A
checkpoint whose signature verifies with this user's key is `trusted`; one signed with
another key was written on another machine or by another user (`foreign`); one signed with
this key that no longer verifies was changed after it was written, or copied from another
workspace or workflow — the signature covers both (`edited`); one with no
signature was written by hand, another tool or a Baton from before signatures
(`unsigned`). Readers show every sound checkpoint; only a trusted one steers a resume
without `--trust-checkpoint`. Copying the key file to a second machine makes each trust
the other's checkpoints.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DATA_DIR_ENV = "BATON_DATA_DIR"
"""Overrides the user data directory holding the key (tests, CI, a shared home)."""
KEY_FILE = "checkpoint.key"
PREFIX = "hmac-sha256:"
TRUSTED, FOREIGN, EDITED, UNSIGNED = "trusted", "foreign", "edited", "unsigned"
_ZEROS = "0" * 64


@dataclass(frozen=True)
class Key:
    secret: bytes
    id: str
    """16 hex digits naming the key (a hash of it: says nothing about the secret)."""

    def placeholder(self) -> str:
        """What the signature field holds while the signature is computed."""
        return f"{PREFIX}{self.id}:{_ZEROS}"

    def sign(self, text: bytes, context: bytes) -> str:
        """The signature of `text` for `context` (the workspace and workflow it belongs to:
        a signed checkpoint copied into another workspace or workflow does not verify)."""
        mac = hmac.new(self.secret, b"baton checkpoint\0" + context + b"\0", hashlib.sha256)
        mac.update(text)
        return f"{PREFIX}{self.id}:{mac.hexdigest()}"


def _key_id(secret: bytes) -> str:
    return hashlib.sha256(b"baton checkpoint key id\0" + secret).hexdigest()[:16]


def key_dir() -> Path:
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs  # lazy (start-up): only without the directory in the environment

    return Path(platformdirs.user_data_dir("baton-lsp", appauthor=False))


_cache: dict[str, Key] = {}
_warned: set[str] = set()


def _warn_once(message: str, *args: object) -> None:
    """A key that cannot be used is said once per process, not once per checkpoint read."""
    text = message % args
    if text not in _warned:
        _warned.add(text)
        log.warning("%s", text)


def user_key(create: bool = False) -> Key | None:
    """This user's key (made on first use when `create`); None when there is none and it
    cannot or may not be made — checkpoints are then written unsigned, with a warning."""
    path = key_dir() / KEY_FILE
    cached = _cache.get(str(path))
    if cached is not None:
        return cached
    key = _read(path)
    if key is None and create:
        try:
            key = _create(path)
        except OSError as exc:
            log.warning("cannot create the checkpoint key %s: %s; checkpoints are written "
                        "unsigned (a resume will need --trust-checkpoint)", path, exc)
    if key is not None:
        _cache[str(path)] = key
    return key


def forget() -> None:
    """Drop the keys read so far (a long-lived process after the key file was replaced)."""
    _cache.clear()
    _warned.clear()


def _read(path: Path) -> Key | None:
    try:
        # O_NONBLOCK: a FIFO at the key's name must not hang every reader of checkpoints
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn_once("cannot read the checkpoint key %s: %s", path, exc)
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            _warn_once("ignoring the checkpoint key %s: not a regular file of this user", path)
            return None
        if st.st_mode & 0o077:
            log.warning("the checkpoint key %s was readable by others; made 0600", path)
            os.fchmod(fd, 0o600)
        os.set_blocking(fd, True)
        text = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < 32:
        _warn_once("ignoring the checkpoint key %s: not 64 hex digits", path)
        return None
    return Key(secret, _key_id(secret))


def _create(path: Path) -> Key:
    """A new random key, published atomically: written to a temp file (0600, fsynced) and
    linked to its name, so two processes starting at once end up with the same key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    secret = os.urandom(32)
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, (secret.hex() + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process was first: use its key
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    key = _read(path)
    if key is None:
        raise OSError(f"the new key {path} cannot be read back")
    log.info("created the checkpoint key %s (id %s)", path, key.id)
    return key


def parse(mac: object) -> tuple[str, str] | None:
    """(key id, hex digest) of a signature field, None when it is not one."""
    if not isinstance(mac, str) or not mac.startswith(PREFIX):
        return None
    kid, _, digest = mac[len(PREFIX):].partition(":")
    if len(kid) != 16 or len(digest) != 64:
        return None
    return kid, digest


def verdict(text: bytes, mac: object, context: bytes) -> tuple[str, str | None]:
    """How far a checkpoint is trusted, from `text` (its bytes with the checksum field back
    at its placeholder), its signature field and the `context` it was read in; with the
    reason when not trusted."""
    if mac is None:
        return UNSIGNED, ("it carries no signature (written by hand, by another tool, or by "
                          "a Baton from before signatures)")
    parsed = parse(mac)
    if parsed is None or not isinstance(mac, str):  # parse() accepts only a str
        return EDITED, "its signature field is malformed (the file was edited)"
    kid, _ = parsed
    key = user_key()
    if key is None or kid != key.id:
        mine = f"yours is {key.id}" if key else f"you have none yet in {key_dir()}"
        return FOREIGN, (f"it was written on another machine or by another user (signed with "
                         f"key {kid}; {mine})")
    why = ("it was changed after Baton wrote it, or copied from another workspace or "
           "workflow (its signature does not match, though its checksum does)")
    if text.count(mac.encode()) != 1:
        return EDITED, why
    unsigned = text.replace(mac.encode(), key.placeholder().encode(), 1)
    if not hmac.compare_digest(key.sign(unsigned, context), mac):
        return EDITED, why
    return TRUSTED, None
