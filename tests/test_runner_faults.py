"""The runner under faults (issue 15): check before computing, keep what was computed, clean up on
every signal, show progress, refuse what cannot end. Uses a tiny book of fake pages in tmp."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from attnflow import cli, runner

HEADER = '# %% tags=["parameters"]\n'

FAILING = (
    HEADER
    + """n = 1  # a number, with a comment holding 'quotes' and an = sign

# %%
from attnflow import claims
from attnflow.params import Param, Schema, validate
cfg = validate(globals(), Schema("demo/failing", n=Param(int, 0, 5, "a number")))

# %%
claims.check("A3", 1.0, 2.0, atol=0.1, what="deliberately wrong value")
claims.check("A4", 1.0, 1.0, atol=0.1, what="a right value, still checked after the failure")
claims.finish()
"""
)

RAISING = (
    HEADER
    + """n = 1  # a number

# %%
from attnflow import claims
from attnflow.params import Param, Schema, validate
cfg = validate(globals(), Schema("demo/raising", n=Param(int, 0, 5, "a number")))

# %%
claims.check("A4", 1.0, 1.0, atol=0.1, what="checked before the error")
raise IndexError("index 3 is out of bounds for a page bug")
"""
)

SLEEPY = (
    HEADER
    + """seconds = 1.0      # how long the loop sleeps in total
steps = 10         # steps of the loop
pid_file = ""      # where the kernel writes its process id ('' = nowhere)

# %%
from attnflow import claims
from attnflow.params import Param, Schema, validate
SCHEMA = Schema("demo/sleepy", seconds=Param(float, 0, 600, "total sleep"), steps=Param(int, 1, 10**6, "steps"),
                pid_file=Param(str, doc="pid file"), cost=(lambda c: c.seconds, "seconds of sleep"))
cfg = validate(globals(), SCHEMA)

# %%
import os
import time
from attnflow.progress import progress
if cfg.pid_file:
    with open(cfg.pid_file, "w") as fh:
        fh.write(str(os.getpid()))
for _ in progress(range(cfg.steps), desc="sleeping"):
    time.sleep(cfg.seconds / cfg.steps)

# %%
claims.check("A4", 1.0, 1.0, atol=0.1, what="a right value")
claims.finish()
"""
)


TEACHER = (
    HEADER
    + """n = 1           # a number
noise = 0.0     # the teacher's own parameter

# %%
from attnflow import claims, params
from attnflow.params import Param, Schema, validate
SCHEMA = Schema("demo/teacher", n=Param(int, 0, 5, "a number"))
SCHEMA = SCHEMA.extend(noise=params.Param(float, lo=0, hi=0.5, doc="label noise"))
cfg = validate(globals(), SCHEMA)

