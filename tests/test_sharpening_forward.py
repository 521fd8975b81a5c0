"""One forward for the synthetic sharpening model (issue 14): ``model.forward`` with a leading
model axis is the definition of spec §4 position by position; ``SelfAttention`` (P = 1) and
``ModelStack`` call it; ``ModelStack.bag_forward`` (the training fast path) equals it."""

import pytest
import torch

from attnflow import seeding
from attnflow.sharpening import data, model, stack
from attnflow.sharpening.model import ModelConfig, SelfAttention, effective_circuits, orthogonal_embedding

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

TASK = data.Task(n_classes=3, n_common=5, seq_len=7)


def circuits(P, V, d, K, seed):
    g = torch.Generator().manual_seed(seed)
    emb = orthogonal_embedding(V, d, seed=seed)
    return (
        emb,
        torch.randn(P, d, d, generator=g, dtype=torch.float64),
        torch.randn(P, K, d, generator=g, dtype=torch.float64),
    )


def by_position(emb, W_qk, W_ov, tokens, score_scale, attend_self, keep_mask):
    """Spec §4 written out: s_i = σ_s e_{x_T}ᵀ W_QK e_{x_i} (masked keys −inf), p = softmax(s),
    z = W_OV Σ_i p_i e_{x_i} — one model, one sequence, one position at a time."""
    P, B, T = tokens.shape
    logits = torch.empty(P, B, W_ov.shape[1], dtype=torch.float64)
    attn = torch.empty(P, B, T, dtype=torch.float64)
    for m in range(P):
        for b in range(B):
            x = tokens[m, b]
            q = emb[x[-1]]
            s = torch.stack([score_scale * (q @ W_qk[m] @ emb[x[i]]) for i in range(T)])
            keep = keep_mask[m, b].clone()
            if not attend_self:
                keep[-1] = False
            p = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=0)
            attn[m, b] = p
            logits[m, b] = W_ov[m] @ sum(p[i] * emb[x[i]] for i in range(T))
    return logits, attn


@pytest.mark.parametrize("attend_self, score_scale", [(False, 1.0), (True, 0.37), (False, 2.5)])
def test_forward_is_the_model_position_by_position(attend_self, score_scale):
    P, B = 3, 9
    emb, W_qk, W_ov = circuits(P, TASK.vocab_size, TASK.vocab_size + 4, TASK.n_classes, seed=3)
    tokens = torch.stack([data.sample(TASK, B, seeding.generator(s)).tokens for s in range(P)])  # (P, B, T)
    keep = torch.rand(tokens.shape, generator=torch.Generator().manual_seed(4)) > 0.3
    keep[..., 0] = True  # at least one key in every row
    out = model.forward(emb, W_qk, W_ov, tokens, score_scale=score_scale, attend_self=attend_self, keep_mask=keep)
    logits, attn = by_position(emb, W_qk, W_ov, tokens, score_scale, attend_self, keep)
    assert out.logits.shape == (P, B, TASK.n_classes) and out.attn.shape == out.scores.shape == (P, B, TASK.seq_len)
    assert torch.allclose(out.logits, logits, rtol=1e-12, atol=1e-13)
    assert torch.allclose(out.attn, attn, rtol=1e-12, atol=1e-15)
    masked = ~keep.clone()
    if not attend_self:
        masked[..., -1] = True
    assert torch.all(out.attn[masked] == 0) and torch.all(out.scores[masked] == float("-inf"))
    assert torch.all(torch.isfinite(out.scores[~masked]))


def test_keep_mask_deletes_the_tokens():
    """No positional encoding: masking positions equals removing them from the sequences."""
    emb, W_qk, W_ov = circuits(2, TASK.vocab_size, TASK.vocab_size, TASK.n_classes, seed=5)
    tokens = data.sample(TASK, 11, seeding.generator(6)).tokens  # (B, T), shared
    keep = torch.ones_like(tokens, dtype=torch.bool)
    keep[:, [1, 3]] = False
    cut = model.forward(emb, W_qk, W_ov, tokens, keep_mask=keep)
    short = model.forward(emb, W_qk, W_ov, tokens[:, keep[0]])
    assert torch.allclose(cut.logits, short.logits, rtol=1e-12, atol=1e-14)
    assert torch.allclose(cut.attn[..., keep[0]], short.attn, rtol=1e-12, atol=1e-15)


