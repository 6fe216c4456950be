"""The byte level of the client connection: cutting the stream into JSON-RPC messages
(`Framer`, which resynchronises after framing errors) and writing messages from a thread
of its own (`QueuedWriter`). Free of pygls and lsprotocol: `transport` hands what it frames
to pygls.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest body accepted: a 55 MB plan opened in the editor still arrives (and is then
refused by the document size limit with a diagnostic); a larger length is a broken header."""
MAX_HEADER_BYTES = 8192
"""A header block longer than this is garbage, not headers."""
MAX_GARBAGE_BYTES = 1024 * 1024
"""Bytes kept while looking for the next header; older ones are dropped and counted."""
IDLE_SECONDS = 0.5
"""How long the stream must be quiet before a message whose end is unknown is settled."""
READ_BYTES = 65536

PARSE_ERROR, INVALID_REQUEST = -32700, -32600

_HEADER = re.compile(rb'content-length[ \t]*:([^\r\n"]{0,64})\r?\n', re.IGNORECASE)
"""A Content-Length line. The value may not hold a quote, so inside a JSON string (which
cannot hold a raw line break either) this never matches."""
_HEADER_LINE = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:[^\r\n]*")
_TRAILING_HEADERS = re.compile(rb"(?:[A-Za-z][A-Za-z0-9-]*[ \t]*:[^\r\n]*\r?\n)+\Z")
_DIGITS = re.compile(rb"[ \t]*([0-9]+)[ \t]*")
_decoder = json.JSONDecoder()


@dataclass
class Frame:
    """One outcome of reading: a message (`message` set), or bytes that could not be one
    (`message` None). `problem` says what was wrong with the framing, if anything."""

    message: Any = None
    problem: str | None = None
    unparsable: bool = False
    """True when a body was found but is not JSON (answered with a parse error)."""


def _salvage(data: bytes, problem: str) -> Frame:
    """The first JSON object in `data` (a body whose end or length was wrong)."""
    text = data.decode("utf-8", errors="replace")
    start = text.find("{")
    if start >= 0:
        try:
            value, end = _decoder.raw_decode(text, start)
        except ValueError:
            pass
        else:
            stray = len(text[:start].strip()) + len(text[end:].strip())
            note = f"; {stray} stray characters around it were dropped" if stray else ""
            return Frame(value, f"{problem}; the message in it was read anyway{note}")
    size = len(data)
    return Frame(None, f"{problem}; {size} byte{'s' if size != 1 else ''} that are not a "
                       "JSON-RPC message were dropped", unparsable=bool(data.strip()))


