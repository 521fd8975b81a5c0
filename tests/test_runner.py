"""The page runner: bad input exits 2 and writes nothing; a run writes notebook + claims (also when it fails).
Faults, signals and progress: tests/test_runner_faults.py."""

import json

import nbformat
import pytest

from attnflow import cli, runner

PAGE = "sharpening/lemma1_rescaling"


def test_pages_come_from_the_toc():
    pages = runner.list_pages()
    assert PAGE in pages and all((runner.book_root() / "book" / f"{p}.py").exists() for p in pages)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "sharpening/nope"], "unknown page"),
        (["run", PAGE, "--profile", "huge"], "unknown profile"),
        (["run", PAGE, "-p", "lr_qk=-1"], "parameter 'lr_qk'"),
        (["run", PAGE, "-p", "lr_qk=fast"], "expected a number"),
        (["run", PAGE, "-p", "lr_kq=1"], "unknown parameter(s) 'lr_kq'"),
        (["run", PAGE, "-p", "d=2", "-p", "d_h=3"], "d_h ≤ d"),
        (["run", PAGE, "-p", "novalue"], "key=value"),
        (["run", PAGE, "-p", "_foo=1"], "names starting with '_' are not parameters"),
        (["run", PAGE, "-p", "params=1"], "unknown parameter(s) 'params'"),
        (["run", PAGE, "-p", "claims=2"], "unknown parameter(s) 'claims'"),
        (["run", PAGE, "-p", "SCHEMA=3"], "unknown parameter(s) 'SCHEMA'"),
        (["run", PAGE, "-p", "imbalances=0.5"], "expected a list (e.g. -p imbalances=[0.5])"),
        (["run", PAGE, "-p", "imbalances=[0.0, 1.0, -2.0]"], "item 2 (-2.0) below the allowed range"),
        (["run", PAGE, "-p", f"imbalances={[0.1] * 20000}"], "list has 20000 items"),
        (["run", PAGE, "--timeout", "0"], "--timeout must be a positive"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, args, needle):
    out = tmp_path / "out"
    assert cli.main(args + ["--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.startswith("attnflow run: error:")
    assert len(err) < 3000  # a 20,000-item list is not echoed whole
    assert not out.exists()


def test_assignments_are_typed():
    vals = runner.parse_assignments(["r=3", "x=2.5", "m='FAFO'", "ms=['CACO', 'FAFO']", "flag=True", "name=BDF"])
    assert vals == {"r": 3, "x": 2.5, "m": "FAFO", "ms": ["CACO", "FAFO"], "flag": True, "name": "BDF"}
    assert runner.parse_assignments(["ms=[CACO, FAFO]", "xs=[1, 2.5]", "e=[]"]) == {
        "ms": ["CACO", "FAFO"],
        "xs": [1, 2.5],
        "e": [],
    }


@pytest.mark.notebook
def test_a_valid_new_value_is_injected_and_recorded(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", PAGE, "--profile", "smoke", "-p", "lr_qk=0.5", "--output", str(out)]) == 0
    assert "claims" in capsys.readouterr().out
    nb = nbformat.read(out / "lemma1_rescaling.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "lr_qk = 0.5" in injected[0].source
    rec = json.loads((out / "lemma1_rescaling.claims.json").read_text())
    assert rec["parameters"]["lr_qk"] == 0.5 and all(r["verdict"] in ("pass", "outside") for r in rec["claims"])


FAILING_PAGE = """# %% tags=["parameters"]
n = 1  # a number

# %%
from attnflow import claims
from attnflow.params import Param, Schema, validate
cfg = validate(globals(), Schema("demo/failing", n=Param(int, 0, 5, "a number")))

# %%
claims.check("A3", 1.0, 2.0, atol=0.1, what="deliberately wrong value")
claims.check("A4", 1.0, 1.0, atol=0.1, what="a right value, still checked after the failure")
claims.finish()
"""


@pytest.fixture
def tiny_book(tmp_path):
    root = tmp_path / "book_root"
    (root / "book" / "demo").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/demo/failing\n")
    (root / "_config.yml").write_text("title: t\n")
    (root / "book" / "profiles.yml").write_text("smoke: {}\n")
    (root / "book" / "demo" / "failing.py").write_text(FAILING_PAGE)
    return root


@pytest.mark.notebook
def test_a_failing_claim_fails_the_run_and_keeps_its_notebook(tiny_book, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(runner.PageFailed) as e:
        runner.run_page("demo/failing", output=out, root=tiny_book)
    msg = str(e.value)
    assert "ClaimFailed" in msg and "deliberately wrong value" in msg and str(out / "failing.ipynb") in msg
    assert sorted(p.name for p in out.iterdir()) == ["failing.claims.json", "failing.ipynb"]
    assert e.value.result.failed == 1 and e.value.result.passed == 1


def test_tiny_book_bad_parameter_is_rejected_before_running(tiny_book, tmp_path):
    with pytest.raises(runner.RunError, match="parameter 'n'"):
        runner.run_page("demo/failing", parameters={"n": 9}, output=tmp_path / "o", root=tiny_book)
    assert not (tmp_path / "o").exists()


def test_default_output_is_per_variant_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = runner.book_root()
    a = runner.output_folder(None, root, PAGE)
    b = runner.output_folder(None, root, PAGE, {"lr_qk": 0.5})
    c = runner.output_folder(None, root, PAGE, {"lr_qk": 0.25})
    assert a == tmp_path / "runs" / "sharpening__lemma1_rescaling"
    assert b.parent == a.parent and b.name.startswith(a.name + "-") and b != c
    assert runner.output_folder("x", root, PAGE, {"lr_qk": 0.5}) == tmp_path / "x"
