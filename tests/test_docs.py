"""The README is a short front page and the reference lives in docs/ (issue 38): every
relative link of the two resolves (file and heading), every page of docs/ is reachable from
the README, and the README's test command is the one `.ci/run` runs."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
INSTALL_PREFIX = [
    "python3 -m venv .venv",
    ".venv/bin/pip install -q --require-hashes -r requirements.lock.txt",
    ".venv/bin/pip install -q --no-deps --no-build-isolation -e .",
]
TEST_COMMAND = ".venv/bin/python -m pytest -q"


def _prose(text: str) -> list[str]:
    """The lines outside code fences, inline code removed: links in code are examples."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def _anchors(path: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in _prose(path.read_text(encoding="utf-8")) if re.match(r"#{1,6} ", line)}


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _bash_blocks(path: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", path.read_text(encoding="utf-8"), re.DOTALL)


def test_every_relative_link_resolves_to_a_file_and_heading() -> None:
    broken = []
    for page in _pages():
        for line in _prose(page.read_text(encoding="utf-8")):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # a web or mail address
                file, _, fragment = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                if not dest.exists():
                    broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
                elif fragment and fragment not in _anchors(dest):
                    broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_page_that_reaches_every_doc() -> None:
    text = README.read_text(encoding="utf-8")
    headings = [line for line in text.split("\n") if line.startswith("## ")]
    assert headings == ["## Install", "## First run", "## Read more"], headings
    assert len(text.split("\n")) <= 130, "the reference belongs in docs/, not in the README"
    linked = {target.partition("#")[0] for target in LINK.findall(text)}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert len(pages) >= 6 and pages <= linked, sorted(pages - linked)


def test_the_readme_commands_install_the_lock_and_ci_runs_the_same_tests() -> None:
    """The two set-up commands a newcomer pastes: the example run and the whole suite, both
    after the same locked install; `.ci/run` does that install and runs that pytest."""
    blocks = [b.split(" && ") for b in _bash_blocks(README)]
    example = [b for b in blocks if any("examples/workspace" in part for part in b)]
    suite = [b for b in blocks if b[-1] == TEST_COMMAND]
    assert len(example) == 1 and len(suite) == 1, blocks
    assert example[0][:3] == INSTALL_PREFIX and suite[0] == [*INSTALL_PREFIX, TEST_COMMAND]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").split("\n")
    assert any(line.strip() == TEST_COMMAND for line in ci), "`.ci/run` runs another pytest"
    assert any("--require-hashes -r requirements.lock.txt" in line for line in ci)
    assert any("--no-deps --no-build-isolation -e ." in line for line in ci)
