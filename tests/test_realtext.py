"""The focus–dilution real-text model (issue 7): focus_dilution.realtext (real token streams, the
bigram Markov approximation). Everything runs on tiny synthetic token data, offline, in seconds."""

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import chain, realtext
from attnflow.params import ParameterError


# ---------------------------------------------------------------------------- focus–dilution
def toy_stream(n_low=5, n=6000, seed=0) -> realtext.RealStream:
    """A token stream from the reference hub chain, dressed as a corpus (UNK = the last id)."""

    ch = chain.hub_family(n_low=n_low)
    d = ch.d
    ids = chain.sample_sequences(ch, 1, n, torch.Generator().manual_seed(seed))[0]
    return realtext.RealStream(
        "toy", "[test] toy chain", True, ids[: n - 1000], ids[n - 1000 :], [f"w{k}" for k in range(d - 1)] + ["<unk>"]
    )


def test_windows_bigram_chain_and_uniform_attention_at_the_origin():
    text = toy_stream()
    ex = realtext.window_examples(text.train, text.d, 200, 16, seed=0)
    assert float(ex.weights.sum()) == pytest.approx(1.0) and bool((ex.counts.sum(0) == 16).all())
    ch = realtext.bigram_chain(text.train, text.d, smoothing=0.1)
    assert np.allclose(ch.P.sum(1), 1.0) and ch.pi.min() > 0
    zero = {
        "W0": torch.zeros(1, text.d, 4),
        "WQ": torch.zeros(1, 4, 4),
        "WK": torch.zeros(1, 4, 4),
        "W1": torch.zeros(1, 4, text.d),
    }
    mass, share, entropy = realtext.token_attention(zero, ex)
    assert np.allclose(mass[0], share) and entropy[0] == pytest.approx(np.log(16))  # uniform: lift 1, H = log s
    with pytest.raises(ParameterError, match="smoothing"):
        realtext.bigram_chain(text.train, text.d, smoothing=0.0)
    with pytest.raises(ParameterError, match="seq_len"):
        realtext.window_examples(text.train[:10], text.d, 5, 16, seed=0)
    with pytest.raises(ParameterError, match="corpus"):
        realtext.load_stream("bookcorpus")


@pytest.fixture(scope="module")
def toy_run():
    """300 GD steps of the real-text run and its Markov twin on the toy stream (shared by two tests)."""
    text = toy_stream()
    return text, realtext.train(
        text,
        seq_len=16,
        n_train=256,
        n_eval=128,
        steps=300,
        lr=0.5,
        record_every=10,
        init_scale=1e-2,
        d_model=4,
        device="cpu",
    )


def test_real_text_run_and_markov_run_from_the_same_start(toy_run):
    text, res = toy_run
    for run in ("real", "markov"):
        assert torch.equal(res.runs[run].states["W0"][0], res.runs["real"].states["W0"][0])  # same θ(0)
        assert res.val_loss[run][-1] < res.val_loss[run][0] - 0.05  # log d → below the unigram entropy
    assert res.lift().shape == (31, text.d) and np.allclose(res.lift()[0], 1.0)
    m = realtext.milestones(res, move=0.01)
    assert m["rank_cond"] < m["rank_init"] and 0.0 <= m["gap_plateau"] <= m["gap_all"]
    assert np.isfinite(m["move_corr"]) and 0.0 <= m["move_sign"] <= 1.0


def test_lifts_at_a_time_and_missing_pieces(toy_run):
    text, res = toy_run
    lift = res.lift()
    got = realtext.lifts_at(res, res.t[5] + 0.1, ["w0", "w2", "absent"], [1, 2])  # nearest record: 5
    assert got["w0"] == pytest.approx(lift[5, 0]) and got["w2"] == pytest.approx(lift[5, 2])
    assert got["group"] == pytest.approx(lift[5, [1, 2]].mean()) and np.isnan(got["absent"])
    m = realtext.milestones(res, move=0.01)
    for key in ("t_escape_val", "t_escape_markov", "t_half", "t_half_markov"):  # NaN = not within the run
        assert np.isnan(m[key]) or res.t[0] <= m[key] <= res.t[-1], key


