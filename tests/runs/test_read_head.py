"""`confine.read_head`, the checker's reader: real FIFOs, real symlinks, real files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from baton_lsp.runs.confine import NotRegular, OutsideLink, UnsafePath, read_head

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32",
                                reason="needs FIFOs and POSIX symlinks")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "d").mkdir(parents=True)
    (tmp_path / "ws" / "d" / "f.txt").write_bytes(b"0123456789")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "secret.txt").write_bytes(b"SECRET")
    return tmp_path / "ws"


def test_head_size_and_offsets(root: Path) -> None:
    assert read_head(root, root / "d" / "f.txt", 4) == (b"0123", 10)
    assert read_head(root, "d/f.txt", 100) == (b"0123456789", 10)
    assert read_head(root, "d/f.txt", 3, 5) == (b"567", 10)
    assert read_head(root, "d/f.txt", 4, -4) == (b"6789", 10)
    assert read_head(root, "d/f.txt", 100, -50) == (b"0123456789", 10)
    assert read_head(root, "d/f.txt", 0) == (b"", 10)


def test_a_fifo_is_refused_not_waited_on(root: Path) -> None:
    os.mkfifo(root / "d" / "pipe")
    with pytest.raises(NotRegular, match="not a regular file"):
        read_head(root, "d/pipe", 10)
    with pytest.raises(NotRegular):
        read_head(root, "d", 10)  # a directory is no file either


def test_links_inside_are_followed_links_out_are_refused(root: Path) -> None:
    (root / "in.txt").symlink_to("d/f.txt")
    (root / "abs.txt").symlink_to(root / "d" / "f.txt")
    assert read_head(root, "in.txt", 2)[0] == b"01"
    assert read_head(root, "abs.txt", 2)[0] == b"01"
    (root / "out.txt").symlink_to(root.parent / "out" / "secret.txt")
    (root / "rel.txt").symlink_to("../out/secret.txt")
    (root / "dir").symlink_to(root.parent / "out")
    for name, link in (("out.txt", "out.txt"), ("rel.txt", "rel.txt"),
                       ("dir/secret.txt", "dir")):
        with pytest.raises(OutsideLink) as caught:
            read_head(root, name, 10)
        assert caught.value.link == link and "SECRET" not in str(caught.value)
    with pytest.raises(UnsafePath):  # not below the root at all
        read_head(root, root.parent / "out" / "secret.txt", 10)
