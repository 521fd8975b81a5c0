"""Reports of the training pages (pca_trajectories, robustness): the stage
helpers, the per-run measurements on small inputs (a missing stage gives NaN, never an error or a
silent pass), the seed statistics and domains of the claims, and the schema rules and cost
estimates that refuse bad input before anything runs."""

import math

import pytest

from attnflow import params
from attnflow.focus_dilution import contracts, stages
from attnflow.focus_dilution.realtext import SCHEMA as REAL_TEXT


# ----------------------------------------------------------------------------- stages helpers
def test_subsequence_and_missing_stage():
    names = ["condensation", "plateau", "focus", "dilution", "plateau", "escape", "focus", "escape", "dilution"]
    assert stages.has_subsequence(names)
    assert not stages.has_subsequence(names[:6])
    assert stages.letters(["condensation", "plateau"]) == "C P"
    st = stages.Stages(
        [
            stages.Stage("condensation", 0, 1, 1, 1.6),
            stages.Stage("plateau", 1, 5, 1, 1.5),
            stages.Stage("focus", 5, 6, 1, 1.5),
            stages.Stage("plateau", 6, 9, 1, 1.49),
        ],
        [],
    )
    assert st.get("plateau", 1, after=5).start == 6
    missing = st.get("escape")
    assert missing is stages.MISSING and math.isnan(missing.start) and math.isnan(missing.end)
    assert not st.has_cycle() and st.letters() == "C P F P"


def test_stages_import_no_plotting():
    import subprocess
    import sys

    code = (
        "import sys; import attnflow.focus_dilution.stages; "
        "print('seaborn' in sys.modules, 'matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


# ----------------------------------------------------------------------------- schemas
def _page_values(schema, page):
    import jupytext

    nb = jupytext.read(page)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    ns = {}
    exec(cell.source, ns)
    return {k: v for k, v in ns.items() if k in schema.params}


PAGES = {
    "cycle": contracts.CYCLE,
    "finite_sample": contracts.FINITE_SAMPLE,
    "pca_trajectories": contracts.PCA_TRAJECTORIES,
    "robustness": contracts.ROBUSTNESS,
}


@pytest.mark.parametrize("name", PAGES)
def test_defaults_validate_and_cost_about_a_minute(name, monkeypatch):
    from pathlib import Path

    schema = PAGES[name]
    values = _page_values(schema, Path(__file__).parents[1] / "book" / "focus_dilution" / f"{name}.py")
    cfg = schema.validate(values)
    assert 5 < schema.estimate(cfg) < 600


@pytest.mark.parametrize(
    "name, over, match",
    [
        ("cycle", dict(steps=1), "record_every"),
        ("cycle", dict(n_samples=10**7, seq_len=10**6), "sampled tokens"),
        ("robustness", dict(a_h_variants=[0.3, 0.7], b_h_variants=[0.5]), "same length"),
        ("robustness", dict(deltas=[0.1, 0.4]), "0.0"),
        ("robustness", dict(chain="dirichlet"), "hub"),
        ("robustness", dict(b_h=0.8, deltas=[0.0, 0.9]), "every δ of deltas"),  # b_h(1 + δξ) ≥ 1: no chain
        ("robustness", dict(a_h_variants=[0.3], b_h_variants=[0.99], delta=0.4), "chain variant"),
    ],
)
def test_bad_parameters_exit_before_running(name, over, match):
    from pathlib import Path

    schema = PAGES[name]
    values = _page_values(schema, Path(__file__).parents[1] / "book" / "focus_dilution" / f"{name}.py")
    with pytest.raises(params.ParameterError, match=match):
        schema.validate({**values, **over})


def test_real_text_reversed_mid_ranks_refused():
    from pathlib import Path

    values = _page_values(REAL_TEXT, Path(__file__).parents[1] / "book" / "focus_dilution" / "real_text.py")
    REAL_TEXT.validate(values)
    with pytest.raises(params.ParameterError, match="first ≤ last"):
        REAL_TEXT.validate({**values, "mid_ranks": [40, 15]})
    with pytest.raises(params.ParameterError, match="n_top"):
        REAL_TEXT.validate({**values, "mid_ranks": [2, 40]})
