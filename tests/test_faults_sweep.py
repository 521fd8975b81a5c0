"""Sweeps and the atlas under faults (issue 26): every bad argument is refused before any work with
exit 2 and one line naming it; a scheduler is probed with a bounded timeout; socket paths are
measured in bytes; writes are atomic; an interrupted sweep leaves no partial point and nothing in
$TMPDIR, and a resume runs the crashed points again. Uses test_parallel's fake page."""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_parallel import FAKE_PAGE

from attnflow import atlas, cli_sweep, parallel, runner

SLEEPY_PAGE = (
    FAKE_PAGE.replace(
        "crash = False    # raise inside the page\n",
        "crash = False    # raise inside the page\nnap = 0.0        # seconds of sleep\n",
    )
    .replace(
        'crash=params.Param(bool, doc="raise"))',
        'crash=params.Param(bool, doc="raise"), nap=params.Param(float, 0, 60, "sleep"))',
    )
    .replace("if cfg.crash:", "import time\ntime.sleep(cfg.nap)\nif cfg.crash:")
)


@pytest.fixture
def book(tmp_path, monkeypatch):
    root = tmp_path / "book_root"
    (root / "book" / "test").mkdir(parents=True)
    (root / "book" / "test" / "fake.py").write_text(SLEEPY_PAGE)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/test/fake\n")
    (root / "_config.yml").write_text("title: fake\n")
    (root / "book" / "profiles.yml").write_text("smoke:\n  test/fake: {x: 4.0}\n")
    (root / "book" / "sweeps.yml").write_text("test/fake:\n  seed: seed\n  x: {float: [0.0, 10.0]}\n")
    monkeypatch.setenv("ATTNFLOW_BOOK_ROOT", str(root))
    monkeypatch.setattr(runner, "book_root", lambda: root)
    return root


def sweep_cli(*argv):
    ap = argparse.ArgumentParser()
    cli_sweep.add_parser(ap.add_subparsers(dest="cmd"))
    return cli_sweep.run(ap.parse_args(["sweep", *argv]))


def one_error_line(capsys, prog, *words):
    err = capsys.readouterr().err.strip()
    lines = err.splitlines()
    if "pages are:" in lines[0]:  # the runner's unknown-page message lists the pages below its line
        lines = lines[:1]
    assert len(lines) == 1 and err.startswith(f"{prog}: ") and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


# --- 1. arguments, before any work --------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, words",
    [
        (["--random", "3", "--workers", "0"], ["--workers 0", "from 1 to"]),
        (["--random", "3", "--workers", "100000"], ["--workers 100000", f"to {parallel.MAX_WORKERS}"]),
        (["--random", "100000"], ["--random 100000", f"to {parallel.MAX_POINTS}"]),
        (["--grid", "x=" + "9" * 400], ["--grid x", "400 digits"]),
        (["--grid", "x=4.0,5.0", "--grid", "x=6.0"], ["--grid x is given twice", "x=4.0,5.0", "x=6.0"]),
    ],
)
def test_sweep_arguments_are_refused_before_any_work(book, tmp_path, capsys, monkeypatch, argv, words):
    monkeypatch.setattr(parallel, "_client", lambda *a: pytest.fail("a cluster was started"))
    start = time.perf_counter()
    assert sweep_cli("test/fake", *argv, "--output", str(tmp_path / "o")) == 2
    assert time.perf_counter() - start < 5 and not (tmp_path / "o").exists()
    one_error_line(capsys, "attnflow sweep", *words)


def test_a_huge_integer_for_a_float_parameter_is_a_named_refusal(book):
    with pytest.raises(runner.RunError, match="refused by page"):
        parallel.grid_points("test/fake", ["x=" + "9" * 17 + "0"], root=book)  # within ±1e18, beyond the range


