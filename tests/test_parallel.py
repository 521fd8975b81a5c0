"""Sweeps of whole pages on Dask (attnflow.parallel, `attnflow sweep`) and the parallel book
execution, on a tiny fake book so that each point costs one kernel start."""

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from attnflow import parallel, runner

FAKE_PAGE = textwrap.dedent("""\
    # ---
    # jupyter:
    #   jupytext:
    #     text_representation:
    #       extension: .py
    #       format_name: percent
    #   kernelspec:
    #     display_name: Python 3
    #     language: python
    #     name: python3
    # ---

    # %% [markdown]
    # # A fake page

    # %% tags=["parameters"]
    x = 2.0          # a number in [0, 10]
    seed = 0         # a seed
    crash = False    # raise inside the page

    # %%
    from attnflow import claims, params
    SCHEMA = params.Schema("test/fake", x=params.Param(float, 0.0, 10.0, "x"),
                           seed=params.Param(int, 0, 10**6, "seed"), crash=params.Param(bool, doc="raise"))
    cfg = params.validate(globals(), SCHEMA)

    # %%
    if cfg.crash:
        raise RuntimeError("boom")
    claims.check("A2", cfg.x, 5.0, atol=3.0, what="x near 5",
                 domain=claims.domain(("x ≥ 1", cfg.x >= 1, f"x = {cfg.x}")))
    claims.finish()
    """)


@pytest.fixture(scope="module")
def fake_book(tmp_path_factory):
    root = tmp_path_factory.mktemp("book")
    (root / "book" / "test").mkdir(parents=True)
    (root / "book" / "test" / "fake.py").write_text(FAKE_PAGE)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/test/fake\n")
    (root / "_config.yml").write_text("title: fake\n")
    (root / "book" / "profiles.yml").write_text("smoke:\n  test/fake: {x: 4.0}\npaper:\n  test/fake: {}\n")
    (root / "book" / "sweeps.yml").write_text("test/fake:\n  seed: seed\n  x: {float: [0.0, 10.0]}\n")
    return root


def test_random_points_are_valid_and_reproducible(fake_book):
    a = parallel.draw_points("test/fake", 5, seed=3, root=fake_book)
    b = parallel.draw_points("test/fake", 5, seed=3, root=fake_book)
    assert a == b and len(a) == 5
    assert all(0.0 <= p["x"] <= 10.0 and 0 <= p["seed"] < 10**6 for p in a)
    assert parallel.draw_points("test/fake", 5, seed=4, root=fake_book) != a


def test_invalid_grid_is_refused_before_any_work(fake_book, tmp_path):
    with pytest.raises(runner.RunError, match="grid point .*'x': 11.0.* refused"):
        parallel.grid_points("test/fake", ["x=1.0,11.0"], root=fake_book)
    with pytest.raises(runner.RunError, match="no sweep space"):
        parallel.load_space("test/other", root=fake_book)


def test_sweep_records_pass_outside_and_crash_and_resumes(fake_book, tmp_path, monkeypatch):
    lib = parallel.library_hash()
    monkeypatch.setattr(parallel, "library_hash", lambda root=None: lib)  # other work may edit lib/ meanwhile
    points = parallel.grid_points("test/fake", ["x=0.5,4.0,9.5", "crash=False"], root=fake_book)
    points.append({"x": 4.0, "crash": True})
    out = tmp_path / "sweep"
    table = parallel.sweep("test/fake", points, output=out, workers=2, root=fake_book, quiet=True)
    assert set(parallel.TABLE_COLUMNS) <= set(table.columns) and {"p_x", "p_crash"} <= set(table.columns)
    by_x = {(r.p_x, r.p_crash): r for r in table.itertuples()}
    assert by_x[(0.5, False)].verdict == "outside" and "x ≥ 1 fails" in by_x[(0.5, False)].reason
    assert by_x[(4.0, False)].verdict == "pass" and by_x[(4.0, False)].status == "ok"
    assert by_x[(9.5, False)].verdict == "fail" and by_x[(9.5, False)].status in ("failed", "error")
    crashed = by_x[(4.0, True)]
    assert crashed.status == "error" and "boom" in crashed.error and crashed.verdict is None
    assert (out / "sweep.parquet").exists() and len(list((out / "parts").glob("*.parquet"))) == 4
    # resume: the same points (same content keys) are all done, nothing runs: no cluster is even started
    monkeypatch.setattr(parallel, "_client", lambda *a: pytest.fail("a resumed sweep started a cluster"))
    again = parallel.sweep("test/fake", points, output=out, workers=2, root=fake_book, quiet=True)
    assert len(again) == len(table)
    assert json.loads((out / "sweep.json").read_text())["points"] == 4


