"""Device and precision selection (DESIGN.md, principle 7): CPU by default, CUDA when present."""
from __future__ import annotations

import torch

__all__ = ["resolve", "THEORY_DTYPE", "EXPERIMENT_DTYPE", "describe"]

THEORY_DTYPE = torch.float64      # flows, closed forms, parity checks
EXPERIMENT_DTYPE = torch.float32  # discrete training and sweeps
DEVICES = ("auto", "cpu", "cuda")


def resolve(device: str = "auto") -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without a GPU is an error."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, received {device!r}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' was asked for but torch sees no CUDA device; use 'auto' or 'cpu'")
    return torch.device(device)


def describe() -> str:
    """One line naming the device a page ran on."""
    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({torch.get_num_threads()} threads)"
