"""The float32-underflow fallback of ``ModelStack.bag_forward`` is per model (issue 23).

A model whose partition function Z_b underflows for some row b takes the per-position forward;
before issue 23 one such model sent every model of the stack there. Checked here, forward and
gradient of the training loss: the underflowing models equal the old all-models fallback
bit for bit, the others equal the fast path bit for bit (and the old fallback to float32
round-off: the two paths sum in different orders), and the per-position forward runs on the
underflowing models only.
"""

import pytest
import torch

from attnflow import seeding
from attnflow.sharpening import data, stack

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

TASK = data.Task(n_classes=3, n_common=5, seq_len=7)
SPECS = [
    stack.ModelSpec(p, seed=s, init_scale=1.5) for s in (0, 1) for p in ("CACO", "FAFO", "FACO", "CAFO")
]  # sweep order mixes the parametrization groups
UNDER = [2, 4]  # FACO seed 0 and CACO seed 1: forced to underflow
SCORE = 2000.0  # e^{-2000} = 0 in float32: rows without the boosted token have Z_b = 0


def case():
    st = stack.ModelStack(SPECS, TASK, dtype=torch.float32, device="cpu")
    batch = data.Batch(
        *(
            torch.stack([getattr(data.sample(TASK, 40, seeding.generator(sp.seed)), f) for sp in SPECS])
            for f in ("tokens", "targets", "relevant_mask", "weights")
        )
    )
    return st, batch, stack.Bags.of(batch, TASK.vocab_size, False, torch.float32)


def forced(st: stack.ModelStack, params: dict) -> dict:
    """``params`` with the models ``UNDER`` scoring the query against one distinct token at SCORE
    (one-hot embedding: S = W_QK), so every row without that token underflows."""
    out = {n: v.detach().clone() for n, v in params.items()}
    q, v = TASK.query_id, TASK.distinct_ids(0)[0]
    for i in UNDER:
        name = st.specs[i].parametrization
        slot = {n: int((t.models == i).nonzero()) for n, t in st.tensors.items() if n.startswith(name + ".")}
        if f"{name}.W_qk" in slot:
            W = out[f"{name}.W_qk"][slot[f"{name}.W_qk"]]
            W.zero_()
            W[q, v] = SCORE
        else:  # W_qk = W_q W_kᵀ
            W_q, W_k = out[f"{name}.W_q"][slot[f"{name}.W_q"]], out[f"{name}.W_k"][slot[f"{name}.W_k"]]
            W_q.zero_()
            W_k.zero_()
            W_q[q, 0] = W_k[v, 0] = SCORE**0.5
    return {n: v.requires_grad_() for n, v in out.items()}


def loss_and_grads(logits: torch.Tensor, targets: torch.Tensor, params: dict):
    """The training objective's loss (experiments._objective) and its gradient."""
    logp = torch.log_softmax(logits, dim=1)  # (P, K, B)
    loss = -logp.gather(1, targets[:, None, :]).squeeze(1).mean(-1)  # (P,)
    return loss.detach(), dict(zip(params, torch.autograd.grad(loss.sum(), list(params.values()))))


def rows(st: stack.ModelStack, grads: dict, models: list[int]) -> dict:
    """The gradient rows of the models ``models`` (sweep indices), per parameter tensor."""
    out = {}
    for n, g in grads.items():
        slots = [k for k, i in enumerate(st.tensors[n].models.tolist()) if i in models]
        if slots:
            out[n] = g[slots]
    return out


def counted(monkeypatch, st: stack.ModelStack) -> list:
    """Record the ``models`` of every per-position forward ``st`` runs."""
    calls, forward = [], stack.ModelStack.forward

    def spy(self, params, tokens, keep_mask=None, models=None):
        calls.append(None if models is None else models.tolist())
        return forward(self, params, tokens, keep_mask, models)

    monkeypatch.setattr(stack.ModelStack, "forward", spy)
    return calls


@pytest.mark.parametrize("subset", [None, [6, 4, 0, 3, 2, 7]])
def test_only_the_underflowing_models_take_the_per_position_path(monkeypatch, subset):
    st, batch, bags = case()
    params = forced(st, st.params())
    models = None if subset is None else torch.tensor(subset)
    sub = bags if subset is None else bags.rows(models, None)
    targets = batch.targets if subset is None else batch.targets[models]
    ids = list(range(len(SPECS))) if subset is None else subset  # sweep index of each row of the call
    under = [k for k, i in enumerate(ids) if i in UNDER]  # rows of the call that underflow
    fine = [k for k, i in enumerate(ids) if i not in UNDER]
    assert bool((sub.counts[under, TASK.distinct_ids(0)[0]] == 0).any())  # some rows lack the token

    calls = counted(monkeypatch, st)
    logits, relevant = st.bag_forward(params, sub, models)  # (P_a, K, B), (P_a, B)
    loss, grads = loss_and_grads(logits, targets, params)
    # (c) the per-position forward ran once, on the underflowing models alone
    assert calls == [[ids[k] for k in under]]
    assert torch.isfinite(logits).all() and torch.isfinite(loss).all()
    assert all(torch.isfinite(g).all() for g in grads.values())

    # (a) the old all-models fallback: the per-position forward of every model of the call
    old = st.forward(params, sub.tokens, models=models)
    old_logits = old.logits.transpose(1, 2)
    old_relevant = (old.attn * sub.relevant_mask).sum(-1)
    old_loss, old_grads = loss_and_grads(old_logits, targets, params)
    assert torch.equal(logits[under], old_logits[under])  # exact: the same per-position computation
    assert torch.equal(relevant[under], old_relevant[under])
    assert torch.equal(loss[under], old_loss[under])
    for n, g in rows(st, grads, [ids[k] for k in under]).items():
        assert torch.equal(g, rows(st, old_grads, [ids[k] for k in under])[n]), n
    # the other models: the fast and per-position paths sum in different orders (float32 round-off)
    assert torch.allclose(logits[fine], old_logits[fine], rtol=1e-5, atol=1e-6)
    assert torch.allclose(relevant[fine], old_relevant[fine], rtol=1e-5, atol=1e-6)
    for n, g in rows(st, grads, [ids[k] for k in fine]).items():
        assert torch.allclose(g, rows(st, old_grads, [ids[k] for k in fine])[n], rtol=1e-4, atol=1e-6), n

    # (b) the other models keep the fast path bit for bit: the same stack with the forced models
    # restored underflows nowhere, so it is the fast path throughout
    calls.clear()
    plain = {n: v.detach().clone().requires_grad_() for n, v in st.params().items()}
    fast_logits, fast_relevant = st.bag_forward(plain, sub, models)
    _, fast_grads = loss_and_grads(fast_logits, targets, plain)
    assert calls == []
    assert torch.equal(logits[fine], fast_logits[fine])
    assert torch.equal(relevant[fine], fast_relevant[fine])
    for n, g in rows(st, grads, [ids[k] for k in fine]).items():
        assert torch.equal(g, rows(st, fast_grads, [ids[k] for k in fine])[n]), n
