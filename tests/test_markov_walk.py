"""The compiled chain walk of ``MarkovContexts`` (issue 23) against the numpy walk it replaces: the same
uniforms in the same order, so the same counts, query and target, bit for bit."""

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import samples
from attnflow.focus_dilution.chain import dirichlet_chain, hub_family
from attnflow.focus_dilution.samples import MarkovContexts

CHAINS = {
    "hub": hub_family(n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.1),
    "dirichlet d=3": dirichlet_chain(3, seed=1),
    "dirichlet d=8": dirichlet_chain(8, seed=2, concentration=0.3),
}


@pytest.mark.parametrize("chain", list(CHAINS), ids=list(CHAINS))
@pytest.mark.parametrize("n_samples, seq_len, seed", [(1, 1, 0), (7, 1, 3), (50, 2, 1), (200, 37, 5), (33, 300, 9)])
def test_compiled_walk_equals_numpy(chain, n_samples, seq_len, seed):
    new = MarkovContexts(CHAINS[chain], n_samples, seq_len, seed=seed)
    ref = MarkovContexts(CHAINS[chain], n_samples, seq_len, seed=seed, walk="numpy")
    for name in ("counts", "query", "target"):
        a, b = getattr(new, name), getattr(ref, name)
        assert a.dtype == b.dtype == torch.int64, name
        assert torch.equal(a, b), name
    assert bool((new.counts.sum(1) == seq_len).all())


def test_blocks_of_uniforms_do_not_change_the_walk(monkeypatch):
    """Uniforms drawn a few positions at a time (WALK_BLOCK smaller than N·s, and not a multiple of N) give
    the same walk."""
    chain = CHAINS["hub"]
    ref = MarkovContexts(chain, 40, 25, seed=2, walk="numpy")
    for block in (1, 40, 100, 10**6):
        monkeypatch.setattr(samples, "WALK_BLOCK", block)
        new = MarkovContexts(chain, 40, 25, seed=2)
        assert torch.equal(new.counts, ref.counts) and torch.equal(new.query, ref.query)
        assert torch.equal(new.target, ref.target)


def test_examples_equal_and_walk_validated():
    chain = CHAINS["hub"]
    a = MarkovContexts(chain, 64, 20, seed=4).examples()
    b = MarkovContexts(chain, 64, 20, seed=4, walk="numpy").examples()
    assert torch.equal(a.query, b.query) and torch.equal(a.counts, b.counts) and torch.equal(a.weights, b.weights)
    with pytest.raises(ValueError, match="walk"):
        MarkovContexts(chain, 4, 4, walk="torch")


def test_the_walk_is_a_sample_of_the_chain():
    """Transition frequencies of a long walk → P (the walk is the chain, not only equal to the reference)."""
    chain = CHAINS["dirichlet d=3"]
    ctx = MarkovContexts(chain, 20000, 1, seed=0)  # one step from x_1 ~ π: query x_1, target x_2
    C = np.zeros((3, 3))
    np.add.at(C, (ctx.query.numpy(), ctx.target.numpy()), 1)
    P_hat = C / C.sum(1, keepdims=True)
    assert np.abs(P_hat - chain.P).max() < 0.03
