"""Markov chains of the focus–dilution chapter: the reference family, random chains, and the
clear errors for chains without a unique positive stationary distribution."""

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution.contracts import CONDENSATION, make_chain
from attnflow.focus_dilution.targets import SPEC
from attnflow.params import ParameterError


def test_reference_chain_constants_match_the_spec():
    c = chains.hub_family()
    assert np.allclose(c.pi, [0.375] + [0.15625] * 4, atol=1e-12), "π of the δ = 0 chain (spec §5.2)"
    assert c.unigram_entropy() == pytest.approx(SPEC["H_pi"], abs=5e-6)
    assert c.bigram_loss() == pytest.approx(SPEC["bigram"], abs=5e-6)
    assert np.log(c.d) == pytest.approx(SPEC["log_d"], abs=5e-6)
    assert np.allclose(c.P.sum(1), 1) and np.allclose(c.pi @ c.P, c.pi)


@pytest.mark.parametrize("delta", [0.0, 0.05, 0.4])
def test_family_rows_and_asymmetry(delta):
    c = chains.hub_family(delta=delta)
    xi = chains.asymmetry_direction(4, 0)
    assert xi.sum() == pytest.approx(0, abs=1e-12), "ξ is centred"
    assert np.allclose(c.P[1:, 0], 0.3 * (1 + delta * xi))
    assert np.allclose(c.pi @ c.P, c.pi, atol=1e-12)
    # cyclic successor carries the extra mass c_cyc
    j = 1
    assert c.P[j, 1 + (j % 4)] > c.P[j, 1 + ((j + 1) % 4)]


def test_dirichlet_chain_is_the_specs_random_chain():
    c = chains.dirichlet_chain(6, seed=0)
    P = np.random.default_rng(0).dirichlet(np.ones(6), size=6)
    assert np.allclose(c.P, P / P.sum(1, keepdims=True))
    assert c.unigram_entropy() == pytest.approx(SPEC["H_pi_random"], abs=5e-6)


@pytest.mark.parametrize(
    "P, words",
    [
        ([[0.5, 0.5], [0.0, 0.0]], ["row 1", "zero"]),
        ([[0.5, 0.6], [0.5, 0.5]], ["row 0", "sums to 1.1"]),
        ([[1.2, -0.2], [0.5, 0.5]], ["negative"]),
        ([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.5, 0.5]], ["2 independent stationary distributions", "unique"]),
        ([[0.0, 1.0], [0.0, 1.0]], ["token(s) [0]", "never"]),
        ([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]], ["square"]),
    ],
)
def test_bad_chains_raise_clear_errors(P, words):
    with pytest.raises(chains.ChainError) as e:
        chains.from_matrix(P)
    for w in words:
        assert w in str(e.value), f"error message {str(e.value)!r} should mention {w!r}"


def test_delta_out_of_range_names_delta_and_the_allowed_range():
    too_big = 1.01 * chains.max_delta(0.3, chains.asymmetry_direction(4, 0))
    with pytest.raises(chains.ChainError, match=r"delta = .*leave \(0, 1\).*allowed for b_h = 0.3"):
        chains.hub_family(delta=too_big)


def test_page_parameters_with_an_invalid_chain_raise_a_parameter_error():
    values = dict(
        chain="hub",
        n_low=4,
        a_h=0.5,
        b_h=0.9,
        c_cyc=0.4,
        delta=1.0,
        chain_seed=0,
        d_model=8,
        init_scale=1e-3,
        score_scale=1.0,
        seed=1,
        horizon=300.0,
        fit_window=[1.9, 3.8],
        euler_dt=0.05,
    )
    with pytest.raises(ParameterError, match="delta = 1.0"):
        CONDENSATION.validate(values)
    values.update(delta=0.0)
    cfg = CONDENSATION.validate(values)
    assert make_chain(cfg).d == 5


def test_sampled_sequences_follow_the_chain():
    c = chains.hub_family(delta=0.1)
    x = chains.sample_sequences(c, 4000, 16, generator=torch.Generator().manual_seed(0))
    assert x.shape == (4000, 17) and x.dtype == torch.long
    freq = np.bincount(x.numpy().ravel(), minlength=c.d) / x.numel()
    assert np.allclose(freq, c.pi, atol=0.01), "tokens are stationary-distributed"
    pairs = np.zeros((c.d, c.d))
    np.add.at(pairs, (x[:, :-1].numpy().ravel(), x[:, 1:].numpy().ravel()), 1)
    assert np.allclose(pairs / pairs.sum(1, keepdims=True), c.P, atol=0.02), "transitions follow P"