# %%
claims.register("T1", statement="The noise is what was asked for.", provenance="reconstruction")
claims.check("T1", cfg.noise, 0.25, atol=1e-12, what="noise")
claims.finish()
"""
)


@pytest.fixture
def tiny_book(tmp_path):
    root = tmp_path / "book_root"
    (root / "book" / "demo").mkdir(parents=True)
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/demo/failing\nchapters:\n"
        "- file: book/demo/raising\n- file: book/demo/sleepy\n- file: book/demo/teacher\n"
    )
    (root / "_config.yml").write_text("title: t\n")
    (root / "book" / "profiles.yml").write_text("smoke: {}\n")
    for name, src in (("failing", FAILING), ("raising", RAISING), ("sleepy", SLEEPY), ("teacher", TEACHER)):
        (root / "book" / "demo" / f"{name}.py").write_text(src)
    return root


@pytest.fixture
def in_tiny_book(tiny_book, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_BOOK_ROOT", str(tiny_book))
    return tiny_book


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*")) if folder.exists() else []


# --- check before computing -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["_foo", "params", "claims", "SCHEMA", "cfg"])
def test_names_not_in_the_parameters_cell_exit_2(in_tiny_book, tmp_path, capsys, name):
    out = tmp_path / "out"
    assert cli.main(["run", "demo/sleepy", "-p", f"{name}=1", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"unknown parameter(s) {name!r}" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_output_that_is_a_file_exits_2_before_running(in_tiny_book, tmp_path, capsys):
    f = tmp_path / "taken"
    f.write_text("x")
    t = time.monotonic()
    assert cli.main(["run", "demo/sleepy", "-p", "seconds=60", "--output", str(f)]) == 2
    assert time.monotonic() - t < 30  # refused before the 60 s page runs
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and f.read_text() == "x"


def test_unwritable_output_folder_exits_2_and_creates_nothing(in_tiny_book, tmp_path, capsys):
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "out"
    else:  # root ignores file modes; sysfs refuses new folders
        target = Path("/sys/attnflow-test-output/out")
    assert cli.main(["run", "demo/sleepy", "--output", str(target)]) == 2
    err = capsys.readouterr().err
    assert "cannot write to the output folder" in err and "--output" in err
    assert not target.exists()


def test_a_folder_in_the_way_of_the_notebook_exits_2(in_tiny_book, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "sleepy.ipynb").mkdir(parents=True)
    assert cli.main(["run", "demo/sleepy", "--output", str(out)]) == 2
    assert "a folder is in the way" in capsys.readouterr().err
    assert leftovers(out) == ["sleepy.ipynb"]


def test_cost_above_the_limit_is_refused_unless_forced(in_tiny_book, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_MAX_SECONDS", "5")
    out = tmp_path / "out"
    assert cli.main(["run", "demo/sleepy", "-p", "seconds=60", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "would run about 60 s" in err and "seconds of sleep" in err and "--force" in err
    assert not out.exists()


def test_force_lifts_the_cost_limit_in_validation(in_tiny_book, monkeypatch):
    import jupytext

    monkeypatch.setenv("ATTNFLOW_MAX_SECONDS", "5")
    nb = jupytext.read(in_tiny_book / "book/demo/sleepy.py")
    with pytest.raises(runner.RunError, match="would run about"):
        runner.prevalidate(nb, {"seconds": 60.0}, in_tiny_book)
    monkeypatch.setenv("ATTNFLOW_FORCE", "1")
    runner.prevalidate(nb, {"seconds": 60.0}, in_tiny_book)


# --- keep what was computed -------------------------------------------------------------------


@pytest.mark.notebook
def test_a_failed_claim_keeps_notebook_and_record(in_tiny_book, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "demo/failing", "-p", "n=2", "--output", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "deliberately wrong value" in err and str(out / "failing.ipynb") in err
    assert "1 passed" in err and "1 failed" in err and "outside domain" in err
    assert "Passed unknown parameter" not in err and "Unable to parse line" not in err
    assert leftovers(out) == ["failing.claims.json", "failing.ipynb"]
    nb = nbformat.read(out / "failing.ipynb", as_version=4)
    text = json.dumps(nb, ensure_ascii=False)
    assert "✘ A3 deliberately wrong value" in text and "n = 2" in text
    rec = json.loads((out / "failing.claims.json").read_text())
    assert [r["verdict"] for r in rec["claims"]] == ["fail", "pass"]


@pytest.mark.notebook
def test_a_page_that_raises_keeps_its_notebook_and_names_the_cell(in_tiny_book, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(runner.PageFailed) as e:
        runner.run_page("demo/raising", output=out)
    msg = str(e.value)
    assert "\n" not in msg and "IndexError: index 3 is out of bounds" in msg and "claims.check" in msg
    assert e.value.result.notebook == out / "raising.ipynb" and e.value.result.passed == 1
    assert leftovers(out) == ["raising.claims.json", "raising.ipynb"]


@pytest.mark.notebook
def test_a_full_disk_on_saving_says_so_and_leaves_nothing(in_tiny_book, tmp_path, monkeypatch):
    import errno

    real = os.replace

    def full(src, dst, *a, **k):
        if str(dst).endswith(".ipynb") and ".attnflow-run-" not in str(dst):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *a, **k)

    monkeypatch.setattr(runner.os, "replace", full)
    out = tmp_path / "out"
    with pytest.raises(runner.PageFailed, match="No space left on device"):
        runner.run_page("demo/sleepy", output=out, parameters={"seconds": 0.0})
    assert leftovers(out) == []  # neither the notebook nor the claims record alone


# --- signals, timeouts, progress --------------------------------------------------------------


def _spawn(root: Path, out: Path, *args: str, env_extra=None) -> subprocess.Popen:
    env = dict(os.environ, ATTNFLOW_BOOK_ROOT=str(root), **(env_extra or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "attnflow.cli", "run", "demo/sleepy", "--output", str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(path: Path, seconds: float) -> None:
    t = time.monotonic()
    while not (path.exists() and path.read_text().strip()):
        if time.monotonic() - t > seconds:
            raise AssertionError(f"{path} was not written within {seconds} s")
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _kernel_socket_dir(pid: int) -> Path:
    """The private directory of a running kernel's Unix sockets, read from its connection file
    (``-f FILE`` on its command line): channels over TCP ports would race with every other
    process for free ports (runner.kernel.PrivateSocketKernelManager)."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    info = json.loads(Path(argv[argv.index("-f") + 1]).read_text())
    assert info["transport"] == "ipc", info
    sockets = Path(info["ip"]).parent
    assert sockets.name.startswith("attnflow-kernel-") and (sockets / "ch-1").exists(), info
    return sockets


