"""The long fuzz run: hostile inputs through the checker, `baton check` and the server.

    python benchmarks/fuzz.py [--documents 100000] [--trees 2000] [--hostile 2000]
                              [--server 2000] [--out DIR] [--seed N]

Four parts, each with the strategies of `tests/fuzzing.py` (the suite runs them for a few
seconds; this runs them for as long as asked):

* documents: plans, agents, commands, skills, state files, error logs, checkpoints and
  registries, lone surrogates included, through the rules (`check_text`), alternately with
  ShellCheck off and on every command;
* trees: whole generated workspaces (invalid bytes, BOMs, NULs, escape sequences, broken
  configuration) through `baton check` in this process, its stdout and stderr captured,
  alternately in the JSON and the text format;
* hostile: trees with FIFOs, symlinks out of the workspace (to a file holding a secret),
  dangling and looping links and directories at document and run-record paths, their text
  carrying terminal escapes, through `baton check` (text, JSON, SARIF), `baton status` and
  `baton graph`: a leaked secret or a raw escape in a text output counts as an error too;
* server: one `baton lsp` process fed generated documents, edits in and out of range,
  requests of every kind with odd positions and arguments, odd URIs, and broken frames
  (missing, negative, non-numeric, huge and short Content-Length, garbage, bodies that
  are not JSON-RPC).

Counted as internal errors: a BTN000 finding or diagnostic, a parser's "internal parser
error", an exception out of the checker, a traceback or "internal error" on stderr, a control
character or escape sequence of the input in the text format or on stderr (what a terminal
would run), an
InternalError response, an error the server shows or logs, a request not answered within
30 s, and a server that is no longer running. Inputs that caused one are written to
`--out`. The summary line gives the inputs tried and the BTN000 / internal-error counts.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tests.fuzzing import (  # noqa: E402
    FRAME_BREAKERS,
    KINDS,
    ODD_URIS,
    REL_PATHS,
    document,
    edit,
    request,
    tree,
)

HANG_SECONDS = 30.0
ACCEPTED_ERRORS = {-32602, -32800, -32801, -32803}


class Tally:
    """Inputs tried and problems found, by part; problem inputs are kept in `out`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.tried: collections.Counter[str] = collections.Counter()
        self.btn000 = 0
        self.problems: collections.Counter[str] = collections.Counter()
        self.kept = 0

    def problem(self, kind: str, detail: str, data: bytes | str | None = None) -> None:
        self.problems[kind] += 1
        if kind == "BTN000":
            self.btn000 += 1
        print(f"  ! {kind}: {detail[:300]}", flush=True)
        if data is not None and self.kept < 200:
            self.kept += 1
            raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
            (self.out / f"{self.kept:03d}-{kind}.bin").write_bytes(raw)
            (self.out / f"{self.kept:03d}-{kind}.txt").write_text(detail, encoding="utf-8")


