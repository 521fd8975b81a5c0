"""What the kernel is doing: the running cell, for the heartbeat lines and for error messages."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, Callable

from attnflow.progress import read_status
from attnflow.runner.checks import code_cells


def first_line(source: str) -> str:
    """The cell's first statement that is not an import or a comment (else its first line)."""
    lines = [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not lines:
        return "(comments only)"
    pick = next((ln for ln in lines if not ln.startswith(("import ", "from "))), lines[0])
    return pick if len(pick) <= 60 else pick[:57] + "..."


class Watch:
    """Follows the cells of one run (the papermill engine calls :meth:`start_cell`); with an
    ``echo``, a thread prints a heartbeat every ``interval`` seconds when there is news (another
    cell, another progress line of the page) and at least every 6 intervals."""

    def __init__(self, nb, echo: Callable[[str], None] | None, status_path: Path | None, interval: float):
        self.code_index = {id(c): i for i, c in enumerate(code_cells(nb), 1)}
        self.n_code = len(self.code_index)
        self.echo, self.status_path, self.interval = echo, status_path, interval
        self.cell: Any = None
        self.ordinal = 0
        self.cell_started = self.started = time.monotonic()
        self.client = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_cell(self, index: int | None, cell) -> None:
        self.cell, self.cell_started = cell, time.monotonic()
        if cell.cell_type == "code":
            self.ordinal += 1
            if self.status_path is not None:  # a new cell: the last cell's bar is history
                with contextlib.suppress(OSError):
                    self.status_path.unlink()

    def describe(self) -> str:
        if self.cell is None:
            return "starting the kernel"
        return f"code cell {self.ordinal} of {self.n_code} (`{first_line(self.cell.source)}`)"

    def beat(self) -> str:
        now = time.monotonic()
        if self.cell is None:
            return f"attnflow run: starting the kernel, total {now - self.started:.0f} s"
        line = (
            f"attnflow run: {self.describe()} running {now - self.cell_started:.0f} s, total {now - self.started:.0f} s"
        )
        if self.status_path is not None:
            status = read_status(self.status_path)
            if status:
                line += f" | {status}"
        return line

    def __enter__(self):
        if self.echo is not None:
            self._thread = threading.Thread(target=self._run, name="attnflow-heartbeat", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        last, last_at = None, 0.0
        while not self._stop.wait(self.interval):
            with contextlib.suppress(Exception):
                line = self.beat()
                what = (self.ordinal, line.split(" | ", 1)[1] if " | " in line else "")
                now = time.monotonic()
                if what != last or now - last_at >= 6 * self.interval:  # news, or every 6 beats
                    self.echo(line)
                    last, last_at = what, now

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
