"""Gradient-flow integrator: closed-form parity, per-group rates, clear errors on divergence."""

import numpy as np
import pytest
import torch

from attnflow import flow


def test_quadratic_flow_matches_closed_form():
    # L = ½ Σ λ_i x_i²  →  x_i(t) = x_i(0) exp(−η λ_i t); one group twice as fast.
    lam = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)

    def loss(th):
        return 0.5 * (lam * th["x"] ** 2).sum() + 0.5 * th["y"] ** 2

    t = np.linspace(0, 2, 21)
    res = flow.integrate(
        loss,
        {"x": torch.ones(3), "y": torch.tensor(1.0)},
        t,
        lr={"x": 1.0, "y": 2.0},
        method="BDF",
        rtol=1e-10,
        atol=1e-12,
    )
    st = res.states()
    exact = np.exp(-np.outer(t, lam.numpy()))
    assert np.allclose(st["x"].numpy(), exact, rtol=1e-6, atol=1e-9)
    assert np.allclose(st["y"].numpy(), np.exp(-2 * t), rtol=1e-7)
    assert res.njev > 0 and res.nfev > 0


def test_stiff_flow_uses_few_evaluations_with_the_jacobian():
    lam = torch.tensor([1.0, 1e4], dtype=torch.float64)

    def loss(th):
        return 0.5 * (lam * th["x"] ** 2).sum()

    res = flow.integrate(loss, {"x": torch.ones(2)}, [0, 100.0], method="BDF", rtol=1e-8, atol=1e-12)
    assert res.nfev < 2000  # an explicit method needs ~10⁶ steps here


def test_events_are_reported():
    def loss(th):
        return 0.5 * th["x"] ** 2

    def half(t, th):
        return float(th["x"]) - 0.5

    res = flow.integrate(loss, {"x": torch.tensor(1.0)}, [0, 2.0], events=[half], rtol=1e-10, atol=1e-12)
    assert res.t_events[0][0] == pytest.approx(np.log(2), rel=1e-7)


def test_divergence_is_a_clear_error():
    def loss(th):
        return -torch.exp(th["x"] ** 2).sum()  # blows up in finite time

    with pytest.raises(flow.FlowError, match="diverged|failed"):
        flow.integrate(loss, {"x": torch.tensor([1.0])}, [0, 10.0], method="LSODA", jacobian=False)


def test_bad_arguments():
    def loss(th):
        return (th["x"] ** 2).sum()

    with pytest.raises(ValueError, match="learning rates must name every parameter"):
        flow.integrate(loss, {"x": torch.ones(2)}, [0, 1.0], lr={"y": 1.0})
    with pytest.raises(ValueError, match="> 0"):
        flow.integrate(loss, {"x": torch.ones(2)}, [0, 1.0], lr=-1.0)
    with pytest.raises(ValueError, match="increasing"):
        flow.integrate(loss, {"x": torch.ones(2)}, [1.0, 0.5])
    with pytest.raises(ValueError, match="method"):
        flow.integrate(loss, {"x": torch.ones(2)}, [0, 1.0], method="Euler")
