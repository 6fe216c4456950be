"""The check queue on its own: one entry per file, newest edit first, dependents after."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.lsp.scheduling import DEPENDENT, EDIT, CheckQueue, Entry


def drain(queue: CheckQueue, now: float = 0.0, busy: frozenset[str] = frozenset()) -> list[str]:
    out = []
    while (entry := queue.pop(now, busy)) is not None:
        out.append(entry.path)
    return out


def test_the_newest_edit_goes_first_and_dependents_after_every_edit() -> None:
    queue = CheckQueue()
    for name in ("a", "b", "c"):
        queue.add(name, name, EDIT, 0.0)
    queue.add("dep1", "dep1", DEPENDENT, 0.0)
    queue.add("dep2", "dep2", DEPENDENT, 0.0)
    queue.add("a", "a", EDIT, 0.0)  # typed in again: the newest
    assert drain(queue) == ["a", "c", "b", "dep1", "dep2"]


def test_a_file_edited_many_times_before_its_check_is_checked_once() -> None:
    queue = CheckQueue()
    for _ in range(1000):
        queue.add("a", "a", EDIT, 0.0)
        queue.add("dep", "dep", DEPENDENT, 0.0)
    assert len(queue) == 2 and drain(queue) == ["a", "dep"]


def test_becoming_a_dependent_does_not_move_a_waiting_file_ahead() -> None:
    """A file waiting since it was opened, then named as a dependent of each of 200 edited
    agents, jumped ahead of the file being typed in every time (a 1.3 s wait)."""
    queue = CheckQueue()
    queue.add("opened", "opened", EDIT, 0.0)
    queue.add("typed", "typed", EDIT, 0.0)
    for _ in range(200):
        queue.add("opened", "opened", DEPENDENT, 0.0)
    assert drain(queue) == ["typed", "opened"]


def test_a_dependent_edited_becomes_an_edit() -> None:
    queue = CheckQueue()
    queue.add("x", "x", DEPENDENT, 0.0)
    queue.add("y", "y", EDIT, 0.0)
    queue.add("x", "x", EDIT, 0.0)
    assert drain(queue) == ["x", "y"]


def test_the_debounce_restarts_with_each_edit_and_waits() -> None:
    queue = CheckQueue()
    queue.add("a", "a", EDIT, 1.0)
    queue.add("a", "a", EDIT, 1.5)
    assert queue.pop(1.2) is None and queue.next_due(1.2) == 1.5
    assert queue.pop(1.5).path == "a"  # type: ignore[union-attr]
    assert queue.next_due(1.5) is None


def test_a_file_being_checked_waits_for_its_check_to_end() -> None:
    queue = CheckQueue()
    queue.add("a", "a", EDIT, 0.0)
    queue.add("b", "b", EDIT, 0.0)
    assert drain(queue, busy=frozenset({"b"})) == ["a"]
    assert drain(queue) == ["b"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from([EDIT, DEPENDENT])),
                max_size=60))
def test_every_file_added_comes_out_exactly_once(adds: list[tuple[str, int]]) -> None:
    queue = CheckQueue()
    for path, priority in adds:
        queue.add(path, path, priority, 0.0)
    out = drain(queue)
    assert sorted(out) == sorted({p for p, _ in adds})
    edited = [p for p in out if any(q == p and pr == EDIT for q, pr in adds)]
    assert out[:len(edited)] == edited  # every edited file before every dependent


def test_wait_idle_returns_when_every_queued_check_has_run() -> None:
    """What start-up waits on before indexing (`lifecycle.first_checks`): the checks of the
    documents opened first, including one added while another runs."""
    import asyncio

    from baton_lsp.lsp.scheduling import CheckRunner

    async def scenario() -> list[str]:
        runner = CheckRunner(slots=1)
        done: list[str] = []

        async def handler(entry: Entry) -> None:
            await asyncio.sleep(0.01)
            done.append(entry.path)
            if entry.path == "a":
                runner.add("late", "late", EDIT)

        runner.handler = handler
        await asyncio.wait_for(runner.wait_idle(), 1)  # nothing queued: at once
        runner.add("a", "a", EDIT)
        runner.add("b", "b", EDIT, delay=0.05)
        await asyncio.wait_for(runner.wait_idle(), 5)
        assert len(runner) == 0
        runner.stop()
        return done

    assert sorted(asyncio.run(scenario())) == ["a", "b", "late"]
