"""`baton worker ADDRESS`: a Dask worker for Baton's agent steps (`executor = "dask"`).

A thin wrapper over `distributed.Worker`: it runs Baton's preflight for the agent CLIs
installed on this machine (found on PATH, answering `--version`, with credentials) and
advertises each one that passes as a resource (`claude=1`, `codex=1`, `gemini=1`,
`opencode=1`; `command=1` and `script=1` always), so a step is only sent to a worker that
can run its runner. Before it joins, it stops agent groups that a killed worker on this
machine left running (their own session outlives it)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from ..terminal import terminal_safe

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


def add_worker_parser(sub: Any) -> None:
    worker = sub.add_parser("worker", help="serve agent steps on a Dask cluster (the "
                            "baton-lsp[dask] extra; `[workflow] executor = \"dask\"`)")
    worker.add_argument("address", help="the scheduler: tls://host:port, or "
                        "tcp://127.0.0.1:port on this machine")
    worker.add_argument("--tls-ca", help="CA certificate (PEM) of the cluster (tls://)")
    worker.add_argument("--tls-cert", help="this worker's certificate (PEM)")
    worker.add_argument("--tls-key", help="this worker's private key (PEM)")
    worker.add_argument("--slots", type=int, default=1, help="steps of one runner this "
                        "worker runs at once (each advertised resource's amount; default 1)")
    worker.add_argument("--name", help="the worker's name in the cluster")
    worker.add_argument("--local-directory", type=Path, default=None,
                        help="where steps get their scratch directories (default: Dask's)")
    worker.add_argument("--death-timeout", type=float, default=None,
                        help="seconds to keep trying an unreachable scheduler, then exit")
    worker.add_argument("--version-timeout", type=float, default=90.0,
                        help="seconds each agent CLI may take to answer `--version`")


def advertised(slots: int, version_timeout: float) -> tuple[dict[str, float], list[str]]:
    """The resources this machine offers and, for each agent CLI left out, why."""
    # `baton worker` alone: every command builds this parser
    from ..model.config import WorkflowSettings
    from ..workflow.preflight import cli_version, has_credentials
    from ..workflow.runners import CLI_RUNNERS

    settings = WorkflowSettings()
    resources: dict[str, float] = {"script": float(slots), "command": float(slots)}
    passed: list[str] = []
    home = Path.home()
    for cli in CLI_RUNNERS:
        exe = getattr(settings, cli).executable
        found = shutil.which(exe)
        if found is None:
            passed.append(f"{cli}: `{exe}` is not on PATH")
            continue
        try:
            version = cli_version(found, os.environ, version_timeout)
        except (OSError, ValueError) as exc:
            passed.append(f"{cli}: {exc}")
            continue
        if not has_credentials(cli, home, os.environ):
            passed.append(f"{cli} {version}: no credentials on this machine")
            continue
        resources[cli] = float(slots)
    return resources, passed


async def _serve(args: argparse.Namespace, resources: dict[str, float]) -> int:
    # the optional dask extra, for `baton worker` alone
    from distributed import Worker
    from distributed.security import Security

    from ..workflow.executors import parse_scheduler
    from ..workflow.executors.task import stop_own_groups, sweep_orphans, worker_dir

    _, address = parse_scheduler(args.address)
    tls = (args.tls_ca, args.tls_cert, args.tls_key)
    if any(tls) and not all(tls):
        raise ValueError("--tls-ca, --tls-cert and --tls-key go together")
    if address.startswith("tls://") and not all(tls):
        raise ValueError(f"{address}: tls:// needs --tls-ca, --tls-cert and --tls-key")
    secure: Any = Security
    security = secure(tls_ca_file=args.tls_ca, tls_worker_cert=args.tls_cert,
                        tls_worker_key=args.tls_key, require_encryption=True) \
        if all(tls) else None
    swept = await asyncio.to_thread(sweep_orphans, worker_dir())
    if swept:
        print(f"baton worker: stopped {len(swept)} agent group(s) a killed worker left",
              file=sys.stderr)
    nthreads = max(1, int(sum(resources.values())))
    kwargs: dict[str, Any] = {"nthreads": nthreads, "resources": resources,
                              "security": security, "name": args.name,
                              "dashboard": False,
                              "host": "127.0.0.1" if _on_this_machine(address) else None}
    if _on_this_machine(address):
        kwargs["dashboard_address"] = "127.0.0.1:0"
    if args.local_directory is not None:
        kwargs["local_directory"] = str(args.local_directory)
    if args.death_timeout is not None:
        kwargs["death_timeout"] = args.death_timeout
    worker = await Worker(address, **kwargs)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.close()))
    print(f"baton worker {worker.address}: {', '.join(f'{k}={v:g}' for k, v in resources.items())}",
          file=sys.stderr, flush=True)
    try:
        await worker.finished()
    finally:
        left = await asyncio.to_thread(stop_own_groups, worker_dir())
        if left:
            print(f"baton worker: stopped {len(left)} agent group(s) still running as it left",
                  file=sys.stderr)
    return EXIT_OK


def _on_this_machine(address: str) -> bool:
    """A scheduler on the loopback interface: the worker listens there too, never on the
    machine's other interfaces."""
    host = address.partition("://")[2].rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")


def cmd_worker(args: argparse.Namespace) -> int:
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("baton worker: error: Dask is not installed here: pip install "
              "'baton-lsp[dask]'", file=sys.stderr)
        return EXIT_ERROR
    if args.slots < 1:
        print("baton worker: error: --slots must be 1 or more", file=sys.stderr)
        return EXIT_ERROR
    # `baton worker` alone: every command builds this parser
    from ..workflow.executors import parse_scheduler

    try:  # the address first: a refused one is said before preflight runs the CLIs
        if parse_scheduler(args.address)[0] is not None:
            raise ValueError("baton worker needs a scheduler address, not local:N")
    except ValueError as exc:
        print(terminal_safe(f"baton worker: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    resources, passed = advertised(args.slots, args.version_timeout)
    for line in passed:
        print(terminal_safe(f"baton worker: not offered: {line}"), file=sys.stderr)
    try:
        return asyncio.run(_serve(args, resources))
    except (ValueError, OSError, TimeoutError) as exc:
        print(terminal_safe(f"baton worker: error: {exc}"), file=sys.stderr)
        return EXIT_FAIL
