"""What a run can end with besides a result: bad input, a failed page, a signal."""

from __future__ import annotations

import signal

from attnflow.runner.results import RunResult


class RunError(ValueError):
    """Bad input: unknown page, profile or parameter, malformed -p value, unusable output folder
    (exit status 2; nothing is written)."""


class PageFailed(RuntimeError):
    """The page raised while executing (e.g. a failed claim), timed out, or its results could not
    be saved (exit status 1). ``result`` holds what was kept (notebook, claims record, counts)."""

    def __init__(self, message: str, result: "RunResult | None" = None):
        super().__init__(message)
        self.result = result


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum
        self.name = signal.Signals(signum).name
