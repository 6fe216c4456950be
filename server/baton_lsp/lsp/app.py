"""Building and starting the server: one `register` call per feature module."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path

from .lifecycle import ClientLogHandler
from .server import BatonServer
from .wire import CLIENT_LOG_FORMAT

FEATURES = (
    "lifecycle",
    "diagnostics",
    "code_actions",
    "code_lens",
    "inlay_hints",
    "hover",
    "definition",
    "symbols",
    "folding",
    "completion",
    "commands",
    "workflows",
)


def create_server() -> BatonServer:
    server = BatonServer()
    for name in FEATURES:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.{name}":
                continue
            raise
        module.register(server)
    return server


def setup_logging(server: BatonServer, level: str = "INFO", log_file: Path | None = None) -> None:
    root = logging.getLogger("baton_lsp")
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
    handler = ClientLogHandler(server)
    handler.setFormatter(logging.Formatter(CLIENT_LOG_FORMAT))
    root.addHandler(handler)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        fh = logging.FileHandler(log_file, encoding="utf-8")
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(fh)


def default_log_file() -> Path:
    import platformdirs  # only when no log file is given

    return Path(platformdirs.user_log_dir("baton-lsp", appauthor=False)) / "server.log"


def tune_threads() -> None:
    """Hand the GIL back to the event loop sooner. After each system call (a read, a write,
    a `stat`) the loop thread must win the GIL back from the checker threads, which keep it
    for the switch interval (5 ms by default): under a burst of edits that put ~0.3 ms on
    every call the loop made. 1 ms costs the checks a few percent."""
    sys.setswitchinterval(0.001)


def start(tcp: str | None = None, log_level: str = "INFO", log_file: Path | None = None,
          cache: bool = True, cache_dir: Path | None = None) -> int:
    """Serve over stdio or TCP."""
    tune_threads()
    server = create_server()
    server.session.use_cache, server.session.cache_dir = cache, cache_dir
    setup_logging(server, log_level, log_file)
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
        leave(server, 0)
    return 0


def leave(server: BatonServer, code: int) -> None:
    """End the process once the client is served: what is queued for it and the log are
    written and ShellCheck processes killed, but no thread is
    waited for. A checker thread stuck in a system call (a read the kernel never answers)
    would otherwise keep a server its client told to exit alive for ever: the interpreter
    joins the executor's threads before it exits."""
    from ..rules.shellcheck_run import kill_running  # loaded by the checks: none may have run

    server.flush_writer(5.0)
    kill_running()  # the one exit handler that matters here; `os._exit` runs none
    logging.shutdown()
    os._exit(code)

