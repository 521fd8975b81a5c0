"""The fused loss and gradient of the focus–dilution training (``attnflow.focus_dilution.fused``, issue 23)
against autograd of ``training.run_losses``.

Tolerances: float64, 1e-12 relative (norm-wise per gradient, per run for the losses; measured ~1e-15 to
3e-14; at a saturated θ whose gradients are ~1e-11 from cancellation, 1e-12·max|L| absolute). float32: both
paths round differently, so each is compared with the float64 value at the same float32 inputs, and the fused
path's error must be within 4× autograd's own error (+1e-6 relative); measured they are equal to within 10 %.
Every test runs on both passes: the one-hot products of a small vocabulary and the gathered, low-rank pass of a
wide one (``fused.wide``), forced here on the small test vocabulary.
"""

import pytest
import torch

from attnflow.focus_dilution import fused, training
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.model import PARAM_NAMES, init_params
from attnflow.focus_dilution.samples import MarkovContexts

WIDE = fused.wide  # the rule, before the fixture below forces either pass
SHAPES = lambda d, m: {"W0": (d, m), "WQ": (m, m), "WK": (m, m), "W1": (m, d)}  # noqa: E731


@pytest.fixture(autouse=True, params=["one-hot", "wide"])
def rows_pass(request, monkeypatch):
    """Both passes of the fused rows (``fused.wide`` decides from d and m; forced here)."""
    monkeypatch.setattr(fused, "wide", lambda d, m: request.param == "wide")
    return request.param


@pytest.fixture(scope="module")
def chain():
    return hub_family(n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.1)


@pytest.fixture(scope="module")
def sets(chain):
    """Three data seeds with different row counts (so stack pads the shorter ones: weight 0, counts [1, 0, …])
    and short contexts (s = 6 < d + 1 often misses tokens: log count −inf)."""
    return [MarkovContexts(chain, n, 6, seed=s).examples() for s, n in ((0, 300), (1, 180), (2, 240))]


