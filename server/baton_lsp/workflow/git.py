"""Git as the workflow uses it: the repository around a workspace, its changes, worktrees,
commits and merges.

Every call is a `git` argv list (never a shell) with a clean environment: `LC_ALL=C` so the
output parses, no pager, no prompt, no inherited `GIT_DIR`/`GIT_WORK_TREE` (a hook running
`baton` must not redirect it), and the user's hooks off for Baton's own commits and
merges — the phase's work is committed as the agent left it; the user's hooks run on what
they commit and push themselves. An identity is supplied only when the repository has none.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..runs import confine

GIT_TIMEOUT = 120.0
BATON_IDENTITY = ("Baton", "baton@localhost")
_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
         "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_NAMESPACE")
_QUIET_HOOKS = ("-c", "core.hooksPath=/dev/null")
_MARKERS_ONLY = ("-c", "core.whitespace=-blank-at-eol,-blank-at-eof,-space-before-tab")
"""`diff --check` reports conflict markers whatever this says; the default whitespace
errors are turned off so only markers are reported (a repository's own `whitespace`
attributes may still add some: those lines are not markers and are dropped)."""
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")



def _small(path: Path) -> str:
    """A ref file git wrote (HEAD, a loose ref): a FIFO planted there is refused, not
    waited on; anything odd falls back to asking git."""
    return confine.read_regular(path, 4096).decode("ascii", "replace").strip()

class GitError(Exception):
    """A git command failed; the message names the command and what git said."""

    def __init__(self, args: list[str], code: int, output: str) -> None:
        self.code = code
        self.output = output.strip()
        super().__init__(f"git {' '.join(args)} failed (exit {code}): "
                         f"{self.output[-600:] or 'no output'}")


_NO_AUTO_MAINTENANCE = (("maintenance.auto", "false"), ("gc.auto", "0"))
"""Baton's commits and merges start no `git maintenance run --auto` / `gc --auto`: one
killed with the engine's run leaves `objects/maintenance.lock`, and every later automatic
maintenance of the repository is then skipped. The user's own git keeps doing it."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_OPTIONAL_LOCKS="0")
    # appended to whatever GIT_CONFIG_COUNT the caller's environment already sets
    try:
        count = max(0, int(env.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        count = 0
    for key, value in _NO_AUTO_MAINTENANCE:
        env[f"GIT_CONFIG_KEY_{count}"], env[f"GIT_CONFIG_VALUE_{count}"] = key, value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    return env


def _git(args: list[str], cwd: Path, check: bool = True, env: dict[str, str] | None = None,
         input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run git so that the engine's death never cuts it off mid-operation: in a session of
    its own (a signal to the engine's process group, Ctrl-C included, does not reach it)
    and with its input and output in files, not pipes (a pipe whose reader died would kill
    it with SIGPIPE at its next write, half-way through a merge). What a git left running
    by a dead engine finishes is reconciled by the next holder of the repository
    (`isolation.Isolation.recover`), which waits for it first."""
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.TemporaryFile() as given:
            if input is not None:
                given.write(input.encode("utf-8", "surrogateescape"))
                given.seek(0)
            proc = subprocess.run(["git", *args], cwd=cwd, env=env or _env(),
                                  stdin=given if input is not None else subprocess.DEVNULL,
                                  stdout=out, stderr=err, timeout=GIT_TIMEOUT, check=False,
                                  start_new_session=True)
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "surrogateescape")
            stderr = err.read().decode("utf-8", "surrogateescape")
    except subprocess.TimeoutExpired:
        raise GitError(args, -1, f"no answer within {GIT_TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise GitError(args, -1, str(exc)) from None
    done = subprocess.CompletedProcess(["git", *args], proc.returncode, stdout, stderr)
    if check and done.returncode != 0:
        raise GitError(args, done.returncode, stderr or stdout)
    return done


def _paths(output: str) -> list[str]:
    return [p for p in output.split("\0") if p]


@dataclass(frozen=True)
class Repo:
    """The repository whose working tree holds the workspace (its main worktree)."""

    top: Path

    def run(self, *args: str, cwd: Path | None = None, check: bool = True,
            hooks: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        argv = [*(() if hooks else _QUIET_HOOKS), *args]
        return _git(argv, cwd or self.top, check, self.env, input)

    @cached_property
    def env(self) -> dict[str, str]:
        """The environment of every call, with Baton's identity when git has none."""
        env = _env()
        if _git(["config", "--get", "user.email"], self.top, check=False, env=env).returncode:
            name, email = BATON_IDENTITY
            env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email,
                       GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email)
        return env

    def head(self) -> str | None:
        """The commit the main worktree's HEAD names, None on an unborn branch. Read from
        the files git just wrote when it can (a loose ref), else asked of git."""
        with contextlib.suppress(OSError):
            text = _small(self.git_dir / "HEAD")
            if _SHA.match(text):
                return text
            if text.startswith("ref: refs/heads/"):
                found = self.ref(text[5:])
                if found is not None or not self._has_packed_refs():
                    return found
        return self.ref("HEAD")

    def ref(self, name: str) -> str | None:
        """The commit a ref names (`refs/heads/x`, or anything rev-parse takes)."""
        if name.startswith("refs/heads/"):
            with contextlib.suppress(OSError):
                text = _small(self.common_dir / name)
                if _SHA.match(text):
                    return text
        proc = self.run("rev-parse", "-q", "--verify", f"{name}^{{commit}}", check=False)
        return proc.stdout.strip() or None

    def _has_packed_refs(self) -> bool:
        return (self.common_dir / "packed-refs").exists()

    def branch(self) -> str | None:
        """The checked-out branch, None when HEAD is detached."""
        proc = self.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return proc.stdout.strip() or None

    def changes(self, excludes: list[str]) -> tuple[list[str], list[str]]:
        """(tracked files with staged, unstaged or unmerged changes; untracked files not
        ignored), outside the excluded pathspecs, relative to the top: one `git status`."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                       "--no-renames", "--", ".", *_excluded(excludes)).stdout
        tracked: list[str] = []
        untracked: list[str] = []
        for entry in _paths(out):
            (untracked if entry.startswith("??") else tracked).append(entry[3:])
        return tracked, untracked

    def stage_all(self, excludes: list[str], cwd: Path | None = None) -> None:
        """`git add -A` of the working tree at `cwd`, outside the excluded pathspecs."""
        self.run("add", "-A", "--", ".", *_excluded(excludes), cwd=cwd)

    def blob_ids(self, commit: str, paths: list[str]) -> dict[str, str]:
        """{path: blob id} of those paths (relative to the top) in `commit`."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit, "--",
                       *[f":(top,literal){p}" for p in paths]).stdout
        found = {}
        for entry in _paths(out):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                found[path] = parts[2]
        return found

    def hash_files(self, paths: list[str]) -> dict[str, str]:
        """{path: the blob id git would give the working tree's file} (regular files)."""
        files = [p for p in paths if "\n" not in p and (self.top / p).is_file()
                 and not (self.top / p).is_symlink()]
        if not files:
            return {}
        out = self.run("hash-object", "--stdin-paths", input="\n".join(files) + "\n").stdout
        return dict(zip(files, out.split(), strict=False))

    def staged(self, cwd: Path | None = None) -> list[str]:
        return _paths(self.run("diff", "--cached", "--name-only", "-z", cwd=cwd).stdout)

    def conflict_markers(self, cwd: Path | None = None) -> list[str]:
        """Files whose staged content adds conflict markers relative to HEAD (what a commit
        made now would record): git's own `--check` finds the candidate lines, then a file
        counts only with both an opening `<<<<<<<` and a closing `>>>>>>>` line, so a
        Markdown heading underlined with seven `=` is not one."""
        proc = self.run(*_MARKERS_ONLY, "diff", "--cached", "--check", "--no-ext-diff",
                        "HEAD", cwd=cwd, check=False)
        if proc.returncode not in (0, 2):
            raise GitError(["diff", "--cached", "--check"], proc.returncode,
                           proc.stderr or proc.stdout)
        lines: dict[str, set[int]] = {}
        for text in proc.stdout.splitlines():
            where, sep, _ = text.rpartition(": leftover conflict marker")
            path, _, number = where.rpartition(":")
            if sep and path and number.isdigit():
                lines.setdefault(path, set()).add(int(number))
        marked = []
        for path, numbers in lines.items():
            blob = self.run("show", f":{path}", cwd=cwd, check=False)
            if blob.returncode:  # cannot be read back: count it, never commit blind
                marked.append(path)
                continue
            found = {ln[:1] for n, ln in enumerate(blob.stdout.splitlines(), 1)
                     if n in numbers}
            if {"<", ">"} <= found:
                marked.append(path)
        return sorted(marked)

    def unmerged(self) -> list[str]:
        return _paths(self.run("diff", "--name-only", "--diff-filter=U", "-z").stdout)

    @cached_property
    def git_dir(self) -> Path:
        """The main worktree's git directory (`.git`, or where a `.git` file points)."""
        return Path(self.run("rev-parse", "--absolute-git-dir").stdout.strip())

    @cached_property
    def common_dir(self) -> Path:
        """Where the clone's shared files are (`info/exclude`): the git directory, or the
        main one's when the workspace is itself a linked worktree."""
        rel = self.run("rev-parse", "--git-common-dir").stdout.strip()
        return (self.top / rel).resolve()

    def merging(self) -> bool:
        """A merge is in progress in the main worktree (MERGE_HEAD exists)."""
        return (self.git_dir / "MERGE_HEAD").exists()

    def contains(self, commit: str, tip: str = "HEAD") -> bool:
        """`commit` is `tip` or one of its ancestors."""
        return self.run("merge-base", "--is-ancestor", commit, tip, check=False
                        ).returncode == 0

    def commit(self, message: str, cwd: Path | None = None, allow_nothing: bool = False
               ) -> None:
        """Commit what is staged (hooks off); with `allow_nothing`, nothing staged is no
        commit rather than an error."""
        proc = self.run("commit", "-q", "--no-verify", "-m", message, cwd=cwd, hooks=False,
                        check=False)
        if proc.returncode and not (allow_nothing and not self.staged(cwd)):
            raise GitError(["commit"], proc.returncode, proc.stderr or proc.stdout)

    def index_blob(self, rel: str) -> tuple[str, bytes] | None:
        """(mode, bytes) of the file `rel` (from the top) as the index holds it, stage 0
        only; None when it is untracked or conflicted."""
        out = self.run("ls-files", "-s", "-z", "--", f":(top,literal){rel}").stdout
        entries = [e for e in out.split("\0") if e]
        if len(entries) != 1:
            return None
        meta, _, _ = entries[0].partition("\t")
        mode, sha, stage = meta.split()
        if stage != "0" or not mode.startswith("100"):
            return None
        return mode, self._bytes(["cat-file", "blob", sha])

    def stage_blob(self, rel: str, mode: str, data: bytes) -> None:
        """Put `data` in the index as `rel` (stored as is: no filters, no working tree)."""
        sha = self._bytes(["hash-object", "-w", "--no-filters", "--stdin"], data)
        self.run("update-index", "--cacheinfo", f"{mode},{sha.decode().strip()},{rel}")

    def output(self, *args: str) -> bytes:
        """A git call whose output is bytes (a bundle written to stdout), never decoded."""
        return self._bytes(list(args))

    def _bytes(self, args: list[str], data: bytes = b"") -> bytes:
        """A git call whose input or output is file content: bytes, never decoded."""
        try:
            proc = subprocess.run(["git", *args], cwd=self.top, env=self.env, input=data,
                                  capture_output=True, timeout=GIT_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise GitError(args, -1, f"no answer within {GIT_TIMEOUT:.0f} s") from None
        except OSError as exc:
            raise GitError(args, -1, str(exc)) from None
        if proc.returncode != 0:
            raise GitError(args, proc.returncode, proc.stderr.decode(errors="replace"))
        return proc.stdout

    def worktrees(self) -> list[tuple[Path, str | None]]:
        """(path, branch) of every worktree git knows, the main one first."""
        out = self.run("worktree", "list", "--porcelain", "-z").stdout
        trees: list[tuple[Path, str | None]] = []
        path: Path | None = None
        branch: str | None = None
        for field in [*out.split("\0"), ""]:
            if field.startswith("worktree "):
                path, branch = Path(field[9:]), None
            elif field.startswith("branch refs/heads/"):
                branch = field[len("branch refs/heads/"):]
            elif not field and path is not None:
                trees.append((path, branch))
                path = None
        return trees

    def branches(self, pattern: str) -> list[str]:
        out = self.run("for-each-ref", "--format=%(refname:short)", f"refs/heads/{pattern}")
        return [b for b in out.stdout.splitlines() if b]


def _excluded(paths: list[str]) -> list[str]:
    return [f":(exclude,top){p}" for p in paths]


_REF_BAD = frozenset(b" ~^:?[\\*\x7f") | frozenset(range(0x20))
"""Bytes git refuses anywhere in a ref name (`refname_disposition` 4 and, outside refspec
patterns, 5): controls, DEL, space, `~ ^ : ? [ \\ *`."""
LOCK_SUFFIX = b".lock"


def ref_format_problem(refname: str) -> str | None:
    """Why git would refuse `refname` (`git check-ref-format <refname>`, no options: at
    least two components, no pattern), None when it accepts it. git's own rules (refs.c,
    `check_refname_format`), on the UTF-8 bytes as git sees them, so a workflow id that
    would name a bad branch is refused before a run is paid for, not at its first
    worktree."""
    raw = refname.encode("utf-8", "surrogateescape")
    if raw == b"@":
        return "it is the single character `@`"
    components = raw.split(b"/")
    if len(components) < 2:
        return "it has only one component"
    for part in components:
        if not part:
            return "it has an empty component (a leading, trailing or doubled `/`)"
        bad = next((b for b in part if b in _REF_BAD), None)
        if bad is not None:
            return f"it contains {_shown(bad)}"
        if b".." in part:
            return "it contains `..`"
        if b"@{" in part:
            return "it contains `@{`"
        if part.startswith(b"."):
            return f"a component starts with `.` ({_text(part)})"
        if part.endswith(LOCK_SUFFIX):
            return f"a component ends with `.lock` ({_text(part)})"
    if raw.endswith(b"."):
        return "it ends with `.`"
    return None


def _shown(byte: int) -> str:
    return f"the character {chr(byte)!r}" if 0x20 < byte < 0x7f else \
        f"the control character 0x{byte:02x}" if byte != 0x20 else "a space"


def _text(part: bytes) -> str:
    return repr(part.decode("utf-8", "replace"))


def init_repo(path: Path, bare: bool = False) -> Repo:
    """A new, empty repository at the existing directory `path` (git init), run with the
    same clean environment as every other call."""
    _git(["init", "-q", *(["--bare"] if bare else []), str(path)], path)
    return Repo(Path(os.path.realpath(path)))


def repo_of(path: Path) -> Repo | None:
    """The repository around `path`, None when it is not in one (or git is missing)."""
    if shutil.which("git") is None:
        return None
    try:
        proc = _git(["rev-parse", "--show-toplevel"], path, check=False)
    except GitError:
        return None
    top = proc.stdout.strip()
    if proc.returncode != 0 or not top:
        return None
    return Repo(Path(os.path.realpath(top)))
