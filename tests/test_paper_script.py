"""Paper runs on a chosen device (issue 23 item 3): ``attnflow run --device``, ``scripts/paper_runs.py``
``--device/--dry-run/--budget`` and ``scripts/gpu_paper_runs.sh``. No page is run: the runner is
replaced where a run would start, and CUDA's presence is monkeypatched."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attnflow import cli, device, runner

ROOT = Path(__file__).resolve().parents[1]
WITH_DEVICE = "focus_dilution/cycle"  # a page with a `device` parameter and a cost estimate
CPU_ONLY = "sharpening/growth_rates"  # a page without one


@pytest.fixture
def paper(tmp_path, monkeypatch):
    """scripts/paper_runs.py as a module, writing under tmp_path; starting a page run is an error."""
    spec = importlib.util.spec_from_file_location("paper_runs_script", ROOT / "scripts" / "paper_runs.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mod)  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "OUT", tmp_path / "paper_runs.json")
    monkeypatch.setattr(mod, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(mod, "_commit", lambda: "0" * 40)

    def no_run(*a, **k):
        raise AssertionError("a page was run")

    monkeypatch.setattr(runner, "run_page", no_run)
    return mod


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------- device resolution
def test_cuda_without_a_device_is_an_error_naming_the_cause(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(RuntimeError, match="no CUDA support .*CPU-only build"):
        device.resolve("cuda")
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    with pytest.raises(RuntimeError, match="sees no CUDA device .*CUDA_VISIBLE_DEVICES"):
        device.resolve("cuda")
    assert device.resolve("auto") == torch.device("cpu")


def test_cuda_resolves_to_cuda_when_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device.resolve("cuda") == torch.device("cuda") == device.resolve("auto")
    assert device.resolve("cpu") == torch.device("cpu")


def test_training_batches_follow_the_device_and_dtype_on_meta():
    """The focus-dilution training path puts its batch and forward pass on the device it is given
    (torch's 'meta' device: shapes and dtypes, no data), in the experiment dtype."""
    from attnflow.focus_dilution import chain as chains
    from attnflow.focus_dilution import model, training

    chain = chains.hub_family(delta=0.1)
    meta = torch.device("meta")
    batch = training.stack([training.population_examples(chain)], device.EXPERIMENT_DTYPE, meta)
    assert {(v.device.type, v.dtype) for v in batch.values()} == {("meta", torch.float32)}
    theta = {n: v.to(meta, torch.float32)[None] for n, v in model.init_params(chain.d, 8).items()}
    A, log_p = training.forward(theta, batch)
    assert A.device == meta and log_p.dtype == torch.float32 and A.shape == batch["query"].shape


# ---------------------------------------------------------------------------------- attnflow run --device
def _captured(monkeypatch) -> dict:
    seen: dict = {}

    def fake_run_page(page, **kw):
        seen.update(kw, page=page)
        return SimpleNamespace(summary=lambda: "fake run")

    monkeypatch.setattr(cli, "run_page", fake_run_page)
    return seen


def test_cli_device_sets_the_page_parameter(monkeypatch, capsys):
    assert cli._parser().parse_args(["run", WITH_DEVICE, "--device", "cuda"]).device == "cuda"
    seen = _captured(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli.main(["run", WITH_DEVICE, "--device", "cuda", "--profile", "smoke", "-p", "n_seeds=2"]) == 0
    assert seen["page"] == WITH_DEVICE and seen["profile"] == "smoke"
    assert seen["parameters"] == {"n_seeds": 2, "device": "cuda"}
    assert cli.main(["run", WITH_DEVICE, "--device", "cpu"]) == 0 and seen["parameters"] == {"device": "cpu"}
    assert cli.main(["run", WITH_DEVICE]) == 0 and seen["parameters"] == {}


def test_cli_device_on_a_cpu_only_page(monkeypatch, capsys):
    """cuda on a page without a device parameter: exit 2 naming the page; cpu and auto change nothing."""
    seen = _captured(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli.main(["run", CPU_ONLY, "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnflow run: error:") and CPU_ONLY in err and "runs on the CPU only" in err
    assert not seen
    for value in ("cpu", "auto"):
        assert cli.main(["run", CPU_ONLY, "--device", value]) == 0 and seen["parameters"] == {}


def test_cli_device_errors_before_any_kernel(monkeypatch, capsys, tmp_path):
    seen = _captured(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["run", WITH_DEVICE, "--device", "cuda"]) == 2
    assert "device='cuda' was asked for" in capsys.readouterr().err and not seen
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli.main(["run", WITH_DEVICE, "--device", "cuda", "-p", "device='cpu'"]) == 2
    assert "disagree" in capsys.readouterr().err and not seen
    monkeypatch.undo()  # the real runner: a bad value is refused by the page's own schema, nothing written
    out = tmp_path / "out"
    assert cli.main(["run", WITH_DEVICE, "--device", "gpu", "--output", str(out)]) == 2
    assert "parameter 'device'" in capsys.readouterr().err and not out.exists()


# ---------------------------------------------------------------------------------- scripts/paper_runs.py
def test_dry_run_lists_pages_with_device_and_estimate_and_writes_nothing(paper, capsys):
    data = ROOT / "data" / "paper_runs.json"
    before = _digest(data)
    assert paper.main(["--dry-run", "--device", "cuda", WITH_DEVICE]) == 0  # planned here, run elsewhere
    assert paper.main(["--dry-run", "--device", "cpu", WITH_DEVICE, CPU_ONLY]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("paper_runs: dry run, 1 page(s), nothing is run or written")
    assert out[1].startswith(f"{WITH_DEVICE}: profile paper, device cuda")
    assert out[3].startswith(f"{WITH_DEVICE}: profile paper, device cpu, estimate ")
    assert "on 2 CPUs" in out[3] and out[3].endswith(f"output {paper.RUNS / 'focus_dilution__cycle'}")
    assert out[4].startswith(f"{CPU_ONLY}: profile paper, device cpu (the page has no device parameter), estimate")
    assert not paper.OUT.exists() and not paper.RUNS.exists() and _digest(data) == before


def test_dry_run_estimate_is_the_page_schemas(paper):
    _, schema, defaults = cli.page_schema(WITH_DEVICE)
    seconds, what = paper.estimate(WITH_DEVICE, {"device": "cpu"})
    assert what == schema.cost[1] and seconds > 600  # the paper profile is larger than the book's
    p = paper.plan(CPU_ONLY, "auto")
    assert p.parameters == {} and p.runs_on == "cpu" and p.estimate > 0


def test_cuda_on_a_cpu_only_page_fails_before_anything_runs(paper, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert paper.main(["--device", "cuda", WITH_DEVICE, CPU_ONLY]) == 2
    err = capsys.readouterr().err
    assert err.startswith("paper_runs: error: page 'sharpening/growth_rates' has no device parameter")
    assert "runs on the CPU only" in err and not paper.OUT.exists()


def test_budget_runs_cheapest_first_and_skips_what_does_not_fit(paper, capsys, monkeypatch):
    """Each fake run takes its estimate / speed-up on a fake clock; a page starts only when its
    estimate fits what is left of the budget, a skipped page is not recorded."""
    estimates = {"a/slow": 80.0, "a/mid": 50.0, "a/fast": 30.0, "a/unknown": None}
    speed = {"x": 1.0}
    monkeypatch.setattr(
        paper,
        "plan",
        lambda page, device, check_cuda=True: paper.Plan(
            page, {"device": device}, "cpu", device, estimates[page], "", paper.RUNS / page
        ),
    )
    clock = {"now": 0.0}
    monkeypatch.setattr(
        paper, "time", SimpleNamespace(perf_counter=lambda: clock["now"], strftime=time.strftime, gmtime=time.gmtime)
    )
    ran = []

    def fake_run_page(page, **kw):
        ran.append((page, kw["parameters"], kw["timeout"]))
        clock["now"] += estimates[page] / speed["x"]
        return SimpleNamespace(failed=0, claims_file=None)

    monkeypatch.setattr(runner, "run_page", fake_run_page)
    pages = list(estimates)
    assert paper.main(["--dry-run", "--budget", "100", "--device", "cpu", *pages]) == 0
    dry = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in dry[1:]] == ["a/fast", "a/mid", "a/slow", "a/unknown"]
    assert [("skipped" in line) for line in dry[1:]] == [False, False, True, True]
    assert not ran and not paper.OUT.exists()

    assert paper.main(["--budget", "100", "--device", "cpu", *pages]) == 0
    assert ran == [("a/fast", {"device": "cpu"}, 100), ("a/mid", {"device": "cpu"}, 70)]  # a cell stops at what is left
    out = capsys.readouterr().out
    assert "a/slow: " in out and "skipped: estimate 80 s > 20 s left of the budget" in out
    assert "a/unknown: " in out and "skipped: no estimate" in out
    assert [r["page"] for r in json.loads(paper.OUT.read_text())["runs"]] == ["a/fast", "a/mid"]

    ran.clear()
    speed["x"] = 2.0
    assert paper.main(["--budget", "100", "--speedup", "2", "--device", "cpu", *pages]) == 0
    assert [r[0] for r in ran] == ["a/fast", "a/mid", "a/slow"]  # 15 + 25 + 40 s


def test_a_page_stopped_at_the_end_of_the_budget_is_not_recorded(paper, capsys, monkeypatch):
    monkeypatch.setattr(
        paper, "plan", lambda page, device, check_cuda=True: paper.Plan(page, {}, "cpu", "cpu", 10.0, "", paper.RUNS)
    )
    clock = {"now": 0.0}
    monkeypatch.setattr(
        paper, "time", SimpleNamespace(perf_counter=lambda: clock["now"], strftime=time.strftime, gmtime=time.gmtime)
    )

    def overrun(page, **kw):
        clock["now"] += kw["timeout"]
        raise runner.PageFailed(f"{page}: the cell ran past the time limit of {kw['timeout']} s per cell")

    monkeypatch.setattr(runner, "run_page", overrun)
    assert paper.main(["--budget", "60", "a/page"]) == 0
    assert "a/page: stopped at the end of the budget; not recorded" in capsys.readouterr().out
    assert not paper.OUT.exists()


def test_a_cuda_record_sits_next_to_the_cpu_record(paper, monkeypatch):
    """One record per page and kind of device: a CUDA run keeps the CPU "not run" record."""
    monkeypatch.setattr(paper, "_device", lambda backend=None: "CPU ×2 (x)" if backend == "cpu" else "NVIDIA H100")
    base = dict(profile="paper", commit="0" * 40, cpus=2, note="", date="2026-12-01", claims={})
    paper._save(dict(base, page="p", device="CPU ×2 (x)", seconds=None, status="not run"))
    paper._save(dict(base, page="p", device="NVIDIA H100", seconds=5.0, status="ok"))
    paper._save(dict(base, page="p", device="NVIDIA H200", seconds=4.0, status="ok"))
    paper._save(dict(base, page="p", device="CPU ×16 (y)", seconds=None, status="not run"))
    runs = json.loads(paper.OUT.read_text())["runs"]
    assert [(r["device"], r["status"]) for r in runs] == [("CPU ×16 (y)", "not run"), ("NVIDIA H200", "ok")]
    assert paper.not_run_pages() == []  # it ran on one device: `make paper` does not pick it again


def test_not_run_pages_of_the_record_file(paper, monkeypatch):
    monkeypatch.setattr(paper, "OUT", ROOT / "data" / "paper_runs.json")
    pages = paper.not_run_pages()
    runs = json.loads(paper.OUT.read_text())["runs"]
    assert set(pages) <= {r["page"] for r in runs if r["status"] == "not run"}


# ---------------------------------------------------------------------------------- scripts/gpu_paper_runs.sh
def test_gpu_script_parses_and_copies_its_results(tmp_path):
    script = ROOT / "scripts" / "gpu_paper_runs.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    assert "--device cuda --budget" in text and "BUDGET=${BUDGET:-540}" in text
    for page in ("cycle", "finite_sample", "pca_trajectories", "robustness", "real_text", "real_squad"):
        assert page in text
    if not shutil.which("timeout") or not shutil.which("python3"):
        pytest.skip("coreutils timeout or python3 missing")
    # a stand-in tree: the script's own paper_runs.py is replaced by one that writes what a run writes
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy(script, tree / "scripts")
    (tree / "scripts" / "paper_runs.py").write_text(
        "import os, pathlib, sys\n"
        "assert os.environ['HF_HUB_OFFLINE'] == '1' and '--device' in sys.argv, sys.argv\n"
        "pathlib.Path('data').mkdir(); pathlib.Path('data/paper_runs.json').write_text('{\"runs\": []}')\n"
        "n = pathlib.Path('runs/paper/focus_dilution__cycle'); n.mkdir(parents=True)\n"
        "(n / 'cycle.ipynb').write_text('{}'); (n / 'cycle.claims.json').write_text('{}')\n"
    )
    out = tmp_path / "out"
    res = subprocess.run(
        ["bash", "scripts/gpu_paper_runs.sh"],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "OUT": str(out), "BUDGET": "5"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (out / "paper_runs.json").exists() and (out / "paper" / "focus_dilution__cycle" / "cycle.ipynb").exists()