class Framer:
    """Turns a byte stream into `Frame`s; `feed` what arrives, call `idle` when the stream
    has been quiet for a while and `eof` when it ended."""

    def __init__(self, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._want: int | None = None
        """Length of the body being read, when its header was usable."""
        self._loose: str | None = None
        """Why the current body runs to the next header instead (its header was broken)."""
        self._scan = 0
        """Where the search for a header inside the current body resumes."""
        self._dropped = 0
        """Garbage bytes dropped so far while looking for a header."""

    @property
    def pending(self) -> bool:
        """Whether there are bytes `idle` could settle (in constant time: it is asked
        after every chunk, and a 55 MB message arrives in 900 of them)."""
        if self._want is not None or self._loose is not None or self._dropped:
            return True
        return len(self._buf) > 4096 or bool(self._buf.strip())

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        out: list[Frame] = []
        while self._step(out):
            pass
        return out

    def idle(self) -> list[Frame]:
        """The stream is quiet: settle a body whose end is unknown, or garbage."""
        out: list[Frame] = []
        if self._want is not None:
            # The length said more than came. A whole JSON object in hand means the length
            # was wrong (a valid body cannot be a complete object plus more bytes that are
            # not whitespace); anything less may be a slow sender, so it waits.
            text = bytes(self._buf).decode("utf-8", errors="replace")
            stripped = text.strip()
            if stripped.startswith("{"):
                try:
                    value, end = _decoder.raw_decode(stripped)
                except ValueError:
                    return out
                if end == len(stripped):
                    out.append(Frame(value, f"Content-Length said {self._want} bytes but only "
                                            f"{len(self._buf)} came; the message was read "
                                            "anyway"))
                    self._reset()
            return out
        if self._loose is not None:
            out.append(_salvage(bytes(self._buf), self._loose))
            self._reset()
        elif self._buf.strip() or self._dropped:
            out.append(self._garbage(bytes(self._buf)))
            self._reset()
        return out

    def eof(self) -> list[Frame]:
        """End of input: whatever is left is settled and reported."""
        out = self.idle()
        if self._want is not None:
            out.append(Frame(None, f"the client closed the stream in the middle of a message "
                                   f"({len(self._buf)} of {self._want} bytes came)"))
            self._reset()
        return out

    # -- the state machine ------------------------------------------------------------

    def _reset(self) -> None:
        self._buf.clear()
        self._want = None
        self._loose = None
        self._scan = 0
        self._dropped = 0

    def _garbage(self, data: bytes) -> Frame:
        frame = _salvage(data, "bytes without a Content-Length header")
        if self._dropped:
            frame.problem = (f"{frame.problem} ({self._dropped} more bytes without a header "
                             "were dropped before them)")
            self._dropped = 0
        return frame

    def _step(self, out: list[Frame]) -> bool:
        """Make one step of progress; False when more bytes are needed."""
        if self._want is not None:
            return self._body(out)
        if self._loose is not None:
            return self._loose_body(out)
        return self._headers(out)

    def _headers(self, out: list[Frame]) -> bool:
        buf = self._buf
        m = _HEADER.search(buf)
        if m is None:
            if len(buf) > MAX_GARBAGE_BYTES:  # keep a tail: a header may be split
                self._dropped += len(buf) - 128
                del buf[:-128]
            return False
        start = m.start()
        if start:
            prefix = bytes(buf[:start])
            # Other headers (Content-Type) may come first; only what precedes them counts.
            tail = _TRAILING_HEADERS.search(prefix[-MAX_HEADER_BYTES:])
            cut = len(prefix) - (len(tail.group(0)) if tail else 0)
            junk = prefix[:cut]
            if junk.strip() or self._dropped:
                out.append(self._garbage(junk))
            del buf[:start]
        line_end = m.end() - start
        value = m.group(1)
        # The rest of the header block, up to an empty line.
        pos = line_end
        while True:
            nl = buf.find(b"\n", pos, pos + MAX_HEADER_BYTES)
            if nl < 0:
                if len(buf) - pos > MAX_HEADER_BYTES:
                    self._loose = "a header block with no end"
                    del buf[:line_end]
                    return True
                return False
            line = bytes(buf[pos:nl]).rstrip(b"\r")
            if not line:
                pos = nl + 1
                break
            if not _HEADER_LINE.fullmatch(line):
                self._loose = "the headers were not followed by an empty line"
                del buf[:pos]
                return True
            pos = nl + 1
        del buf[:pos]
        digits = _DIGITS.fullmatch(value)
        length = int(digits.group(1)) if digits else None
        shown = value.decode("ascii", errors="replace").strip()
        if length is None:
            self._loose = f"Content-Length {shown!r} is not a byte count"
        elif length > self.max_bytes:
            self._loose = (f"Content-Length {length} is over the "
                           f"{self.max_bytes // 1_048_576} MiB limit for one message")
        else:
            self._want = length
        self._scan = 0
        return True

    def _body(self, out: list[Frame]) -> bool:
        buf, want = self._buf, self._want
        assert want is not None
        if len(buf) < want:
            # A header inside what should be this body: the length was too long.
            nxt = _HEADER.search(buf, max(0, self._scan - 80))
            if nxt is None:
                self._scan = len(buf)
                return False
            return self._cut(out, nxt.start(), f"Content-Length said {want} bytes but the "
                                               f"next message began after {nxt.start()}")
        data = bytes(buf[:want])
        try:
            message = json.loads(data)
        except ValueError:
            nxt = _HEADER.search(data)
            if nxt is not None:
                return self._cut(out, nxt.start(), f"Content-Length said {want} bytes but "
                                                   f"the next message began after "
                                                   f"{nxt.start()}")
            # Not JSON: the length may be short. The body runs on to the next header.
            self._want = None
            self._loose = f"the {want} bytes Content-Length gave are not a JSON message"
            self._scan = want
            return True
        del buf[:want]
        self._want = None
        self._scan = 0
        out.append(Frame(message))
        return True

    def _cut(self, out: list[Frame], at: int, problem: str) -> bool:
        out.append(_salvage(bytes(self._buf[:at]), problem))
        del self._buf[:at]
        self._want = None
        self._loose = None
        self._scan = 0
        return True

    def _loose_body(self, out: list[Frame]) -> bool:
        assert self._loose is not None
        nxt = _HEADER.search(self._buf, max(0, self._scan - 80))
        if nxt is None:
            self._scan = len(self._buf)
            if len(self._buf) > self.max_bytes:
                out.append(Frame(None, f"{self._loose}; {len(self._buf)} bytes without a "
                                       "message end were dropped"))
                del self._buf[:-128]
                self._scan = 0
            return False
        start = nxt.start()
        tail = _TRAILING_HEADERS.search(bytes(self._buf[max(0, start - MAX_HEADER_BYTES):start]))
        cut = start - (len(tail.group(0)) if tail else 0)
        problem = self._loose
        self._loose = None
        return self._cut(out, cut, problem)


class QueuedWriter:
    """Writes messages to the client from a thread of its own, in order.

    pygls writes (and flushes) on the event loop: when the client reads slowly and the pipe
    is full, the whole server stops — no request is read, no check is started — until the
    client catches up (1.3 s stalls under a burst of edits). Here the loop only appends to
    a queue. A broken pipe (the client is gone) ends the server."""

    def __init__(self, stream: BinaryIO, on_broken: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self.on_broken = on_broken
        """Called (on the writer thread) once the client is gone."""
        self._queue: collections.deque[bytes | threading.Event | None] = collections.deque()
        self._ready = threading.Condition()
        self._finished = False
        self._thread = threading.Thread(target=self._drain, name="baton-stdout",
                                        daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        with self._ready:
            self._queue.append(data)
            self._ready.notify()

    def flush(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) until everything queued so far was written: before
        the server ends itself with `os._exit`, its last log line must be out."""
        done = threading.Event()
        with self._ready:
            if self._finished or not self._thread.is_alive():  # closed, or the client gone
                return True
            self._queue.append(done)
            self._ready.notify()
        return done.wait(timeout)

    def close(self) -> None:
        """Send what is queued (bounded wait), then close the stream."""
        with self._ready:
            self._queue.append(None)
            self._ready.notify()
        self._thread.join(timeout=10)
        with contextlib.suppress(OSError, ValueError):
            self._stream.close()

    def _drain(self) -> None:
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                batch = list(self._queue)
                self._queue.clear()
            done = batch[-1] is None
            data = b"".join(item for item in batch if isinstance(item, bytes))
            try:
                if fd is None:
                    self._stream.write(data)
                    self._stream.flush()
                else:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
            except (OSError, ValueError):
                if self.on_broken is not None:
                    self.on_broken()
                return
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
            if done:
                with self._ready:  # a flush queued after the close has nothing to wait for
                    self._finished = True
                    for item in self._queue:
                        if isinstance(item, threading.Event):
                            item.set()
                    self._queue.clear()
                return
