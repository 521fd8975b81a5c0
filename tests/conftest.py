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


@pytest.fixture
def ledger(tmp_path, monkeypatch, request):
    """A claims ledger of its own for one test: records go to ``tmp_path`` under a page named after
    the test module; yields ``claims.records`` (the records so far) and clears the page afterwards.
    Modules that need another shape (a factory, a dict by ``what``) define their own ``ledger``."""
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page(f"test/{request.module.__name__.rsplit('.', 1)[-1]}", {})
    yield claims.records
    claims._state.update(page=None, records=[], parameters={})
