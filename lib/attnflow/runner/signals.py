"""Fault handling: SIGINT, SIGTERM and SIGHUP become :class:`~attnflow.runner.errors.Interrupted`,
so the ``finally`` blocks of a run (kernel shutdown, temporary folder removal) run."""

from __future__ import annotations

import contextlib
import signal
import threading

from attnflow.runner.errors import Interrupted

SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)


@contextlib.contextmanager
def signals_raise():
    """In the main thread: SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted`, so ``finally`` blocks
    (kernel shutdown, temp folder removal) run; a second signal during the clean-up is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        for s in SIGNALS:  # one clean-up, whatever arrives next
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    old = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
