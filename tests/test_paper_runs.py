"""The recorded paper-profile runs (data/paper_runs.json) and the reproducibility page's summary of them."""

import json

from attnflow import runner
from attnflow_book import sphinx_runs

RUNS = json.loads((runner.book_root() / "data" / "paper_runs.json").read_text(encoding="utf-8"))["runs"]


def test_every_page_has_one_record_per_device_and_every_record_is_complete():
    """Each page of the book (the atlas aside) has a paper-profile record, run or not run with its
    reason, and at most one per kind of device (a CUDA run sits next to the CPU record); a run record
    carries its commit, device, wall time and claim counts."""
    pages = [p for p in runner.list_pages() if p != "atlas"]
    recorded = [(r["page"], sphinx_runs.backend(r)) for r in RUNS]
    assert sorted(recorded) == sorted(set(recorded)), "a page is recorded twice on one kind of device"
    assert set(pages) == {p for p, _ in recorded}, f"pages without a record: {set(pages) - set(recorded)}"
    for r in RUNS:
        assert r["profile"] == "paper" and len(r["commit"]) == 40 and r["device"] and r["date"]
        if r["seconds"] is None:
            assert r["status"] == "not run" and r["note"], f"{r['page']}: a run that did not happen says why"
        else:
            assert r["seconds"] > 0 and set(r["claims"]) == {"passed", "not reproduced", "outside", "failed"}


def test_summary_counts_runs_failures_and_pages_not_run():
    ok = dict(page="a", seconds=30.0, claims={"passed": 3, "failed": 0}, status="ok", device="CPU ×2")
    slow = dict(page="b", seconds=300.0, claims={"passed": 1, "failed": 0}, status="imported", device="H200")
    bad = dict(page="c", seconds=10.0, claims={"passed": 1, "failed": 2}, status="claims failed", device="CPU ×2")
    skipped = dict(page="d", seconds=None, claims={}, status="not run", note="too large", device="CPU ×2")
    text = sphinx_runs.summarize([ok, slow, bad, skipped])
    assert text.startswith(
        "2 of 4 pages ran their paper profile to the end with no failed claim (the longest, b, in 5.0 min)"
    )
    assert "1 with failed claims (c)" in text and "1 were not run to the end here" in text
    assert text.endswith("Devices: CPU ×2, H200.")


def test_summary_tells_a_page_that_stopped_from_one_that_failed_claims():
    """A page whose training cell raised (no claim checked) is not counted as failing claims."""
    ok = dict(page="a", seconds=30.0, claims={"passed": 3, "failed": 0}, status="ok", device="CPU ×2")
    stopped = dict(page="b", seconds=322.0, claims={"passed": 0, "failed": 0}, device="CPU ×2",
                   status="page failed: TrainingDiverged: FAFO r = 10")  # fmt: skip
    text = sphinx_runs.summarize([ok, stopped])
    assert "with failed claims" not in text and "1 stopped before the end" in text and "b;" in text


def test_summary_counts_a_page_with_a_cpu_and_a_cuda_record_once():
    """A page not run on the CPU and run on a GPU counts as run; the table keeps both rows."""
    cpu = dict(page="a", seconds=None, claims={}, status="not run", note="2 h on 2 CPUs", device="CPU ×2 (x)")
    gpu = dict(page="a", seconds=120.0, claims={"passed": 3, "failed": 0}, status="ok", device="NVIDIA H100")
    other = dict(page="b", seconds=None, claims={}, status="not run", note="too large", device="CPU ×2 (x)")
    assert [sphinx_runs.backend(r) for r in (cpu, gpu)] == ["cpu", "cuda"]
    text = sphinx_runs.summarize([cpu, gpu, other])
    assert text.startswith("1 of 2 pages ran their paper profile to the end with no failed claim (the longest, a,")
    assert "1 were not run to the end here" in text and text.endswith("Devices: NVIDIA H100.")
