"""One concept, one place (issue 14) for the sharpening model: one output type for every
attention forward, one W_QK/W_OV collapse, the parametrization names defined once."""

import ast
import inspect
import typing

import pytest
import torch

from attnflow.sharpening import data, experiments, model, realdata, reduction, stack, symbolic
from attnflow.sharpening.model import OV_NAMES, PARAMETRIZATIONS, QK_NAMES, Output, parameter_names

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


@pytest.mark.parametrize("name", PARAMETRIZATIONS)
def test_parameter_names_are_the_models_and_the_real_data_models(name):
    qk, ov = parameter_names(name)
    fqk, fov = model.circuits(name)
    assert (qk, ov) == (QK_NAMES[fqk], OV_NAMES[fov])
    m = model.SelfAttention(model.ModelConfig(name, vocab_size=8, n_classes=3))
    assert tuple(n for n, _ in m.named_parameters()) == qk + ov
    cfg = realdata.RealConfig(name, vocab_size=10, n_out=3, d_model=4, d_head=2)
    assert tuple(cfg.shapes()) == ("emb",) + qk + ov  # the order the initial draws are taken in
    assert set(realdata.groups(cfg.shapes()).items()) == {("emb", "ov")} | {(n, "qk") for n in qk} | {
        (n, "ov") for n in ov
    }


def test_every_forward_returns_the_one_output_type():
    task = data.Task(n_classes=3, n_common=4, seq_len=5)
    batch = data.sample(task, 6, torch.Generator().manual_seed(0))
    one = model.SelfAttention(model.ModelConfig("FAFO", task.vocab_size, task.n_classes)).init_gaussian(
        0.3, torch.Generator().manual_seed(1)
    )
    assert type(one(batch.tokens)) is Output
    st = stack.ModelStack([stack.ModelSpec("CACO"), stack.ModelSpec("FAFO")], task, device="cpu")
    out = st.forward(st.params(), batch.tokens.expand(2, -1, -1))
    assert type(out) is Output and out.attn.shape == (2, 6, 5) and out.logits.shape == (2, 6, 3)
    cfg = realdata.RealConfig("FACO", vocab_size=12, n_out=3, d_model=4, d_head=2)
    ids = torch.tensor([[1, 5, 6, 7, 0], [1, 8, 9, 0, 0]])
    out = realdata.forward(realdata.init_params(cfg, 0), ids, cfg)
    assert type(out) is Output and out.attn.shape == (1, 2, 5)
    assert getattr(stack, "Output", Output) is Output and getattr(realdata, "Output", Output) is Output


def test_the_collapse_is_written_once():
    """Only ``model.effective_circuits`` multiplies the factors of the sharpening model."""
    for module in (stack, realdata, reduction, experiments):
        src = inspect.getsource(module)
        assert 'W_q"] @' not in src and 'W_o"] @' not in src, module.__name__
    theta = {
        "W_q": torch.randn(3, 4, 2),
        "W_k": torch.randn(3, 4, 2),
        "W_o": torch.randn(3, 2, 2),
        "W_v": torch.randn(3, 2, 4),
    }
    W_qk, W_ov = model.effective_circuits(theta)
    assert torch.equal(W_qk, theta["W_q"] @ theta["W_k"].transpose(-1, -2)) and torch.equal(
        W_ov, theta["W_o"] @ theta["W_v"]
    )


def test_parametrization_names_are_typed_once():
    assert symbolic.PARAMETRIZATIONS == tuple(PARAMETRIZATIONS)
    for module in (stack, experiments, realdata, symbolic):
        tree = ast.parse(inspect.getsource(module))
        literals = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Tuple) and [getattr(e, "value", None) for e in n.elts] == list(PARAMETRIZATIONS)
        ]
        assert not literals, module.__name__


def test_type_hints_resolve_without_cycles():
    for fn in (stack.ModelStack.__init__, experiments.run, realdata.run, realdata.forward):
        typing.get_type_hints(fn)
