"""Rule modules are imported lazily, so two threads of the language server (a completion and
a check) can register rules at the same time: registration must not iterate a registry
another thread is adding to (it raised "dictionary changed size during iteration" in a
completion request)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

from baton_lsp.model.base import Finding, Kind, Severity
from baton_lsp.rules import base
from baton_lsp.rules.base import RuleContext, rule


def test_rules_registered_from_threads_at_once() -> None:
    base.all_rules()  # the real rules first: a registry of realistic size to iterate
    errors: list[BaseException] = []
    codes = [f"TST{t}{i:03d}" for t in range(4) for i in range(150)]
    start = threading.Barrier(4)

    def register(t: int) -> None:
        start.wait()
        try:
            for i in range(150):
                def check(doc: object, ctx: RuleContext) -> Iterator[Finding]:
                    """A test rule."""
                    yield from ()
                rule(f"TST{t}{i:03d}", f"test-rule-{t}-{i}", Severity.INFO,
                     (Kind.PLAN,))(check)
        except BaseException as exc:  # the race's RuntimeError is the point
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=register, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=120)
    finally:
        sys.setswitchinterval(old)
        for code in codes:
            base.unregister(code)
    assert errors == []
