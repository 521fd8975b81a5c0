"""Device and precision selection (DESIGN.md, principle 7): CPU by default, CUDA when present,
and the one CPU-thread policy of the book (``cpu_threads``)."""

from __future__ import annotations

import contextlib

import torch
from threadpoolctl import threadpool_limits

EXPERIMENT_DTYPE = torch.float32  # discrete training and sweeps
DEVICES = ("auto", "cpu", "cuda")


def resolve(device: str = "auto") -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without a GPU is an error."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, received {device!r}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device='cuda' was asked for but {cuda_missing()}; use 'auto' or 'cpu'")
    return torch.device(device)


def cuda_missing() -> str:
    """Why torch sees no CUDA device, in words: a CPU-only build of torch, or a CUDA build that
    finds no device (no driver, no GPU, or ``CUDA_VISIBLE_DEVICES`` hides it)."""
    if not torch.version.cuda:
        return f"this torch build has no CUDA support (torch {torch.__version__}, a CPU-only build)"
    return (
        f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device "
        "(no GPU or driver here, or CUDA_VISIBLE_DEVICES hides it)"
    )


def describe() -> str:
    """One line naming the device a page ran on."""
    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({torch.get_num_threads()} threads)"


@contextlib.contextmanager
def cpu_threads(n: int | None = 1, blas: bool = True):
    """Limit torch's intra-op threads (and, with ``blas``, the BLAS pools of numpy and scipy, through
    threadpoolctl) to ``n`` inside the block; restore them after. ``None`` leaves everything as is.

    The book's models and flows are tiny (matrices of tens to hundreds of entries a side): on a
    shared 2-core machine extra threads only spin against each other — measured: a 208×208 LU
    factorisation 34 ms instead of 0.4 ms, batched sharpening training ~6× slower on two threads."""
    if n is None:
        yield
        return
    if n < 1:
        raise ValueError(f"cpu_threads: received n = {n!r}; allowed: an integer ≥ 1 or None")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n) if blas else contextlib.nullcontext():
            yield
    finally:
        torch.set_num_threads(before)


def single_threaded():
    """``cpu_threads(1)``: one torch thread and one BLAS thread inside the block."""
    return cpu_threads(1)
