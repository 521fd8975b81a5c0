"""Reports of the dilution and escape pages (claims B7–B9, B14–B16): the measurements on small
inputs, the domains of the claims, the schema rules, and (notebook marker) each page under the
smoke profile on chains far from the reference and with a second fixed seed set."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from attnflow import runner
from attnflow.focus_dilution.runs import FlowRun


# ----------------------------------------------------------------------------- small fakes
def _fake_run(t, chain=None, states=None, **q):
    run = FlowRun(t=np.asarray(t, float), quantities={k: np.asarray(v, float) for k, v in q.items()}, chain=chain)
    if states is not None:
        run.result = SimpleNamespace(states=lambda: states)
    return run


# ----------------------------------------------------------------------------- schema rules (exit 2)
@pytest.mark.parametrize(
    "page, bad, words",
    [
        ("focus_dilution/escape", dict(chain="dirichlet"), ["chain = 'hub'"]),
        ("focus_dilution/escape", dict(b_h=0.8, deltas=[0.1, 0.9]), ["every δ of deltas"]),
        ("focus_dilution/dilution", dict(b_h=0.8, delta_cycle=0.9), ["delta_cycle keeps the hub family valid"]),
    ],
)
def test_parameter_rules_refuse_before_running(page, bad, words, tmp_path):
    with pytest.raises(runner.RunError) as e:
        runner.run_page(page, profile="smoke", parameters=bad, output=tmp_path)
    for w in words:
        assert w in str(e.value)
    assert not any(tmp_path.iterdir())


# ----------------------------------------------------------------------------- pages on other chains
FAR = [dict(n_low=2, a_h=0.785, b_h=0.544, c_cyc=0.883), dict(n_low=6, a_h=0.3, b_h=0.15, c_cyc=0.1)]
RUNS = [("focus_dilution/dilution", p) for p in FAR + [dict(chain="dirichlet", n_low=4, chain_seed=7)]]
RUNS += [("focus_dilution/escape", p) for p in FAR + [dict(n_low=3, a_h=0.7, b_h=0.2, c_cyc=0.2)]]
RUNS += [("focus_dilution/dilution", dict(seed=7)), ("focus_dilution/escape", dict(seed=7))]  # second seed set


@pytest.mark.notebook
@pytest.mark.parametrize("page, parameters", RUNS)
def test_page_on_other_chains_and_seeds(page, parameters, tmp_path):
    res = runner.run_page(page, profile="smoke", parameters=parameters, output=tmp_path)
    recs = json.loads(res.claims_file.read_text())["claims"]
    failed = [r for r in recs if r["verdict"] == "fail"]
    assert recs and not failed, f"{page} with {parameters}: failed claims {failed}"
