"""Test-wide settings: offline Hugging Face, headless plots, quiet progress bars."""
import os

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATTNFLOW_QUIET", "1")


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def one_cpu_thread():
    """One torch and BLAS thread for a module of tiny models (``attnflow.device.single_threaded``)."""
    from attnflow.device import single_threaded

    with single_threaded():
        yield