def test_sweep_against_a_separately_started_scheduler(fake_book, tmp_path):
    bin_dir = Path(sys.executable).parent
    sched_file = tmp_path / "scheduler.json"
    procs = [
        subprocess.Popen(
            [
                str(bin_dir / "dask"),
                "scheduler",
                "--scheduler-file",
                str(sched_file),
                "--no-dashboard",
                "--host",
                "127.0.0.1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        for _ in range(60):
            if sched_file.exists() and sched_file.read_text().strip():
                break
            time.sleep(0.5)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [str(bin_dir / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        points = parallel.draw_points("test/fake", 2, seed=1, root=fake_book)
        table = parallel.sweep(
            "test/fake", points, output=tmp_path / "remote", scheduler=address, root=fake_book, quiet=True
        )
        assert table["key"].nunique() == 2 and set(table["status"]) <= {"ok", "failed"}
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=30)


def test_cli_exit_codes(fake_book, tmp_path, monkeypatch):
    from attnflow import cli_sweep

    monkeypatch.setattr(runner, "book_root", lambda: fake_book)
    import argparse

    ap = argparse.ArgumentParser()
    cli_sweep.add_parser(ap.add_subparsers(dest="cmd"))
    args = ap.parse_args(["sweep", "test/fake", "--grid", "x=42.0", "--output", str(tmp_path / "o")])
    assert cli_sweep.run(args) == 2 and not (tmp_path / "o").exists()
    args = ap.parse_args(["sweep", "test/fake", "--random", "0"])
    assert cli_sweep.run(args) == 2


def test_execute_pages_caches_and_reexecutes_when_the_library_changes(fake_book, tmp_path, monkeypatch):
    import jupytext
    from jupyter_cache import get_cache

    monkeypatch.setattr(parallel, "library_hash", lambda root=None: "lib-v1")
    cache, claims_dir = tmp_path / "jc", tmp_path / "claims"
    assert parallel.execute_pages(
        ["test/fake"], workers=1, root=fake_book, cache=cache, claims=claims_dir, quiet=True
    ) == {"test/fake": "ran"}
    page = fake_book / "book" / "test" / "fake.py"
    # myst-nb reads the page through jupytext and finds the executed notebook in the cache
    rec = get_cache(str(cache)).match_cache_notebook(jupytext.reads(page.read_text(), fmt="py:percent"))
    assert rec is not None and (claims_dir / "test__fake.json").exists()
    assert parallel.execute_pages(
        ["test/fake"], workers=1, root=fake_book, cache=cache, claims=claims_dir, quiet=True
    ) == {"test/fake": "cached"}
    assert (
        parallel.current_keys(fake_book)["test/fake"]
        == json.loads((cache / "attnflow-keys.json").read_text())["test/fake"]
    )
    monkeypatch.setattr(parallel, "library_hash", lambda root=None: "lib-v2")  # lib/ changed: nothing stale
    assert (
        parallel.current_keys(fake_book)["test/fake"]
        != json.loads((cache / "attnflow-keys.json").read_text())["test/fake"]
    )
    parallel.drop_from_cache(cache, ["test/fake"], root=fake_book)
    with pytest.raises(KeyError):
        get_cache(str(cache)).match_cache_notebook(jupytext.reads(page.read_text(), fmt="py:percent"))


def test_atlas_report_from_a_sweep_table(fake_book, tmp_path, monkeypatch):
    from attnflow import atlas

    lib = parallel.library_hash()
    monkeypatch.setattr(parallel, "library_hash", lambda root=None: lib)
    points = parallel.grid_points("test/fake", ["x=0.5,4.0,9.5"], root=fake_book)
    table = parallel.sweep("test/fake", points, output=tmp_path / "s", workers=1, root=fake_book, quiet=True)
    d = tmp_path / "atlas"
    d.mkdir()
    table.to_parquet(d / "atlas.parquet", index=False)
    (d / "provenance.json").write_text(json.dumps({"commit": "0123456789abc", "profile": "smoke", "date": "today"}))
    rep = atlas.atlas_report(d)
    assert rep.n_points == 3 and rep.n_failed_points == 1 and rep.n_error_points == 0 and rep.commit == "0123456789"
    assert sorted(rep.points["outcome"]) == ["all pass", "failed", "some outside domain"]
    assert abs(rep.frac_clean - 2 / 3) < 1e-12 and rep.frac_clean_lo < 2 / 3 < rep.frac_clean_hi
    row = rep.rates[rep.rates["claim"] == "A2"].iloc[0]
    assert row["checks"] == 3 and abs(row["fail"] - 1 / 3) < 1e-12 and abs(row["outside"] - 1 / 3) < 1e-12


def test_atlas_regenerate_keeps_one_table_per_page_without_stale_points(fake_book, tmp_path, monkeypatch):
    """Regenerating a page after a library change replaces its points (no stale parts of the old
    library in the atlas) and records that page's own commit and library hash."""
    from attnflow import atlas

    monkeypatch.setenv("ATTNFLOW_BOOK_ROOT", str(fake_book))
    monkeypatch.setattr(parallel, "library_hash", lambda root=None: "lib-one")
    out = atlas.regenerate(["test/fake"], draws=2, workers=1, output=tmp_path / "atlas")
    first = pd.read_parquet(out / "atlas.parquet")
    monkeypatch.setattr(parallel, "library_hash", lambda root=None: "lib-two")
    atlas.regenerate(["test/fake"], draws=2, workers=1, output=out)
    second = pd.read_parquet(out / "atlas.parquet")
    prov = json.loads((out / "provenance.json").read_text())
    assert first["key"].nunique() == 2 and second["key"].nunique() == 2
    assert not set(first["key"]) & set(second["key"])  # the old library's points are gone
    assert len(list((out / "sweeps" / "test__fake" / "parts").glob("*.parquet"))) == 4  # kept for resume
    assert prov["per_page"]["test/fake"]["library"] == "lib-two" and prov["pages"] == ["test/fake"]
    rep = atlas.atlas_report(out)
    assert rep.n_points == 2 and rep.min_draws == 2
    atlas.regenerate(["test/fake"], draws=3, workers=1, output=out, collect=True)  # runs nothing
    collected = pd.read_parquet(out / "atlas.parquet")
    assert set(collected["key"]) == set(second["key"])
    assert json.loads((out / "provenance.json").read_text())["per_page"]["test/fake"]["draws"] == 2


def test_build_only_modules_are_out_of_the_library_hash_and_never_imported_by_pages_or_lib():
    """An edit to the rendering code keeps the execution cache: that is only sound if neither a page nor
    any module a page can import imports a build-only module."""
    import ast

    lib = Path(parallel.__file__).resolve().parent
    names = {n[:-3] for n in parallel.BUILD_ONLY}
    sources = [p for p in (lib.parent.parent / "book").rglob("*.py")]
    sources += [p for p in lib.rglob("*.py") if not (p.parent == lib and p.name in parallel.BUILD_ONLY)]
    for src in sources:
        for node in ast.walk(ast.parse(src.read_text(encoding="utf-8"))):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            hit = [m for m in mods if m.split(".")[:2] in [["attnflow", n] for n in names]]
            assert not hit, f"{src}: imports the build-only module(s) {hit}"
    assert all((lib / n).exists() for n in parallel.BUILD_ONLY)


# The atlas page is built from the sweep table; it is not a page one sweeps.
_NOT_SWEPT = {"atlas"}


@pytest.mark.parametrize("page", [p for p in runner.list_pages() if p not in _NOT_SWEPT])
def test_every_page_has_a_sweep_space_whose_draws_its_schema_accepts(page):
    """`attnflow sweep PAGE --random N` works for every page of the book: book/sweeps.yml has its
    space, and draws of it (on top of the smoke profile) pass the page's own validation; the
    points differ, so a sweep is never N copies of one run."""
    assert parallel.load_space(page).dims, f"{page}: its sweep space in book/sweeps.yml varies nothing"
    points = parallel.draw_points(page, 3, seed=7, profile="smoke")  # each point is validated while drawn
    assert len(points) == 3 and len({json.dumps(p, sort_keys=True, default=str) for p in points}) == 3


def test_a_cluster_that_times_out_on_shutdown_loses_nothing(capsys):
    """On a loaded machine LocalCluster.close() can raise a TimeoutError after every point is written;
    the sweep reports it and still writes its table (seen in a fresh-seed sweep under load)."""

    class Slow:
        closed = False

        def close(self):
            Slow.closed = True
            raise TimeoutError("took too long")

    class Fine:
        def close(self):
            self.closed = True

    client = Fine()
    parallel._close(client, Slow())
    assert client.closed and Slow.closed and "did not shut down cleanly (TimeoutError)" in capsys.readouterr().err
    parallel._close(Fine(), None)  # a remote scheduler: no cluster to close


def _probe_page_environment():
    """In a Dask worker: MALLOC_TRIM_THRESHOLD_ outside and inside page_process, and what a child
    process (the page kernel) started inside it sees."""
    import os

    child = "import os; print(os.environ.get('MALLOC_TRIM_THRESHOLD_', 'unset'), os.environ.get('OMP_NUM_THREADS'))"
    outside = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    with parallel.page_process():
        kernel = subprocess.run(
            [sys.executable, "-c", child], capture_output=True, text=True, check=True
        ).stdout.split()
    return outside, kernel, os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_page_kernels_do_not_inherit_the_workers_malloc_trim():
    """Dask workers set MALLOC_TRIM_THRESHOLD_=65536 (pre-spawn-environ); a page kernel that inherits it
    runs 2× slower (see parallel.KERNEL_UNSET). The kernel must not see it, the worker keeps it, and
    the one-thread policy (OMP_NUM_THREADS=1) still reaches the kernel."""
    client, cluster = parallel._client(None, 1)
    try:
        outside, kernel, after = client.submit(_probe_page_environment, pure=False).result(timeout=60)
    finally:
        parallel._close(client, cluster)
    assert outside == "65536" and after == "65536"  # what distributed gives its workers
    assert kernel == ["unset", "1"]
