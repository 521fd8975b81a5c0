"""The package installs anywhere (issue 12 item 4): a wheel that carries the book, run from an empty folder.

``attnflow.resources`` (checkout / book above the folder / packaged copy) is unit-tested at the end.

``test_wheel_carries_the_book`` builds the wheel (from a copy of the tracked sources, so no
``build/`` folder lands in the checkout) and lists it. ``test_wheel_runs_in_a_fresh_venv`` makes
a fresh Python 3.11 venv, installs the wheel and runs ``attnflow pages`` and a cheap page in an
empty folder. Dependencies: by default the fresh venv borrows the project venv's packages through
a ``.pth`` path (the wheel itself is installed with ``--no-deps``, so ``attnflow`` is imported from
the wheel, never from the checkout) — a cold install of the ~180 pinned packages takes 1–15 min
on these shared CPUs. ``ATTNFLOW_WHEEL_DEPS=lock`` installs them instead, from the index with
the lock as constraints (``pip install -c requirements-lock.txt attnflow-*.whl``), as a user would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "_toc.yml", "lib", "book", "data")


def _copy_sources(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("*.ipynb", "__pycache__", "*.egg-info", ".*", "_build", "build", "_book")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = _copy_sources(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    (whl,) = out.glob("attnflow-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_carries_the_book(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    need = [
        "attnflow/_book/_toc.yml",
        "attnflow/_book/book/profiles.yml",
        "attnflow/_book/book/references.bib",
        "attnflow/_book/data/MANIFEST.json",
        "attnflow/claims.yml",
        "attnflow/export.py",
        "attnflow/resources.py",
    ]
    need += [f"attnflow/_book/book/{p.relative_to(ROOT / 'book')}" for p in (ROOT / "book").glob("*/*.py")]
    need += [f"attnflow/_book/data/{p.name}" for p in (ROOT / "data").glob("*.jsonl.gz")]
    assert [n for n in need if n not in names] == []
    assert not any(n.endswith(".ipynb") for n in names)
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Python: <3.14,>=3.11" in meta
    assert "Requires-Dist: torch<3,>=2.4" in meta and "Requires-Dist: pytest" not in meta.split("Provides-Extra")[0]


def _run(cmd, cwd, env, timeout=900):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("python3.11") is None and sys.version_info[:2] != (3, 11), reason="needs Python 3.11")
def test_wheel_runs_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    py311 = shutil.which("python3.11") or sys.executable
    subprocess.run([py311, "-m", "venv", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNFLOW_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(
        HOME=str(tmp_path / "home"),
        HF_DATASETS_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        PATH=f"{venv / 'bin'}:{env.get('PATH', '')}",
    )
    if os.environ.get("ATTNFLOW_WHEEL_DEPS") == "lock":
        _run(
            [vpy, "-m", "pip", "install", "-q", "-c", str(ROOT / "requirements-lock.txt"), str(wheel)],
            tmp_path,
            env,
            3600,
        )
        _run([vpy, "-m", "pip", "check"], tmp_path, env)
    else:
        _run([vpy, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], tmp_path, env)
        site = Path(
            _run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env).strip()
        )
        (site / "zz_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    empty = tmp_path / "course"
    empty.mkdir()
    where = _run(
        [vpy, "-c", "import attnflow, attnflow.resources as r; print(attnflow.__file__); print(r.book_root())"],
        empty,
        env,
    ).split()
    assert str(venv) in where[0] and str(ROOT) not in where[0], where  # the wheel, not the checkout
    assert where[1].endswith("attnflow/_book")
    pages = _run([venv / "bin" / "attnflow", "pages"], empty, env).split()
    assert "sharpening/lemma1_rescaling" in pages and "focus_dilution/real_text" in pages
    out = _run([venv / "bin" / "attnflow", "run", "sharpening/lemma1_rescaling", "--profile", "smoke"], empty, env)
    assert "0 failed" in out, out
    # a profile's overrides name a variant: runs/<page>-<hash of the values> (issue 25, item 6)
    (run_dir,) = (empty / "runs").glob("sharpening__lemma1_rescaling-*")
    assert (run_dir / "lemma1_rescaling.ipynb").exists()
    assert sorted(p.name for p in empty.iterdir()) == ["runs"]  # nothing else written here
    exported = _run(
        [
            venv / "bin" / "attnflow",
            "export",
            "sharpening/lemma1_rescaling",
            "--from",
            str(run_dir / "lemma1_rescaling.ipynb"),
            "--student",
            "--output",
            "nb",
        ],
        empty,
        env,
    )
    assert "lemma1_rescaling.student.ipynb" in exported


@pytest.mark.slow
def test_setup_cell_installs_the_wheel_next_to_the_notebook(wheel, tmp_path):
    """The first cell of a downloaded notebook (attnflow.export.install_cell_source), run by plain
    papermill in a fresh venv without attnflow and without a package index (PIP_NO_INDEX): it
    installs the wheel lying next to the notebook (the Colab path of book/teaching.md), and
    without one it stops with an error that names the fix. Dependencies are borrowed from the
    project venv (a .pth path), as in the test above; the wheel's own install is the one tested."""
    from attnflow import export

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNFLOW_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(
        HOME=str(tmp_path / "home"),
        HF_DATASETS_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        PIP_NO_INDEX="1",
        PATH=f"{venv / 'bin'}:{env.get('PATH', '')}",
    )
    site = Path(_run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env).strip())
    # borrowed: the project venv's packages less its (editable) attnflow, whose metadata would make
    # pip answer "already satisfied" without installing anything
    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "attnflow" not in entry.name.lower():
            (deps / entry.name).symlink_to(entry)
    (site / "zz_project_deps.pth").write_text(f"{deps}\n")
    # the venv's own setuptools (ensurepip's, older than torch asks for) would shadow the borrowed one
    _run([vpy, "-m", "pip", "uninstall", "-y", "-q", "setuptools"], tmp_path, env)
    probe = subprocess.run([vpy, "-c", "import attnflow"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0, "attnflow is importable in the fresh venv before the set-up cell ran"
    import nbformat

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(export.install_cell_source()),
            nbformat.v4.new_code_cell("print('from', attnflow.__file__)"),
        ]
    )
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}

    def run_in(folder: Path, with_wheel: bool):
        folder.mkdir()
        nbformat.write(nb, folder / "page.ipynb")
        if with_wheel:
            shutil.copy(wheel, folder / wheel.name)
        return subprocess.run(
            [vpy, "-m", "papermill", "page.ipynb", "out.ipynb", "-k", "python3", "--cwd", str(folder)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    bare = run_in(tmp_path / "no_wheel", with_wheel=False)
    assert bare.returncode != 0 and "could not be installed: put its wheel" in bare.stdout + bare.stderr, bare.stderr[
        -3000:
    ]
    course = tmp_path / "course"
    ran = run_in(course, with_wheel=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    text = "".join(
        o.get("text", "") for c in nbformat.read(course / "out.ipynb", as_version=4).cells for o in c.get("outputs", [])
    )
    assert f"from {site}" in text, text[-2000:]  # installed into the fresh venv, from the wheel


# ----------------------------------------------------------------------------- resources (fast)
def test_resources_in_the_checkout(monkeypatch):
    from attnflow import resources

    assert resources.checkout_root() == ROOT and resources.book_root() == ROOT
    assert resources.data_dir() == ROOT / "data"
    monkeypatch.delenv("ATTNFLOW_DATA_DIR", raising=False)
    assert resources.activate() == {}  # a checkout needs nothing
    assert "ATTNFLOW_DATA_DIR" not in os.environ


def test_resources_of_an_installed_package(tmp_path, monkeypatch):
    """Outside a checkout: a book above the current folder wins, else the packaged copy;
    activate() points the data layer at the packaged data and the cache at the user's cache."""
    from attnflow import resources

    packaged = tmp_path / "site" / "attnflow" / "_book"
    for d in (packaged / "book", packaged / "data"):
        d.mkdir(parents=True)
    (packaged / "_toc.yml").write_text("format: jb-book\n")
    (packaged / "data" / "MANIFEST.json").write_text("{}")
    monkeypatch.setattr(resources, "checkout_root", lambda: None)
    monkeypatch.setattr(resources, "PACKAGED", packaged)
    course = tmp_path / "course"
    course.mkdir()
    monkeypatch.chdir(course)
    assert resources.book_root() == packaged
    teacher = tmp_path / "teacher_book"
    (teacher / "book").mkdir(parents=True)
    (teacher / "_toc.yml").write_text("")
    (teacher / "book" / "profiles.yml").write_text("")
    (teacher / "sub").mkdir()
    assert resources.book_root(teacher / "sub") == teacher
    for k in ("ATTNFLOW_DATA_DIR", "ATTNFLOW_CACHE_DIR"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert resources.activate() == {
        "ATTNFLOW_DATA_DIR": str(packaged / "data"),
        "ATTNFLOW_CACHE_DIR": str(tmp_path / "cache" / "attnflow" / "data"),
    }
    monkeypatch.setenv("ATTNFLOW_DATA_DIR", "/mine")
    monkeypatch.delenv("ATTNFLOW_CACHE_DIR")
    assert "ATTNFLOW_DATA_DIR" not in resources.activate()  # a user's setting is kept
    monkeypatch.setattr(resources, "PACKAGED", tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="cannot find the attnflow book"):
        resources.book_root()