def test_a_bad_cost_limit_in_the_environment_is_named(book, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_MAX_SECONDS", "abc")
    assert sweep_cli("test/fake", "--random", "2", "--output", str(tmp_path / "o")) == 2
    one_error_line(capsys, "attnflow sweep", "ATTNFLOW_MAX_SECONDS='abc'", "seconds > 0")
    assert atlas.main(["--draws", "2", "test/fake"]) == 2
    one_error_line(capsys, "atlas", "ATTNFLOW_MAX_SECONDS")


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--workers", "0"], ["--workers 0"]),
        (["--workers", "100000"], ["--workers 100000", str(parallel.MAX_WORKERS)]),
        (["--draws", "100000"], ["--draws 100000", str(parallel.MAX_POINTS)]),
        (["--random", "100000"], ["--draws 100000"]),
        (["--draws", "0"], ["--draws 0"]),
        (["--seed", "-1"], ["--seed -1"]),
        (["--profile", "nope"], ["unknown profile 'nope'"]),
        (["no/such_page"], ["no/such_page"]),
        (["--scheduler", "nonsense:"], ["--scheduler"]),
    ],
)
def test_atlas_arguments_are_refused_before_any_work(book, capsys, monkeypatch, argv, words):
    monkeypatch.setattr(atlas, "regenerate", lambda *a, **k: pytest.fail("the atlas started"))
    pages = [] if any(not a.startswith("-") and "/" in a for a in argv) else ["test/fake"]
    assert atlas.main([*argv, *pages]) == 2
    one_error_line(capsys, "atlas", *words)


def test_atlas_output_that_is_a_file_is_refused(book, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(atlas, "regenerate", lambda *a, **k: pytest.fail("the atlas started"))
    (tmp_path / "f").write_text("x")
    assert atlas.main(["--output", str(tmp_path / "f"), "test/fake"]) == 2
    one_error_line(capsys, "atlas", "--output", "a file is in the way")


# --- 2. the scheduler: probed, bounded, with workers --------------------------------------------
def test_a_refused_scheduler_exits_2_within_10_seconds(book, tmp_path, capsys):
    start = time.perf_counter()
    assert (
        sweep_cli("test/fake", "--random", "2", "--scheduler", "tcp://127.0.0.1:9", "--output", str(tmp_path / "o"))
        == 2
    )
    assert time.perf_counter() - start < 10 and not (tmp_path / "o").exists()
    one_error_line(capsys, "attnflow sweep", "--scheduler tcp://127.0.0.1:9", "nothing answers")


def test_a_malformed_scheduler_address_is_named():
    for bad in ("http://x:1", "tcp://host", "tcp://:80", "tcp://h:99999"):
        with pytest.raises(runner.RunError, match="--scheduler"):
            parallel.probe_scheduler(bad, timeout=1)


def test_a_listener_that_is_not_dask_is_refused_in_bounded_time():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    conns = []
    threading.Thread(target=lambda: [conns.append(srv.accept()) for _ in range(4)], daemon=True).start()
    start = time.perf_counter()
    try:
        with pytest.raises(runner.RunError, match="not a Dask scheduler"):
            parallel.probe_scheduler(f"tcp://127.0.0.1:{srv.getsockname()[1]}", timeout=1)
        assert time.perf_counter() - start < 8
    finally:
        srv.close()


def test_a_scheduler_without_workers_is_refused():
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        with pytest.raises(runner.RunError, match="no workers"):
            parallel.probe_scheduler(cluster.scheduler_address, timeout=1)


# --- 3. socket paths in bytes ---------------------------------------------------------------------
def test_a_short_cjk_temp_folder_too_long_in_bytes_falls_back_to_tcp(monkeypatch):
    import tempfile

    from attnflow.runner.kernel import SOCKET_TMP_MAX, PrivateSocketKernelManager, socket_path_fits

    cjk = Path("/tmp") / ("文" * 40 + f"{os.getpid()}")  # ≤ 52 characters, > 120 bytes
    assert len(str(cjk)) <= 52 < SOCKET_TMP_MAX < len(os.fsencode(str(cjk)))
    cjk.mkdir(exist_ok=True)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(cjk))
        assert not socket_path_fits(str(cjk)) and socket_path_fits("/tmp")
        km = PrivateSocketKernelManager()
        assert km.transport == "tcp" and km.socket_dir is None and not list(cjk.iterdir())
    finally:
        shutil.rmtree(cjk, ignore_errors=True)


# --- 4. atomic writes, clean interrupts, resume -----------------------------------------------------
def test_a_full_disk_while_writing_a_part_leaves_neither_a_part_nor_a_temporary(tmp_path, monkeypatch):
    import pandas as pd

    def full(self, path, *a, **k):
        Path(path).write_bytes(b"PAR1 trunc")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    rows = parallel.run_point_error("test/fake", "smoke", {"x": 1.0}, "k1", RuntimeError("x"))
    with pytest.raises(OSError, match="No space"):
        parallel._write_part(tmp_path, "k1", rows, {"x": 1.0})
    assert list((tmp_path / "parts").iterdir()) == []


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path):
    f = tmp_path / "provenance.json"
    f.write_text("old")

    def half(tmp):
        tmp.write_text("ne")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        parallel.atomic_write(f, half)
    assert f.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["provenance.json"]


