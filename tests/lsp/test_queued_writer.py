"""The stdio writer's flush after the stream was closed: the server's exit flushes it, and
a flush the closed writer never answers held every exit for its whole timeout."""

from __future__ import annotations

import io
import time

from baton_lsp.lsp.framing import QueuedWriter


def test_a_flush_after_close_does_not_wait_for_its_timeout() -> None:
    stream = io.BytesIO()
    writer = QueuedWriter(stream)
    writer.write(b"last words")
    assert writer.flush(30.0)
    writer.close()
    started = time.monotonic()
    assert writer.flush(30.0)  # nothing left to send: said at once, not after 30 s
    assert time.monotonic() - started < 30.0
