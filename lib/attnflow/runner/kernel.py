"""Execution with the kernel: papermill through an engine that reports each cell to a
:class:`~attnflow.runner.watch.Watch`, keeps the notebook client so the kernel can be stopped
whatever happens, and turns every way a page can stop into one line.

This module imports papermill, nbclient and jupyter_core (seconds); :mod:`attnflow.runner` loads
it only when a page runs, not for ``attnflow pages``, profiles or pre-validation."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

import nbclient.exceptions
import papermill
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_event_loop
from nbclient.exceptions import DeadKernelError
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines
from papermill.parameterize import parameterize_notebook
from papermill.utils import merge_kwargs, remove_args
from traitlets import default

from attnflow.runner.errors import PageFailed
from attnflow.runner.watch import Watch, first_line

IOPUB_TIMEOUT = 120  # seconds to wait for a finished cell's last outputs (nbclient's default: 4)
ENGINE = "attnflow"  # the papermill engine name registered below
SOCKET_TMP_MAX = 64  # longest temp folder path, in bytes, the kernel's Unix sockets go under (else TCP)


def socket_path_fits(folder: str) -> bool:
    """Whether Unix sockets fit under ``folder``: the kernel's limit (107) is in bytes of the encoded
    path, so a folder of 52 CJK characters (156 bytes in UTF-8) does not fit although it is short."""
    return len(os.fsencode(os.path.abspath(folder))) <= SOCKET_TMP_MAX


class PrivateSocketKernelManager(AsyncKernelManager):
    """A kernel whose five channels are Unix sockets in a directory of its own.

    Over TCP, jupyter_client picks five free ports by binding and releasing them, and the kernel
    binds them again a moment later: any process starting in between (a second page, a Dask
    worker, another kernel of a parallel build) can take one, and the kernel then fails with
    ``ZMQError: Address already in use`` (seen in CI: the heartbeat thread's traceback on a
    page's stderr). A fresh ``mkdtemp`` directory makes the sockets' names unique before they
    exist, so no other process can race for them. Windows has no ipc transport: TCP there."""

    @default("transport")
    def _transport_default(self) -> str:
        # a Unix socket path holds at most 107 bytes: "<tmp>/attnflow-kernel-XXXXXXXX/ch-5" needs ~35
        fits = socket_path_fits(tempfile.gettempdir())
        return "ipc" if os.name == "posix" and fits else "tcp"

    @default("ip")
    def _ip_default(self) -> str:
        if self.transport != "ipc":
            return super()._ip_default()
        self.socket_dir = tempfile.mkdtemp(prefix="attnflow-kernel-")
        return os.path.join(self.socket_dir, "ch")  # sockets ch-1 … ch-5 (107-byte path limit)

    socket_dir: str | None = None

    def remove_socket_dir(self) -> None:
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            self.remove_socket_dir()

    cleanup_resources = _async_cleanup_resources


class AttnflowEngine(NBClientEngine):
    """papermill's nbclient engine, plus the cell hook, a quiet log and an immediate shutdown."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man,
        kernel_name,
        log_output=False,
        stdout_file=None,
        stderr_file=None,
        start_timeout=60,
        execution_timeout=None,
        **kwargs,
    ):
        watch: Watch | None = kwargs.pop("attnflow_watch", None)
        if watch is not None:
            orig = nb_man.cell_start

            def cell_start(cell, cell_index=None, **kw):
                watch.start_cell(cell_index, cell)
                return orig(cell, cell_index, **kw)

            nb_man.cell_start = cell_start
        kwargs = remove_args(["input_path"], **kwargs)
        safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
        final_kwargs = merge_kwargs(
            safe_kwargs,
            timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=_quiet_logger(),
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
            shutdown_kernel="immediate",  # a signal kills it mid-cell, quietly
            kernel_manager_class=PrivateSocketKernelManager,
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )  # no TCP warning
        _quiet_dead_tasks()
        client = PapermillNotebookClient(nb_man, **final_kwargs)
        if watch is not None:
            watch.client = client
        return client.execute()


def _engine() -> str:
    papermill_engines.register(ENGINE, AttnflowEngine)
    return ENGINE


def prepare(nb, params: dict) -> object:
    """The notebook as papermill's own loader leaves it (``papermill.iorw.load_notebook_node``),
    with the parameters injected here (so papermill's parameter parsing never warns)."""
    nb.metadata.setdefault(
        "papermill",
        {"default_parameters": {}, "parameters": {}, "environment_variables": {}, "version": papermill.__version__},
    )
    for c in nb.cells:
        c.metadata.setdefault("tags", [])
        c.metadata.setdefault("papermill", {})
    if params:
        nb = parameterize_notebook(nb, params, kernel_name="python3", language="python")
    return nb


def execute(nb, nb_out: Path, cwd: Path, timeout: int | None, watch: Watch, key: str, out_dir: Path) -> str | None:
    """Run ``nb`` in ``cwd``, writing the executed notebook to ``nb_out``; None when it ran to the
    end, else why it stopped (the cell, the error). The kernel is stopped in every case; an
    unwritable notebook raises :class:`PageFailed`."""
    try:
        papermill.execute_notebook(
            nb,
            str(nb_out),
            parameters=None,
            cwd=str(cwd),
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
            execution_timeout=timeout,
            engine_name=_engine(),
            attnflow_watch=watch,
            # nbclient waits only 4 s for a cell's last outputs after its reply and then raises
            # the same CellTimeoutError as the per-cell limit: on a loaded machine (a sweep, a
            # parallel build) that failed pages that had finished. The per-cell limit stays `timeout`.
            iopub_timeout=IOPUB_TIMEOUT,
        )
    except papermill.PapermillExecutionError as e:
        evalue = " ".join(str(e.evalue).split())
        return f"code cell `{first_line(e.source)}` raised {e.ename}: {evalue}"
    except nbclient.exceptions.CellTimeoutError as err:
        if "IOPub" in str(err):
            return (
                f"{watch.describe()} finished but its outputs did not arrive within {IOPUB_TIMEOUT} s "
                "(an overloaded machine)"
            )
        return f"{watch.describe()} ran past the time limit of {timeout} s per cell (--timeout)"
    except DeadKernelError:
        return f"the kernel died during {watch.describe()} (out of memory, or killed)"
    except OSError as err:
        raise PageFailed(
            f"{key}: cannot write the executed notebook into {out_dir} ({err.strerror or err}); nothing was kept"
        ) from None
    finally:
        stop_kernel(watch)
    return None


def _quiet_dead_tasks() -> None:
    """After a signal, the cell nbclient was waiting for ends with DeadKernelError inside a task
    nobody awaits any more; asyncio would print it as 'Task exception was never retrieved'."""
    loop = ensure_event_loop()

    def handler(loop, context):
        if not isinstance(context.get("exception"), (DeadKernelError, asyncio.CancelledError)):
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("attnflow.runner.papermill")
    log.setLevel(logging.CRITICAL + 1)  # papermill/nbclient logs; the runner reports every error itself
    return log


def stop_kernel(watch: Watch) -> None:
    """Backstop after nbclient's own clean-up: a kernel still alive is shut down, then killed."""
    client = watch.client
    km = getattr(client, "km", None) if client is not None else None
    if km is None:
        return
    with contextlib.suppress(Exception):
        if km.has_kernel:
            proc = getattr(getattr(km, "provisioner", None), "process", None)
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(5)
    with contextlib.suppress(Exception):  # the synchronous part of the async cleanup_resources
        km.cleanup_connection_file()
        km.cleanup_ipc_files()
    if isinstance(km, PrivateSocketKernelManager):
        km.remove_socket_dir()