def _ok_rows(page, profile, parameters, key, out_dir, root=None):
    return [
        dict(
            key=key,
            page=page,
            profile=profile or "book",
            status="ok",
            error="",
            wall_s=0.0,
            worker="w",
            claim_index=-1,
            claim=None,
            what=None,
            verdict=None,
            measured=None,
            expected=None,
            reason=None,
            source=None,
            parameters=json.dumps(dict(parameters), sort_keys=True),
        )
    ]


def test_a_resume_runs_crashed_points_again_and_says_how_many(book, tmp_path, monkeypatch, capsys):
    from dask.distributed import Client, LocalCluster

    lib = parallel.library_hash()
    monkeypatch.setattr(parallel, "library_hash", lambda root=None: lib)
    monkeypatch.setattr(parallel, "run_point", _ok_rows)
    monkeypatch.setattr(
        parallel,
        "_client",
        lambda s, w: (lambda c: (Client(c), c))(
            LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None)
        ),
    )
    points = parallel.grid_points("test/fake", ["x=2.0,3.0,4.0"], root=book)
    out = tmp_path / "s"
    src = (book / "book" / "test" / "fake.py").read_bytes()
    keys = [parallel.point_key(src, lib, "smoke", p) for p in points]
    parallel._write_part(out, keys[0], _ok_rows("test/fake", "smoke", points[0], keys[0], ""), points[0])
    parallel._write_part(
        out,
        keys[1],
        parallel.run_point_error("test/fake", "smoke", points[1], keys[1], RuntimeError("killed worker")),
        points[1],
    )
    (out / "points" / keys[2]).mkdir(parents=True)  # a partial point left by a SIGKILL
    (out / "points" / keys[2] / "fake.ipynb").write_text("{")
    table = parallel.sweep("test/fake", points, output=out, workers=1, root=book)
    said = capsys.readouterr().out
    assert "1 already done, 1 that crashed before run again, 2 to run" in said
    assert set(table.drop_duplicates("key")["status"]) == {"ok"} and table["key"].nunique() == 3
    assert not (out / "points" / keys[2]).exists()


def test_ctrl_c_in_the_atlas_is_one_line(book, capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(atlas, "regenerate", interrupted)
    assert atlas.main(["--draws", "2", "test/fake"]) == 130
    one_error_line(capsys, "atlas", "interrupted", "resume")


def test_local_workers_leave_ctrl_c_to_the_sweep():
    """Ctrl-C reaches the whole process group; a worker answering it prints Dask's traceback."""
    client, cluster = parallel._client(None, 1)
    try:
        assert set(client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN).values()) == {True}
    finally:
        parallel._close(client, cluster)


def _tmp_leftovers(tmp: Path):
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_sweep_leaves_no_partial_point_and_nothing_in_tmpdir_and_resumes(book, tmp_path, sig, code):
    tmp = Path("/tmp") / f"af-{os.getpid()}-{sig}"  # short: the kernels use Unix sockets
    tmp.mkdir()
    out = tmp_path / "sweep"
    env = dict(os.environ, TMPDIR=str(tmp), ATTNFLOW_BOOK_ROOT=str(book), PYTHONUNBUFFERED="1")
    cmd = [
        str(Path(sys.executable).parent / "attnflow"),
        "sweep",
        "test/fake",
        "--grid",
        "x=4.0,5.0",
        "--grid",
        "nap=4.0",
        "--workers",
        "1",
        "--output",
        str(out),
        "--quiet",
    ]
    try:
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        deadline = time.time() + 120
        while not any((out / "points").glob("*/*.ipynb")) if (out / "points").exists() else True:
            assert time.time() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)  # the kernel is inside the nap
        os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)  # Ctrl-C: the whole group
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == code, err
        assert "Traceback" not in err and f"interrupted by {signal.Signals(sig).name}" in err and "kept" in err
        time.sleep(2)  # kernels exit when their parent dies
        parts = {p.stem for p in (out / "parts").glob("*.parquet")} if (out / "parts").exists() else set()
        folders = {p.name for p in (out / "points").iterdir()} if (out / "points").exists() else set()
        assert folders <= parts, (folders, parts)  # no partial point
        assert not list((out / "parts").glob(".*")) if (out / "parts").exists() else True
        assert _tmp_leftovers(tmp) == []
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr  # the resume finishes the missing points
        assert len(list((out / "parts").glob("*.parquet"))) == 2 and _tmp_leftovers(tmp) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