def test_shared_tokens_broadcast_over_the_models():
    emb, W_qk, W_ov = circuits(4, TASK.vocab_size, TASK.vocab_size, TASK.n_classes, seed=7)
    tokens = data.sample(TASK, 8, seeding.generator(8)).tokens  # (B, T)
    shared = model.forward(emb, W_qk, W_ov, tokens, score_scale=0.5)
    stacked = model.forward(emb, W_qk, W_ov, tokens.expand(4, -1, -1).clone(), score_scale=0.5)
    for a, b in zip(shared, stacked):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", ["CACO", "CAFO", "FACO", "FAFO"])
@pytest.mark.parametrize("attend_self", [False, True])
def test_selfattention_is_the_forward_at_one_model(name, attend_self):
    cfg = ModelConfig(
        name,
        TASK.vocab_size,
        TASK.n_classes,
        d=TASK.vocab_size + 2,
        d_h=5,
        attend_self=attend_self,
        score_scale=0.4,
        embedding_seed=1,
    )
    m = SelfAttention(cfg).init_gaussian(0.4, seeding.generator(2))
    tokens = data.sample(TASK, 10, seeding.generator(3)).tokens
    out = m(tokens)
    W_qk, W_ov = effective_circuits(dict(m.named_parameters()))
    ref = model.forward(m.emb, W_qk[None], W_ov[None], tokens[None], score_scale=0.4, attend_self=attend_self)
    assert out.logits.shape == (10, TASK.n_classes) and out.attn.shape == out.scores.shape == (10, TASK.seq_len)
    for a, b in zip(out, ref):
        assert torch.equal(a, b[0])  # the same arithmetic, bit for bit


@pytest.mark.parametrize("attend_self", [False, True])
def test_modelstack_forward_is_the_forward_on_its_circuits(attend_self):
    specs = [stack.ModelSpec(p, seed=s, init_scale=0.8) for p in ("CACO", "FAFO", "CAFO", "FACO") for s in (0, 1)]
    st = stack.ModelStack(specs, TASK, attend_self=attend_self, score_scale=0.7, dtype=torch.float64, device="cpu")
    tokens = torch.stack([data.sample(TASK, 6, seeding.generator(sp.seed)).tokens for sp in specs])
    keep = torch.rand(tokens.shape, generator=torch.Generator().manual_seed(0)) > 0.2
    keep[..., 0] = True
    params = st.params()
    W_qk, W_ov = st.effective(params)
    out = st.forward(params, tokens, keep)
    ref = model.forward(st.emb, W_qk, W_ov, tokens, score_scale=0.7, attend_self=attend_self, keep_mask=keep)
    for a, b in zip(out, ref):
        assert torch.equal(a, b)
    sub = torch.tensor([5, 2])
    part = st.forward(params, tokens[sub], keep[sub], models=sub)
    ref = model.forward(
        st.emb, W_qk[sub], W_ov[sub], tokens[sub], score_scale=0.7, attend_self=attend_self, keep_mask=keep[sub]
    )
    for a, b in zip(part, ref):
        assert torch.equal(a, b)
    for i in range(len(specs)):  # and each row is that model alone
        one = st.model(i)(tokens[i])
        assert torch.allclose(st.forward(params, tokens).logits[i], one.logits, rtol=1e-12, atol=1e-14)


def bag_case(attend_self, score_scale):
    specs = [stack.ModelSpec(p, seed=s, init_scale=1.5) for p in ("CACO", "FAFO") for s in (0, 1)]
    st = stack.ModelStack(
        specs, TASK, attend_self=attend_self, score_scale=score_scale, dtype=torch.float64, device="cpu"
    )
    batch = data.Batch(
        *(
            torch.stack([getattr(data.sample(TASK, 40, seeding.generator(sp.seed)), f) for sp in specs])
            for f in ("tokens", "targets", "relevant_mask", "weights")
        )
    )
    return st, batch, stack.Bags.of(batch, TASK.vocab_size, attend_self, torch.float64)


