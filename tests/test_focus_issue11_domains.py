"""Issue 11 (helper P): B10 "leaves the
unigram plateau" with a domain from the escape forecast of the saddle's unstable attention mode
(real_text). The B3 and B9 tests of the PCA page are in tests/test_page_pca_trajectories.py."""

import math

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import closed_forms, realtext
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.model import PopulationLoss, rank_one_params


# ----------------------------------------------------------------------------- B10 (real_text)
def test_attention_mode_at_theta_c1_is_the_spec_rate_g():
    """At θ_c¹ (κ = 0) the attention block of the population loss has the unstable rate g of R2."""
    ch = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    c1 = closed_forms.theta_c1(ch)
    theta = rank_one_params(c1.a, c1.b, 0.0, 6)
    theta["WQ"], theta["WK"] = 1e-3 * torch.eye(6), 1e-3 * torch.eye(6)[[1, 0, 2, 3, 4, 5]]
    mode = realtext.attention_mode(theta, PopulationLoss(ch))
    assert mode.rate == pytest.approx(closed_forms.g_rate(ch), rel=1e-6)
    assert 0 < mode.amplitude <= float(np.sqrt(2 * 6)) * 1e-3


def test_escape_forecast_is_the_linear_growth_of_the_mode():
    r, a0, drop = 0.05, 1e-3, 0.02
    t = realtext.escape_forecast(r, a0, drop, 10.0)
    assert 0.5 * r * (a0 * np.exp(r * (t - 10.0))) ** 2 == pytest.approx(drop, rel=1e-12)
    assert math.isinf(realtext.escape_forecast(0.0, a0, drop, 10.0))
    assert realtext.escape_forecast(r, 10.0, drop, 10.0) == 10.0  # already past the drop
