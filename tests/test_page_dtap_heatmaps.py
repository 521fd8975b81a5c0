"""Primitives of the page sharpening/dtap_heatmaps on hand-made held-out values (no training): the
DTAP maps and AC sweep per model type, the TV distance, the separating threshold, the paired rise
over r, and the claims criteria the page checks with (claims.smallest / above / below)."""

from types import SimpleNamespace

import numpy as np
import pytest

from attnflow import claims
from attnflow.sharpening import metrics
from attnflow.sharpening.model import PARAMETRIZATIONS

CENTRE = {("CACO", 1.0): 0.8, ("CAFO", 1.0): 0.5, ("FACO", 1.0): 0.97, ("FAFO", 1.0): 0.82, ("FAFO", 10.0): 0.997}


def held_out(seeds=(0, 1, 2)):
    """specs and an evaluate()-like dict: each model type's attention is centred on a known mass."""
    specs, attn = [], []
    rng = np.random.default_rng(0)
    for (n, r), c in CENTRE.items():
        for s in seeds:
            specs.append(SimpleNamespace(parametrization=n, lr_ratio=r, seed=s))
            attn.append(np.clip(c + 0.002 * rng.standard_normal(100), 0, 1))
    attn = np.asarray(attn, dtype=np.float32)
    conf = np.full_like(attn, 0.9)
    ev = {
        "attn_relevant_each": attn,
        "confidence_each": conf,
        "attn_relevant": attn.astype(float).mean(-1),
        "acmc": ((attn >= 0.5) & (conf >= 0.5)).mean(-1),
    }
    return specs, ev


def test_by_model_type_pools_seeds_and_sweeps_thresholds():
    specs, ev = held_out()
    models = metrics.by_model_type(specs, ev, bins=10, taus=[0.3, 0.5, 0.9])
    assert list(models) == list(CENTRE)  # in the order of the specs
    faco, fafo, fast = models[("FACO", 1.0)], models[("FAFO", 1.0)], models[("FAFO", 10.0)]
    assert faco.heat.sum() == pytest.approx(1.0) and faco.mass.shape == (3,) and faco.ac.shape == (3, 3)
    assert faco.ac_at(0.9).tolist() == [1.0, 1.0, 1.0] and fafo.ac_at(0.9).max() == 0.0
    assert fafo.ac_mean(0.5) == 1.0 and np.isnan(fafo.ac_mean(0.7))  # 0.7 was not swept
    assert metrics.tv_distance(fafo.heat, faco.heat) == pytest.approx(1.0)  # different columns
    assert metrics.tv_distance(fast.heat, faco.heat) < 1.0  # r = 10: in FACO's column
    row = fafo.row(faco, 0.9)
    assert row["model"] == "FAFO r=1" and row["TV to FACO"] == pytest.approx(1.0) and row["AC(τ_a=0.9)"] == 0.0
    assert set(PARAMETRIZATIONS) == {n for n, _ in models}


def test_separating_threshold_and_tv_distance():
    assert metrics.separating_threshold([0.3, 0.5, 0.7]) == 0.5 and metrics.separating_threshold([0.5, 0.9]) == 0.9
    a, b = np.eye(2) / 2, np.fliplr(np.eye(2)) / 2
    assert metrics.tv_distance(a, b) == pytest.approx(1.0) and metrics.tv_distance(a, a) == 0.0


def test_smallest_rise_is_paired_by_seed():
    rise = metrics.smallest_rise([np.array([0.1, 0.2]), np.array([0.3, 0.25]), np.array([0.4, 0.2])])
    assert rise == pytest.approx([0.1, -0.05])
    assert np.isnan(metrics.smallest_rise([np.array([0.1, 0.2])])).all()  # one ratio: nothing to compare


def test_mass_or_nan():
    specs, ev = held_out()
    models = metrics.by_model_type(specs, ev, bins=10, taus=[0.5])
    assert metrics.mass_or_nan(models, "FAFO", 10).shape == (3,)
    assert np.isnan(metrics.mass_or_nan(models, "FAFO", 5.0)).all()


def test_claims_criteria_say_what_they_test():
    c = claims.smallest(1, ["TV(r = 1)", "TV(r_max)", "TV of every other parametrization"])
    assert c([0.5, 0.1, 0.3]) and not c([0.5, 0.4, 0.3]) and not c([0.1, 0.1, 0.3])  # strict
    assert c.__doc__ == "TV(r_max) < TV(r = 1), TV of every other parametrization"
    assert claims.above(0.5)([0.6, 0.7]) and not claims.above(0.5)([0.6, 0.5])
    assert claims.below(1e-3)(1e-4) and claims.below(1e-3).__doc__ == "< 0.001"