@pytest.mark.notebook
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_kernel_and_leaves_no_files(tiny_book, tmp_path, sig, code):
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = Path(jupyter_runtime_dir())
    before = set(runtime.glob("kernel-*.json")) if runtime.exists() else set()
    out, pid_file = tmp_path / "out", tmp_path / "kernel.pid"
    proc = _spawn(tiny_book, out, "-p", "seconds=120", "-p", f"pid_file='{pid_file}'", "--quiet")
    _wait_for(pid_file, 120)
    kernel = int(pid_file.read_text())
    sockets = _kernel_socket_dir(kernel)
    assert sockets.is_dir()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    lines = [ln for ln in err.strip().splitlines() if "without encryption" not in ln]
    assert lines[-1].startswith("attnflow run: interrupted by " + sig.name) and "Traceback" not in err
    assert leftovers(out) == []  # no temp folder, no partial notebook, no connection file
    assert not sockets.exists()  # nor the kernel's socket directory
    after = set(runtime.glob("kernel-*.json")) if runtime.exists() else set()
    assert after <= before
    t = time.monotonic()
    while _alive(kernel) and time.monotonic() - t < 10:
        time.sleep(0.2)
    assert not _alive(kernel)


@pytest.mark.notebook
def test_a_finished_run_removes_the_kernel_socket_directory(tiny_book, tmp_path):
    out, pid_file = tmp_path / "out", tmp_path / "kernel.pid"
    proc = _spawn(tiny_book, out, "-p", "seconds=4", "-p", f"pid_file='{pid_file}'", "--quiet")
    _wait_for(pid_file, 120)
    sockets = _kernel_socket_dir(int(pid_file.read_text()))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert not sockets.exists()


@pytest.mark.notebook
def test_a_cell_timeout_is_one_line_naming_the_cell_and_limit(in_tiny_book, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "demo/sleepy", "-p", "seconds=60", "--timeout", "3", "--output", str(out), "--quiet"]) == 1
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if "without encryption" not in ln]
    assert len(err) == 1 and "ran past the time limit of 3 s per cell" in err[0]
    assert "code cell 4 of 5 (`if cfg.pid_file:`)" in err[0]
    assert (out / "sleepy.ipynb").exists()  # what ran is kept


@pytest.mark.notebook
def test_heartbeat_names_the_cell_and_the_pages_progress_bar(in_tiny_book, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "HEARTBEAT_S", 0.5)
    lines: list[str] = []
    res = runner.run_page(
        "demo/sleepy", parameters={"seconds": 6.0, "steps": 30}, output=tmp_path / "out", quiet=False, echo=lines.append
    )
    assert res.passed == 1 and lines
    assert any("code cell 4 of 5" in ln and "sleeping:" in ln for ln in lines), lines
    nb = nbformat.read(res.notebook, as_version=4)
    assert "sleeping" not in json.dumps([c.get("outputs") for c in nb.cells])  # bars stay out of the notebook


def test_signals_raise_maps_sighup_to_an_exit_code():
    before = signal.getsignal(signal.SIGHUP)
    if before == signal.SIG_IGN:  # started under nohup: SIGHUP is ignored, and stays so
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    with pytest.raises(runner.Interrupted) as e:
        with runner.signals_raise():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(5)
    assert e.value.exit_code == 129 and e.value.name == "SIGHUP"
    assert signal.getsignal(signal.SIGHUP) in (signal.SIG_DFL, None) or callable(signal.getsignal(signal.SIGHUP))
    signal.signal(signal.SIGHUP, before)


@pytest.mark.notebook
def test_a_teachers_parameter_and_claim_run_through_the_runner(in_tiny_book, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "demo/teacher", "-p", "noise=0.6", "--output", str(out)]) == 2
    assert "parameter 'noise' (label noise)" in capsys.readouterr().err
    assert cli.main(["run", "demo/teacher", "-p", "noise=0.25", "--output", str(out), "--quiet"]) == 0
    rec = json.loads((out / "teacher.claims.json").read_text())
    assert rec["claims"][0]["id"] == "T1" and rec["claims"][0]["verdict"] == "pass"


def test_kernel_sockets_fall_back_to_tcp_under_a_long_temp_folder(tmp_path, monkeypatch):
    """A Unix socket path holds at most 107 bytes: under a temp folder too long for one, TCP."""
    import tempfile

    from attnflow.runner.kernel import SOCKET_TMP_MAX, PrivateSocketKernelManager

    assert PrivateSocketKernelManager().transport == ("ipc" if os.name == "posix" else "tcp")
    deep = tmp_path / ("d" * (SOCKET_TMP_MAX + 1))
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    km = PrivateSocketKernelManager()
    assert km.transport == "tcp" and km.socket_dir is None and not list(deep.iterdir())