def _theta(R, d, m, scale, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {
        n: (scale * torch.randn(R, *s, generator=gen, dtype=torch.float64)).to(dtype) for n, s in SHAPES(d, m).items()
    }


def _autograd(theta, batch, c):
    th = {n: v.detach().clone().requires_grad_(True) for n, v in theta.items()}
    loss = training.run_losses(th, batch, c)
    return loss.detach(), dict(zip(PARAM_NAMES, torch.autograd.grad(loss.sum(), list(th.values()))))


def _fused(theta, batch, c):
    th = {n: v.detach().clone().requires_grad_(True) for n, v in theta.items()}
    loss, A = fused.run_losses(th, fused.rows(batch), c)
    return loss.detach(), dict(zip(PARAM_NAMES, torch.autograd.grad(loss.sum(), list(th.values())))), A


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def _close(f, a, loss, tol=1e-12):
    """Norm-wise relative to ``tol``, or absolute to ``tol``·max|L|: at saturated θ (scale 5) the gradients are
    ~1e-11, the cancellation of O(1) terms, and both paths carry ~1e-16·O(1) absolute error there."""
    return _rel(f, a) < tol or float((f - a).norm()) < tol * float(loss.abs().max())


def test_the_data_has_padding_rows_and_absent_tokens(sets):
    batch = training.stack(sets, torch.float64)
    assert (batch["weights"].sum(1) == 0).any()  # padding
    assert torch.isinf(batch["log_counts"]).any()  # absent tokens


@pytest.mark.parametrize("scale", [0.03, 0.5, 5.0])  # 5.0: |V| and score spreads past SAFE_EXP, the shifted forms
@pytest.mark.parametrize("c", [1.0, 0.7])
def test_float64_equals_autograd(sets, scale, c):
    batch = training.stack(sets, torch.float64)
    R, d, _ = batch["weights"].shape
    theta = _theta(R, d, 4, scale, torch.float64)
    loss_a, grad_a = _autograd(theta, batch, c)
    loss_f, grad_f, A = _fused(theta, batch, c)
    assert torch.allclose(loss_f, loss_a, rtol=1e-12, atol=0)
    for n in PARAM_NAMES:
        assert _close(grad_f[n], grad_a[n], loss_a), (n, _rel(grad_f[n], grad_a[n]))
    A_ref = training.forward(theta, batch, c)[0]
    assert torch.allclose(A, A_ref, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("chunk_rows", [1, 500])  # groups of one run, of two runs (B = 300)
def test_run_groups_equal_one_pass(sets, monkeypatch, chunk_rows):
    batch = training.stack(sets, torch.float64)
    R, d, _ = batch["weights"].shape
    theta = {n: v.requires_grad_(True) for n, v in _theta(R, d, 4, 0.5, torch.float64).items()}
    whole = fused.loss_and_grad(theta, fused.rows(batch))
    monkeypatch.setattr(fused, "CHUNK_ROWS", chunk_rows)
    grouped = fused.loss_and_grad(theta, fused.rows(batch))
    assert torch.equal(grouped[0], whole[0]) and torch.equal(grouped[2], whole[2])
    assert all(torch.equal(grouped[1][n], whole[1][n]) for n in PARAM_NAMES)


@pytest.mark.parametrize("scale", [0.5, 5.0])
def test_wide_column_blocks_equal_one_block(sets, monkeypatch, rows_pass, scale):
    """The wide pass sweeps the columns in blocks of WIDE_BLOCK entries: several blocks (and a ragged last one)
    give one block's values to float64 round-off (the sums over columns are accumulated block by block)."""
    if rows_pass != "wide":
        pytest.skip("the column blocks are the wide pass's")
    batch = training.stack(sets, torch.float64)
    R, d, B = batch["weights"].shape
    theta = _theta(R, d, 4, scale, torch.float64)
    whole = fused.loss_and_grad(theta, fused.rows(batch))
    monkeypatch.setattr(fused, "WIDE_BLOCK", d * 70)  # 70 columns a block: B = 300 in 5 blocks, the last of 20
    blocks = fused.loss_and_grad(theta, fused.rows(batch))
    assert torch.allclose(blocks[0], whole[0], rtol=1e-13, atol=0)
    assert torch.allclose(blocks[2], whole[2], rtol=1e-13, atol=1e-16)  # A: the strided sum over d rounds apart
    for n in PARAM_NAMES:
        assert _close(blocks[1][n], whole[1][n], whole[0], tol=1e-13), n


def test_large_theta_takes_the_shifted_forms(sets):
    batch = training.stack(sets, torch.float64)
    R, d, _ = batch["weights"].shape
    theta = _theta(R, d, 4, 5.0, torch.float64)
    W0 = theta["W0"]
    S = (W0 @ theta["WQ"]) @ (W0 @ theta["WK"]).transpose(-1, -2)
    assert float((S.amax(-1) - S.amin(-1)).max()) > fused.SAFE_EXP
    assert float((W0 @ theta["W1"]).abs().max()) > fused.SAFE_EXP


@pytest.mark.parametrize("scale", [0.03, 0.5])
def test_float32_within_round_off(sets, scale):
    batch = training.stack(sets, torch.float32)
    R, d, _ = batch["weights"].shape
    theta = _theta(R, d, 8, scale, torch.float32)
    exact = _autograd({n: v.double() for n, v in theta.items()}, {k: v.double() for k, v in batch.items()}, 1.0)
    loss_a, grad_a = _autograd(theta, batch, 1.0)
    loss_f, grad_f, _ = _fused(theta, batch, 1.0)
    assert loss_f.dtype == torch.float32 and grad_f["W0"].dtype == torch.float32
    err_a, err_f = _rel(loss_a, exact[0]), _rel(loss_f, exact[0])
    assert err_f <= 4 * err_a + 1e-6, (err_f, err_a)
    for n in PARAM_NAMES:
        err_a, err_f = _rel(grad_a[n], exact[1][n]), _rel(grad_f[n], exact[1][n])
        assert err_f <= 4 * err_a + 1e-6, (n, err_f, err_a)


def test_a_query_free_row_with_weight_scores_zero():
    """A column with no query and nonzero weights (``stack`` never makes one) gets the score row 0, as the
    one-hot product of ``training.forward`` gives it."""
    gen = torch.Generator().manual_seed(3)
    R, d, B = 2, 4, 7
    query = torch.nn.functional.one_hot(torch.randint(d, (R, B), generator=gen), d).transpose(1, 2).double()
    query[0, :, 2] = 0
    counts = torch.randint(0, 4, (R, d, B), generator=gen).double()
    counts[:, 1] += 1  # every row has a key
    weights = torch.rand(R, d, B, generator=gen, dtype=torch.float64)
    query[1, :, 4], weights[1, :, 4] = 0, 0  # weight 0 but several keys: not a padding row either
    counts[1, :, 4] = torch.tensor([1.0, 2.0, 0.0, 3.0])
    batch = {"query": query, "log_counts": torch.log(counts), "weights": weights}
    assert fused.rows(batch).no_query.sum() == 2
    theta = _theta(R, d, 3, 0.7, torch.float64, seed=4)
    loss_a, grad_a = _autograd(theta, batch, 1.0)
    loss_f, grad_f, A = _fused(theta, batch, 1.0)
    assert torch.allclose(A, training.forward(theta, batch)[0], rtol=1e-12, atol=1e-15)
    assert torch.allclose(loss_f, loss_a, rtol=1e-12, atol=0)
    for n in PARAM_NAMES:
        assert _rel(grad_f[n], grad_a[n]) < 1e-12, n


def test_backward_scales_by_the_incoming_gradient(sets):
    batch = training.stack(sets, torch.float64)
    R, d, _ = batch["weights"].shape
    theta = {n: v.requires_grad_(True) for n, v in _theta(R, d, 4, 0.5, torch.float64).items()}
    scale = torch.tensor([2.0, -0.5, 0.0], dtype=torch.float64)
    g_f = torch.autograd.grad((scale * fused.run_losses(theta, fused.rows(batch))[0]).sum(), list(theta.values()))
    g_a = torch.autograd.grad((scale * training.run_losses(theta, batch)).sum(), list(theta.values()))
    for n, a, f in zip(PARAM_NAMES, g_a, g_f):
        assert _rel(f, a) < 1e-12, n
    assert float(g_f[0][2].abs().max()) == 0.0  # run 2 weighted 0


def test_rows_rejects_soft_queries(sets):
    batch = training.stack(sets, torch.float64)
    batch["query"] = batch["query"] * 0.5
    with pytest.raises(ValueError, match="one-hot"):
        fused.rows(batch)


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_training_steps_match_autograd(chain, sets, optimizer, dtype):
    """sweep.train through the fused path and through autograd: the same parameters after a few steps, to
    1e-12 (float64) or float32 round-off (1e-5 relative)."""
    specs = [training.RunSpec(chain, e, f"seed {s}") for s, e in enumerate(sets)]
    kw = dict(optimizer=optimizer, lr=0.5 if optimizer == "gd" else 0.01, steps=3, record_every=1, init_scale=0.3,
              d_model=4, device="cpu", dtype=dtype)  # fmt: skip
    old = training.train_runs(specs, fused=False, **kw)
    new = training.train_runs(specs, fused=True, **kw)
    tol = 1e-12 if dtype == "float64" else 1e-5
    for a, b in zip(old, new):
        for n in PARAM_NAMES:
            assert _rel(b.states[n][-1], a.states[n][-1]) < tol, n
        assert abs(b.train_loss - a.train_loss).max() <= tol * abs(a.train_loss).max()
        assert abs(b.data_hub_attention - a.data_hub_attention).max() <= 10 * tol


def test_wide_vocabularies_take_the_gathered_pass(rows_pass):
    if rows_pass == "wide":
        pytest.skip("the rule itself, once")
    assert not WIDE(5, 8) and not WIDE(16, 4)  # the focus–dilution chains: one-hot products
    assert WIDE(64, 16) and WIDE(256, 32)  # real_text's book and paper vocabularies
    assert not WIDE(64, 48)  # m > d/2: the rank-m factors save nothing


def test_fused_is_the_default(chain, sets):
    assert training.FUSED is True
    run = training.train_runs([training.RunSpec(chain, sets[0])], steps=1, d_model=4, device="cpu")[0]
    ref = training.train_runs([training.RunSpec(chain, sets[0])], steps=1, d_model=4, device="cpu", fused=True)[0]
    assert all(torch.equal(run.states[n], ref.states[n]) for n in PARAM_NAMES)


def test_init_params_width_padding_trains_through_the_fused_path(chain, sets):
    """A run of width m < d_model is zero-padded: its padded coordinates get zero gradient on the fused path too."""
    th = init_params(chain.d, 2, 0.3, 1)
    run = training.train_runs([training.RunSpec(chain, sets[0])], steps=3, d_model=4, theta0=[th], device="cpu",
                              dtype="float64", fused=True)[0]  # fmt: skip
    ref = training.train_runs([training.RunSpec(chain, sets[0])], steps=3, d_model=4, theta0=[th], device="cpu",
                              dtype="float64", fused=False)[0]  # fmt: skip
    for n in PARAM_NAMES:
        assert run.states[n].shape == ref.states[n].shape
        assert _rel(run.states[n][-1], ref.states[n][-1]) < 1e-12
