"""attnflow.device: device resolution and the one CPU-thread policy of the book."""

import pytest
import torch
from threadpoolctl import threadpool_info

from attnflow import device
from attnflow.focus_dilution import runs


def _blas_threads() -> set[int]:
    return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}


def test_cpu_threads_limits_torch_and_blas_and_restores_them():
    import numpy  # noqa: F401  (loads numpy's BLAS)

    torch.set_num_threads(2)
    before_blas = _blas_threads()
    with device.single_threaded():
        assert torch.get_num_threads() == 1
        assert _blas_threads() <= {1}
    assert torch.get_num_threads() == 2 and _blas_threads() == before_blas
    with device.cpu_threads(1, blas=False):
        assert torch.get_num_threads() == 1 and _blas_threads() == before_blas
    with device.cpu_threads(None):
        assert torch.get_num_threads() == 2


def test_threads_are_restored_when_the_block_raises():
    torch.set_num_threads(2)
    with pytest.raises(RuntimeError, match="inside"):
        with device.single_threaded():
            raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


def test_bad_thread_count_and_device_name_are_errors():
    with pytest.raises(ValueError, match="allowed: an integer ≥ 1"):
        with device.cpu_threads(0):
            pass
    with pytest.raises(ValueError, match="device must be one of"):
        device.resolve("tpu")


def test_the_flow_module_uses_the_shared_policy():
    assert runs.single_threaded is device.single_threaded