@pytest.mark.parametrize("attend_self, score_scale", [(False, 1.0), (True, 0.6), (False, 3.0)])
def test_bag_forward_equals_the_forward(attend_self, score_scale):
    st, batch, bags = bag_case(attend_self, score_scale)
    params = st.params()
    logits, relevant = st.bag_forward(params, bags)  # (P, K, B), (P, B)
    W_qk, W_ov = st.effective(params)
    ref = model.forward(st.emb, W_qk, W_ov, batch.tokens, score_scale=score_scale, attend_self=attend_self)
    assert torch.allclose(logits.transpose(1, 2), ref.logits, rtol=1e-12, atol=1e-13)
    assert torch.allclose(relevant, (ref.attn * batch.relevant_mask).sum(-1), rtol=1e-12, atol=1e-14)
    sub = torch.tensor([3, 0])
    logits_sub, _ = st.bag_forward(params, bags.rows(sub, None), sub)
    assert torch.allclose(logits_sub.transpose(1, 2), ref.logits[sub], rtol=1e-12, atol=1e-13)


def test_bag_forward_falls_back_to_the_forward_when_a_partition_function_underflows():
    """A score of 2000 on one distinct token of class 0: rows without it have Z_b = 0 in the bag
    path (e^{s_v − max s} underflows), so it must take the per-position forward."""
    st, batch, bags = bag_case(False, 1.0)
    params = {n: v.clone() for n, v in st.params().items()}
    W_qk = params["CACO.W_qk"]  # one-hot embedding: S = W_QK
    W_qk.zero_()
    W_qk[:, TASK.query_id, TASK.distinct_ids(0)[0]] = 2000.0
    has = (batch.tokens[:2, :, :-1] == TASK.distinct_ids(0)[0]).any(-1)  # (2, B)
    assert has.any() and not has.all()
    logits, relevant = st.bag_forward(params, bags)
    W_qk_eff, W_ov = st.effective(params)
    ref = model.forward(st.emb, W_qk_eff, W_ov, batch.tokens)
    assert torch.all(torch.isfinite(logits))
    assert torch.allclose(logits.transpose(1, 2), ref.logits, rtol=1e-12, atol=1e-13)
    assert torch.allclose(relevant, (ref.attn * batch.relevant_mask).sum(-1), rtol=1e-12, atol=1e-14)


def test_functional_loss_hessian_is_the_derivative_of_its_gradient():
    """The flows differentiate the forward twice with torch.func (forward over reverse mode)."""
    cfg = ModelConfig("FAFO", TASK.vocab_size, TASK.n_classes, d_h=3, score_scale=0.8)
    m = SelfAttention(cfg).init_gaussian(0.5, seeding.generator(0))
    batch = data.sample(TASK, 12, seeding.generator(1))
    loss = m.functional_loss(batch)
    theta = m.state()
    names = list(theta)
    sizes = [theta[n].numel() for n in names]

    def flat_loss(v):
        return loss({n: c.reshape(theta[n].shape) for n, c in zip(names, torch.split(v, sizes))})

    v = torch.cat([theta[n].reshape(-1) for n in names])
    H = torch.func.hessian(flat_loss)(v)
    grad = torch.func.grad(flat_loss)
    assert torch.allclose(grad(v), torch.autograd.functional.jacobian(flat_loss, v), rtol=1e-12, atol=1e-14)
    h = 1e-5
    idx = torch.arange(0, v.numel(), 7)
    for k in idx:
        e = torch.zeros_like(v)
        e[k] = h
        fd = (grad(v + e) - grad(v - e)) / (2 * h)
        assert torch.allclose(H[:, k], fd, rtol=1e-6, atol=1e-8), int(k)
    assert torch.allclose(H, H.T, atol=1e-12)