class Hung(BaseException):
    """Raised by the watchdog (a BaseException: no `except Exception` may swallow it)."""


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    def alarm(signum: int, frame: Any) -> None:
        raise Hung(f"no result within {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _settings(n: int, value: int) -> Any:
    """Generate only (no shrinking: every example is counted and kept), seeded."""
    def apply(fn: Any) -> Any:
        return seed(value)(settings(max_examples=n, phases=[Phase.generate], deadline=None,
                                    database=None,
                                    suppress_health_check=list(HealthCheck))(fn))
    return apply


# -- documents ----------------------------------------------------------------------------


def fuzz_documents(tally: Tally, n: int, rng_seed: int) -> None:
    from baton_lsp.model import BatonConfig, Kind
    from baton_lsp.rules.engine import check_text

    kinds = {"plan": Kind.PLAN, "agent": Kind.AGENT, "command": Kind.COMMAND,
             "skill": Kind.SKILL, "state": Kind.STATE, "errors": Kind.ERRORS_LOG,
             "checkpoint": Kind.CHECKPOINT, "registry": Kind.REGISTRY}
    configs = [BatonConfig(shellcheck="off"), BatonConfig(shellcheck="all")]
    started = time.monotonic()

    @_settings(n, rng_seed)
    @given(st.sampled_from(KINDS).flatmap(lambda k: st.tuples(st.just(k), document(k, True))))
    def run(item: tuple[str, str]) -> None:
        kind, text = item
        config = configs[tally.tried["documents"] % 2]
        tally.tried["documents"] += 1
        try:
            findings = within(HANG_SECONDS, lambda: check_text(
                kinds[kind], text, "/ws/" + REL_PATHS[kind], config=config))
        except Hung as exc:
            tally.problem("hang", f"{kind}: {exc}", text)
            return
        except Exception as exc:
            tally.problem("exception", f"{kind}: {type(exc).__name__}: {exc}", text)
            return
        for f in findings:
            if f.code == "BTN000":
                tally.problem("BTN000", f"{kind}: {f.message}", text)
            elif f.code == "BTN400" and "internal parser error" in f.message:
                tally.problem("parser", f"{kind}: {f.message}", text)
        if tally.tried["documents"] % 5000 == 0:
            rate = tally.tried["documents"] / (time.monotonic() - started)
            print(f"  documents: {tally.tried['documents']} ({rate:.0f}/s)", flush=True)

    run()


# -- trees through baton check ------------------------------------------------------------


def fuzz_trees(tally: Tally, n: int, rng_seed: int) -> None:
    from baton_lsp.cli.main import main
    from baton_lsp.terminal import terminal_safe

    base = Path(tempfile.mkdtemp(prefix="baton-fuzz-trees-"))
    logging.disable(logging.NOTSET)  # stderr is inspected here: tracebacks must show

    @_settings(n, rng_seed)
    @given(tree())
    def run(files: dict[str, bytes]) -> None:
        tally.tried["trees"] += 1
        root = base / f"t{tally.tried['trees']}"
        for rel, data in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        fmt = "text" if tally.tried["trees"] % 2 else "json"
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = within(HANG_SECONDS, lambda: main(
                    ["check", "--jobs", "1", "--format", fmt, str(root)]))
        except Hung as exc:
            tally.problem("hang", f"baton check: {exc}", json.dumps(
                {k: v.decode("utf-8", "replace") for k, v in files.items()}))
            return
        finally:
            logging.getLogger().handlers.clear()  # main() adds its stderr handler each run
        stderr = err.getvalue()
        dump = json.dumps({k: v.decode("utf-8", "replace") for k, v in files.items()})
        if "Traceback" in stderr or "internal error" in stderr:
            tally.problem("stderr", stderr, dump)
        if code not in (0, 1, 2):
            tally.problem("exit", f"exit {code}: {stderr}", dump)
        for text in (out.getvalue(), stderr) if fmt == "text" else (stderr,):
            if terminal_safe(text, multiline=True) != text:
                tally.problem("terminal", f"raw control characters in: {text[:500]!r}", dump)
        if code in (0, 1) and fmt == "json":
            for f in json.loads(out.getvalue()):
                if f["code"] == "BTN000":
                    tally.problem("BTN000", f"tree: {f['message']}", dump)
        elif code in (0, 1) and " BTN000 " in out.getvalue():
            tally.problem("BTN000", f"tree: {out.getvalue()[:500]}", dump)
        shutil.rmtree(root, ignore_errors=True)

    try:
        run()
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- FIFOs, outside links and escapes through check, status and graph -----------------------


def _unblock(root: Path, specials: dict[str, str]) -> None:
    """After a hang: open each planted FIFO for writing (non-blocking) and close it, so a
    reader stuck in its open or read sees end of file and the run can go on."""
    for rel, what in specials.items():
        if what == "fifo":
            with contextlib.suppress(OSError):
                os.close(os.open(root / rel, os.O_WRONLY | os.O_NONBLOCK))


def fuzz_hostile(tally: Tally, n: int, rng_seed: int) -> None:
    """Generated trees with FIFOs, links out of the workspace (to a file holding `SECRET`),
    dangling and looping links and directories at document and run-record paths, their text
    carrying terminal escapes, through `baton check` (text, JSON, SARIF), `baton status`
    (text, JSON, one workflow) and `baton graph`. Counted: a hang, a traceback or internal
    error, an exit status other than 0–2, the outside file's content in any output, a raw
    escape in a text output."""
    from tests.fuzzing import SECRET, hostile_commands, hostile_tree, plant

    from baton_lsp.cli.main import main
    from baton_lsp.terminal import terminal_safe

    base = Path(tempfile.mkdtemp(prefix="baton-fuzz-hostile-"))
    logging.disable(logging.NOTSET)

    @_settings(n, rng_seed)
    @given(hostile_tree())
    def run(generated: tuple[dict[str, bytes], dict[str, str]]) -> None:
        files, specials = generated
        tally.tried["hostile"] += 1
        here = base / f"h{tally.tried['hostile']}"
        root = here / "ws"
        plant(root, here / "outside", files, specials)
        dump = json.dumps({"files": {k: v.decode("utf-8", "replace") for k, v in files.items()},
                           "specials": specials})
        for argv, text in hostile_commands(root):
            out, err = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = within(HANG_SECONDS, lambda argv=argv: main(argv))
            except Hung as exc:
                tally.problem("hang", f"baton {argv[0]}: {exc}", dump)
                _unblock(root, specials)
                continue
            finally:
                logging.getLogger().handlers.clear()
            shown = out.getvalue() + err.getvalue()
            if "Traceback" in err.getvalue() or "internal error" in err.getvalue():
                tally.problem("stderr", f"baton {argv[0]}: {err.getvalue()}", dump)
            if code not in (0, 1, 2):
                tally.problem("exit", f"baton {argv[0]}: exit {code}", dump)
            if SECRET.decode() in shown:
                tally.problem("leak", f"baton {' '.join(argv[:-1])}: {specials}", dump)
            if text and terminal_safe(shown, multiline=True) != shown:
                tally.problem("escape", f"baton {' '.join(argv[:-1])}: {shown[:200]!r}", dump)
        shutil.rmtree(here, ignore_errors=True)

    try:
        run()
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- the server ---------------------------------------------------------------------------


BROKEN = [
    *FRAME_BREAKERS,
    lambda b: b"Content-Length: 9\r\n\r\n{not json",
    lambda b: b"Content-Length: 7\r\n\r\n[1,2,3]",
]


def fuzz_server(tally: Tally, n: int, rng_seed: int) -> None:
    from bench_lsp import Client  # type: ignore[import-not-found]
    from tests.conftest import EXAMPLE

    base = Path(tempfile.mkdtemp(prefix="baton-fuzz-server-"))
    root = base / "ws"
    shutil.copytree(EXAMPLE, root)
    client = Client(root, {"debounce": 0}, log_level="INFO")
    client.initialize()
    counter = [0]
    rng = random.Random(rng_seed)

    def check_messages(msgs: list[dict[str, Any]], what: str) -> None:
        for msg in msgs:
            method = msg.get("method")
            params = msg.get("params") or {}
            if method == "textDocument/publishDiagnostics":
                for d in params.get("diagnostics", []):
                    if d.get("code") == "BTN000":
                        tally.problem("BTN000", f"{what}: {d.get('message')}")
            elif method in ("window/showMessage", "window/logMessage") and \
                    params.get("type") == 1 and "message framing" not in params["message"] \
                    and "not JSON-RPC" not in params["message"] \
                    and "cannot read" not in params["message"]:
                tally.problem("logged", f"{what}: {params['message']}")

    def ask(method: str, params: Any, what: str) -> None:
        client.next_id += 1
        rid = client.next_id
        client.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        seen = []
        deadline = time.monotonic() + HANG_SECONDS
        while True:
            try:
                msg = client.wait(timeout=max(0.1, deadline - time.monotonic()))
            except Exception:
                tally.problem("hang", f"{what}: {method} unanswered", json.dumps(params))
                raise
            seen.append(msg)
            if msg.get("id") == rid and "method" not in msg:
                break
        check_messages(seen, what)
        error = msg.get("error")
        if error and error.get("code") not in ACCEPTED_ERRORS:
            tally.problem("internal", f"{method}: {error}", json.dumps(params))

    @_settings(n, rng_seed)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        counter[0] += 1
        kind = data.draw(st.sampled_from(KINDS))
        if data.draw(st.integers(0, 9)) == 0:
            uri = data.draw(st.sampled_from(ODD_URIS))
        else:
            uri = (root / REL_PATHS[kind].replace("fuzz", f"fuzz{counter[0]}")).as_uri()
        text = data.draw(document(kind, surrogates=True))
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "markdown", "version": 1, "text": text}})
        tally.tried["server documents"] += 1
        version = 1
        for _ in range(data.draw(st.integers(0, 8))):
            version += 1
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [data.draw(edit())]})
            tally.tried["server edits"] += 1
        for _ in range(data.draw(st.integers(1, 6))):
            method, params = data.draw(request(uri))
            ask(method, params, f"{kind} {uri[:80]}")
            tally.tried["server requests"] += 1
        if data.draw(st.integers(0, 3)) == 0:
            broken = rng.choice(BROKEN)(json.dumps(
                {"jsonrpc": "2.0", "id": 10**9 + counter[0], "method": "workspace/symbol",
                 "params": {"query": "x"}}).encode())
            assert client.proc.stdin is not None
            client.proc.stdin.write(broken)
            client.proc.stdin.flush()
            tally.tried["server broken frames"] += 1
            ask("workspace/symbol", {"query": "Phase"}, "after a broken frame")
        if data.draw(st.booleans()):
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        if client.proc.poll() is not None:
            tally.problem("exit", f"server exited with {client.proc.returncode}")
            raise SystemExit(1)
        if counter[0] % 500 == 0:
            print(f"  server: {counter[0]} sessions, RSS {client.rss_mb():.0f} MB", flush=True)

    try:
        run()
    finally:
        alive = client.proc.poll() is None
        client.close()
        shutil.rmtree(base, ignore_errors=True)
        if not alive:
            tally.problem("exit", "the server was not running at the end")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--trees", type=int, default=2_000)
    parser.add_argument("--hostile", type=int, default=2_000,
                        help="trees with FIFOs, outside links and terminal escapes, each "
                        "through check, status and graph")
    parser.add_argument("--server", type=int, default=2_000,
                        help="server sessions (a document, edits, requests, maybe a broken "
                        "frame each)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--out", type=Path, default=None,
                        help="where inputs that caused a problem are written")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="baton-fuzz-out-"))
    out.mkdir(parents=True, exist_ok=True)
    logging.disable(logging.CRITICAL)  # the checker's own logs: problems are counted above
    tally = Tally(out)
    started = time.monotonic()
    for name, part, count in (("documents", fuzz_documents, args.documents),
                              ("trees", fuzz_trees, args.trees),
                              ("hostile", fuzz_hostile, args.hostile),
                              ("server", fuzz_server, args.server)):
        if count <= 0:
            continue
        t = time.monotonic()
        print(f"{name}: {count} examples", flush=True)
        part(tally, count, args.seed)
        print(f"{name}: done in {time.monotonic() - t:.0f} s", flush=True)
    total = sum(tally.tried.values())
    print(f"\ninputs tried: {total:,} ({', '.join(f'{k} {v:,}' for k, v in tally.tried.items())})")
    print(f"BTN000: {tally.btn000}; all internal errors: {sum(tally.problems.values())} "
          f"({dict(tally.problems) or 'none'}); {time.monotonic() - started:.0f} s; "
          f"inputs kept in {out}" if tally.kept else
          f"BTN000: {tally.btn000}; all internal errors: {sum(tally.problems.values())}; "
          f"{time.monotonic() - started:.0f} s")
    return 1 if tally.problems else 0


if __name__ == "__main__":
    sys.exit(main())
