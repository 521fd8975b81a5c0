"""Primitives of the page sharpening/scalar_reduction (Proposition 2) on small inputs: the symbolic
residual count, the full-model flow against the reduced ODE and its measures, the agreement tolerance
and its domain, and the schema's refusal of a head too small for the task."""

import numpy as np
import pytest
import sympy as sp

from attnflow import claims, flow
from attnflow.params import ParameterError
from attnflow.sharpening import contracts, data, reduction, symbolic

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

SMALL = data.Task(n_classes=3, n_common=2, seq_len=4)


def test_count_nonzero_counts_what_does_not_simplify_to_zero():
    x = sp.Symbol("x")
    zero = sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1
    assert symbolic.count_nonzero(zero, [zero, x], sp.Matrix([[zero, 0]])) == 1
    assert symbolic.count_nonzero(sp.Matrix([[x, 0]])) == 1
    rg = symbolic.reduced_gradients()
    assert symbolic.count_nonzero(rg.residual_a, rg.residual_b) == 0


def test_reduced_gradient_forms_are_the_spec_forms():
    dLda, dLdb = symbolic.reduced_gradient_forms()
    p, s, a = sp.symbols("p s a", positive=True)
    assert sp.simplify(dLda + p * (1 - s)) == 0 and sp.simplify(dLdb + a * p * (1 - p) * (1 - s)) == 0


@pytest.mark.parametrize("name", ["CACO", "FAFO"])
def test_full_model_follows_the_reduced_ode_on_a_small_task(name):
    c = reduction.compare_with_reduced(name, SMALL, lr_qk=1.0, a0=0.1, b0=0.1, t_max=5.0, n_times=5, d_h=3,
                                       embedding_seed=0, rtol=1e-9)  # fmt: skip
    assert c.scale == pytest.approx(max(np.abs(c.a_reduced).max(), np.abs(c.b_reduced).max()))
    assert 0 <= c.deviation < flow.agreement_tolerance(1e-9) and c.off_manifold < 1e-10
    row = c.row()
    assert row["model"] == name and row["max |Δ|/scale"] == c.deviation and row["gradient evals"] == c.nfev


def test_deviation_is_relative_to_the_trajectory_scale():
    c = reduction.compare_with_reduced("CACO", SMALL, lr_qk=1.0, t_max=2.0, n_times=3, rtol=1e-9)
    c.quantities["a_full"] = c.a_reduced + 0.5 * c.scale  # a made-up gap of half the scale
    assert c.deviation == pytest.approx(0.5)


def test_agreement_domain_reads_only_rtol():
    assert flow.agreement_tolerance(1e-9) == pytest.approx(1e-6)
    inside, outside = flow.agreement_domain(1e-9), flow.agreement_domain(1e-6)
    assert inside.holds and not outside.holds and "10³·rtol = 0.001" in outside.reason
    assert inside.reads == outside.reads == (claims.PARAMETERS,)


def test_schema_refuses_a_head_smaller_than_the_classes():
    values = dict(n_classes=3, n_common=2, n_compete=2, lr_ratio=1.0, a0=0.1, b0=0.1, d_h=2, embedding="random",
                  parametrizations=["CACO"], t_max=5.0, n_times=5, rtol=1e-9, seed=0)  # fmt: skip
    with pytest.raises(ParameterError, match="d_h ≥ K"):
        contracts.SCALAR_REDUCTION.validate(values)