def test_saddle_lift_on_contexts_distributed_as_pi_is_r3s_closed_form():
    """On population contexts (composition π) the saddle focus mode's lift is R3's
    sign(g)·(π_k − ‖π‖²) up to a positive factor; real windows differ only in their composition."""
    from attnflow.focus_dilution import closed_forms, training

    for ch in (chain.hub_family(4, 0.5, 0.3, 0.4, 0.1), chain.hub_family(n_low=5)):
        lift = realtext.saddle_lift(ch, training.population_examples(ch), 6)
        r3 = np.sign(closed_forms.g_rate(ch)) * (ch.pi - ch.pi @ ch.pi)
        assert np.abs(lift).max() == pytest.approx(1e-4, rel=1e-3)  # scaled linearly: second-order terms O(1e-4)
        assert np.corrcoef(lift, r3)[0, 1] == pytest.approx(1.0, abs=1e-9)
        assert float(lift @ r3) > 0  # the same sign, not only the line


def test_attention_mode_is_the_whole_degenerate_eigenspace():
    """The scores do not change under WQ → WQ R, WK → WK R, so the unstable eigenvalue is m-fold and
    the amplitude is the projection on that eigenspace: the same for a rotated state (one basis vector
    of it, which LAPACK picks, would give a different number)."""
    from attnflow.focus_dilution.model import PopulationLoss, rank_one_params
    from attnflow.focus_dilution import closed_forms

    ch, m = chain.hub_family(4, 0.5, 0.3, 0.4, 0.1), 6
    c1 = closed_forms.theta_c1(ch)
    theta = rank_one_params(c1.a, c1.b, 0.0, m)
    gen = torch.Generator().manual_seed(0)
    theta["WQ"], theta["WK"] = (1e-3 * torch.randn(m, m, generator=gen, dtype=torch.float64) for _ in range(2))
    R = torch.linalg.qr(torch.randn(m, m, generator=gen, dtype=torch.float64))[0]
    mode = realtext.attention_mode(theta, PopulationLoss(ch))
    turned = realtext.attention_mode(dict(theta, WQ=theta["WQ"] @ R, WK=theta["WK"] @ R), PopulationLoss(ch))
    assert mode.multiplicity == m and turned.multiplicity == m
    assert mode.rate == pytest.approx(closed_forms.g_rate(ch), rel=1e-6) and turned.rate == pytest.approx(
        mode.rate, rel=1e-9
    )
    assert turned.amplitude == pytest.approx(mode.amplitude, rel=1e-9)


@pytest.mark.parametrize("where", ["theta_c1", "random"])
def test_attention_mode_closed_form_is_the_autograd_hessian(where):
    """The closed form (one gradient, K = ∂L/∂(WQ WKᵀ) at 0) against the full autograd Hessian of the
    loss in (WQ, WK) at WQ = WK = 0, eigen-decomposed as the old ``attention_mode`` did: the rate, the
    amplitude on the degenerate eigenspace and its multiplicity agree to rounding."""
    from attnflow.focus_dilution import closed_forms
    from attnflow.focus_dilution.model import PopulationLoss, rank_one_params

    ch, m = chain.hub_family(4, 0.5, 0.3, 0.4, 0.1), 5
    gen = torch.Generator().manual_seed(3)
    if where == "theta_c1":
        c1 = closed_forms.theta_c1(ch)
        theta = rank_one_params(c1.a, c1.b, 0.0, m)
    else:  # a generic state: W0, W1 off the rank-one manifold
        theta = {
            n: 0.3 * torch.randn(*s, generator=gen, dtype=torch.float64)
            for n, s in (("W0", (ch.d, m)), ("WQ", (m, m)), ("WK", (m, m)), ("W1", (m, ch.d)))
        }
    theta["WQ"], theta["WK"] = (1e-3 * torch.randn(m, m, generator=gen, dtype=torch.float64) for _ in range(2))
    loss = PopulationLoss(ch)
    size = m * m

    def at(x):
        return loss(dict(theta, WQ=x[:size].reshape(m, m), WK=x[size:].reshape(m, m)))

    H = torch.autograd.functional.hessian(at, torch.zeros(2 * size, dtype=torch.float64)).numpy()
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    E = V[:, np.abs(lam - lam[0]) <= 1e-8 * abs(lam[0])]
    x = torch.cat([theta["WQ"].reshape(-1), theta["WK"].reshape(-1)]).numpy()
    mode = realtext.attention_mode(theta, loss)
    assert mode.rate == pytest.approx(-lam[0], rel=1e-10)
    assert mode.multiplicity == E.shape[1] == m
    assert mode.amplitude == pytest.approx(float(np.linalg.norm(E.T @ x)), rel=1e-8)
    assert np.allclose(
        np.sort(lam),
        np.sort(np.concatenate([-np.linalg.svd(H[:size, size:])[1], np.linalg.svd(H[:size, size:])[1]])),
        atol=1e-12,
    )
