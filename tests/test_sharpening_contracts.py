"""The sharpening page contracts (``sharpening.contracts``): one schema per page, book defaults
accepted, and every rule a page's computation would raise on mid-run rejected at validation."""

import ast
from pathlib import Path

import jupytext
import pytest

from attnflow import train
from attnflow.params import ParameterError
from attnflow.sharpening import contracts, data, model, symbolic

BOOK = Path(__file__).resolve().parents[1] / "book"
PAGES = (
    "lemma1_rescaling",
    "scalar_reduction",
    "line_theorem",
    "growth_rates",
    "sharpening_mechanism",
    "four_parametrizations",
    "ratio_sweep",
    "dtap_heatmaps",
    "where_it_breaks",
    "real_squad",
    "real_hatexplain",
    "real_sva",
)


def defaults(page: str) -> dict:
    """The literal assignments of a page's parameters cell (its book defaults)."""
    nb = jupytext.read(BOOK / "sharpening" / f"{page}.py")
    out = {}
    for node in ast.parse(next(c for c in nb.cells if c.cell_type == "code").source).body:
        if isinstance(node, ast.Assign):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_one_schema_per_page_and_the_page_uses_it():
    assert sorted(contracts.BY_PAGE) == sorted(f"sharpening/{p}" for p in PAGES)
    for page in PAGES:
        schema = contracts.BY_PAGE[f"sharpening/{page}"]
        source = (BOOK / "sharpening" / f"{page}.py").read_text()
        name = next(n for n, v in vars(contracts).items() if n.isupper() and v is schema)
        assert f"from attnflow.sharpening.contracts import {name}" in source
        assert f"params.validate(globals(), {name})" in source


@pytest.mark.parametrize("page", PAGES)
def test_book_defaults_validate(page):
    contracts.BY_PAGE[f"sharpening/{page}"].validate(defaults(page))


def test_names_are_the_models_and_optimizers_the_engines():
    assert contracts.NAMES == tuple(model.PARAMETRIZATIONS) == symbolic.PARAMETRIZATIONS
    assert set(contracts.SYNTHETIC_OPTIMIZERS) <= set(train.OPTIMIZERS)
    assert set(contracts.REAL_OPTIMIZERS) <= set(train.OPTIMIZERS)


def reject(page: str, match: str, **bad):
    with pytest.raises(ParameterError, match=match):
        contracts.BY_PAGE[f"sharpening/{page}"].validate({**defaults(page), **bad})


def test_population_too_large_is_refused_before_running():
    """n_common = 50 with n = 1000 positions has far more than POPULATION_MAX compositions."""
    task = data.Task(n_classes=5, n_common=50, seq_len=1002)
    assert data.n_compositions(task) > data.POPULATION_MAX
    for page in ("scalar_reduction", "line_theorem"):
        reject(
            page,
            "exact population",
            n_common=50,
            n_compete=1000,
            **({"horizon": 1e3} if page == "line_theorem" else {}),
        )
    reject("sharpening_mechanism", "exact population", pop_n_common=6, n_compete=1000, horizon=1e3)


def test_line_theorem_gd_step_longer_than_the_time_is_refused():
    reject("line_theorem", "at least one step", gd_steps=[1.0, 0.5], gd_time=0.25)


def test_growth_fit_window_must_start_after_one():
    reject("growth_rates", "fit_from", fit_from=1.0)


def test_mechanism_seeds_are_distinct():
    reject("sharpening_mechanism", "seeds are distinct", seeds=[0, 0])


def test_real_pages_need_baseline_and_faster_ratio():
    for page in ("real_squad", "real_hatexplain", "real_sva"):
        reject(page, "baseline 1", lr_ratios=[2.0, 4.0])
        reject(page, "optimizers", optimizers=["gd"])
