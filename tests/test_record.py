"""One run record (issue 14): every flow and training of both papers returns an
``attnflow.record.Run`` and answers its accessors; one seeding policy (``attnflow.seeding``)."""

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest
import torch

import attnflow as attnflow_lib
from attnflow import flow, focus_dilution, record, seeding, sharpening, sweep
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import measure, runs, training
from attnflow.sharpening import data, experiments, mechanism, realdata, reduced, reduction, rescaling
from attnflow.sharpening.model import SelfAttention
from attnflow.sharpening.stack import INIT_SEED_OFFSET, ModelSpec, ModelStack

RECORDS = (
    flow.FlowResult,
    sweep.SweepRun,
    experiments.Experiment,
    mechanism.SampledRun,
    realdata.RealRun,
    reduced.ReducedRun,
    reduction.DiscreteRun,
    reduction.Comparison,
    rescaling.FlowComparison,
    measure.Trajectory,
    runs.FlowRun,
    training.TrainRun,
)
# Composites that hold runs rather than being one (each says why). Reports (``*.reports``) hold a
# page's summaries, not runs, and are not scanned.
NOT_RUNS = {
    "RealTextRun": "focus_dilution.realtext: the real-text and Markov TrainRuns (each a record.Run) "
    "with their held-out measurements; its file belongs to another change",
    "RealExperiment": "sharpening.realdata: one RealRun (a record.Run) per optimizer with the test metrics",
    "PlateauRun": "focus_dilution.runs: one FlowRun (a record.Run) through condensation and the θ_c¹ plateau "
    "with the rates fitted on it",
    "FlowState": "focus_dilution.measure: a flow's state at one stored time (‖∇L‖, λ_min, σ₂, L), read off a "
    "FlowRun; not a trajectory",
    "Decision": "focus_dilution.stages: a stage boundary decided causally (its time t, the stage, the detection "
    "up to t), read off a run; not a trajectory",
}


def test_every_record_type_of_both_papers_is_a_run():
    assert all(issubclass(cls, record.Run) for cls in RECORDS), [c for c in RECORDS if not issubclass(c, record.Run)]
    found = set()
    names = ["attnflow.flow", "attnflow.sweep", "attnflow.train"]
    for package in (sharpening, focus_dilution):
        names += [
            info.name
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
            if ".reports" not in info.name
        ]
    for module in map(importlib.import_module, names):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and dataclasses.is_dataclass(cls)
                and name not in NOT_RUNS
                and (
                    hasattr(cls, "t")
                    or "t" in {f.name for f in dataclasses.fields(cls)}
                    or name.endswith(("Run", "Result", "Trajectory", "Comparison", "Experiment"))
                )
            ):
                found.add(cls)
    assert set(RECORDS) <= found, f"the scan misses {set(RECORDS) - found}"
    missing = [f"{c.__module__}.{c.__name__}" for c in found if not issubclass(c, record.Run)]
    assert not missing, f"run records that are not attnflow.record.Run: {missing}"


def test_shared_accessors():
    t = np.array([0.0, 0.5, 1.0, 2.0])
    run = record.Run(t=t, quantities={"x": t**2, "M": np.arange(8.0).reshape(4, 2)}, wall_s=1.5, meta={"label": "toy"})
    assert run["x"] is run.quantities["x"] and run.quantity("t") is t and run["t"] is t
    assert run.names == ["x", "M"] and "x" in run and "t" in run and "y" not in run
    assert run.at(0.6) == 1 and run.index(2.0, exact=True) == 3 and run.value("x", 1.9) == 4.0
    assert run.final("x") == 4.0 and run.final("M").tolist() == [6.0, 7.0]
    assert run.row(0.5) == {"t": 0.5, "x": 0.25, "M": pytest.approx(np.array([2.0, 3.0]))}
    with pytest.raises(KeyError, match=r"no quantity 'y'; it has: t, x, M"):
        run["y"]
    with pytest.raises(KeyError, match="not a stored time"):
        run.row(0.7)
    with pytest.raises(LookupError, match="keeps no parameters"):
        run.parameters()
    with pytest.raises(TypeError):
        iter(run)


def _quadratic(theta):
    return ((theta["w"] - 1.0) ** 2).sum()


def test_a_generic_flow_and_training_are_runs():
    res = flow.integrate(_quadratic, {"w": torch.zeros(2)}, [0.0, 1.0, 2.0])
    assert isinstance(res, record.Run) and res["w"].shape == (3, 2) and res.names == ["w"]
    assert torch.equal(res.parameters()["w"], res.states()["w"])
    assert np.allclose(res.final("w"), 1 - np.exp(-4.0), rtol=1e-6)  # ẇ = −2(w − 1)
    plain = flow.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0])
    assert plain["y"] is plain.y and plain.names == ["y"]
    with pytest.raises(LookupError, match="no names"):
        plain.parameters()

    w = torch.zeros(3, 2)  # three models, (P, 2)
    stacked = {"w": sweep.Stacked(w, torch.arange(3), torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64))}

    def objective(params, _index, models):
        loss = ((params["w"][models] - 1.0) ** 2).sum(-1)
        return loss, {"w0": params["w"][models, 0].detach()}

    rec = sweep.train(objective, stacked, 3, steps=20, target_loss=0.5, record_every=5)
    assert isinstance(rec, record.Run) and rec.steps is rec.t and rec.loss is rec["loss"]
    assert rec.stats.keys() == {"w0"} and rec["w0"].shape == (len(rec.t), 3)
    assert np.array_equal(rec.final("loss"), rec.loss_final) and np.array_equal(rec.final("w0"), rec.stats_final["w0"])
    assert rec.meta["optimizer"] == "gd" and rec.wall_s > 0


def test_sharpening_flows_and_trainings_are_runs():
    red = reduced.solve(reduced.ReducedSystem("CAFO", 2.0), 100.0, n_times=30, times=[10.0])
    assert isinstance(red, record.Run) and red.a is red["a"] and red.p is red["p"]
    assert red.at(10.0) == red.row(10.0) and set(red.at(10.0)) == {"t", "a", "b", "p", "s", "odds"}
    assert red.index(10.0) == red.index(10.0, exact=True)
    task = data.Task(n_classes=3, n_common=6, seq_len=6)
    gd = reduction.gd_on_manifold("CACO", task, lr_qk=1.0, step=0.5, t_max=2.0)
    assert isinstance(gd, record.Run) and gd.a is gd["a"] and len(gd.t) == 5
    specs = experiments.grid(["CACO", "FAFO"], seeds=(0,))
    exp = experiments.run(specs, task, n_train=16, n_test=8, steps=4, target_loss=None, device="cpu")
    assert isinstance(exp, record.Run) and exp.run is exp and exp.final("loss").shape == (2,)
    assert exp["accuracy"].shape == (len(exp.t), 2)
    sampled = mechanism.sampled_runs([("CACO", 1.0, 0)], task, n_samples=16, max_steps=5, device="cpu")[0]
    assert isinstance(sampled, record.Run) and sampled.t[-1] <= 5 and sampled["loss"].shape == sampled.t.shape
    cmp = rescaling.compare_flows(
        rescaling.PointerTask.sample(3, 4, 8, 0), *rescaling.balanced_factors(3, 2, 0.3, 0), 1.0, 1.0, 3
    )
    assert isinstance(cmp, record.Run) and cmp.loss["factorized"] is cmp["loss_factorized"]
    scalar = rescaling.scalar_flows(1.0, 1.0, 1.0, 3)
    assert isinstance(scalar, record.Run) and scalar["t"] is scalar.t


def test_focus_dilution_flow_and_training_are_runs():
    markov = chains.dirichlet_chain(4, seed=3)
    fl = runs.population_flow(markov, d_model=3, t_eval=np.linspace(0, 20, 5))
    assert isinstance(fl, record.Run) and fl["loss"] is fl.quantities["loss"] and fl.meta["method"] == "BDF"
    assert torch.equal(fl.parameters()["W0"], fl.result.states()["W0"])
    (tr,) = training.train_runs(
        [training.RunSpec(markov, training.population_examples(markov))],
        steps=4,
        record_every=2,
        d_model=3,
        device="cpu",
        dtype="float64",
    )
    assert isinstance(tr, record.Run) and tr.settings is tr.meta and tr.meta["steps"] == 4
    assert tr.parameters() is tr.states and not hasattr(tr, "result")
    assert training.sharpness(tr, [0.0])[0] == pytest.approx(training.sharpness(fl, [0.0])[0], rel=1e-9)


def test_seeding_roles_are_the_historical_offsets():
    assert {r: seeding.stream(7, r) for r in seeding.STREAMS} == {
        "data": 7,
        "init": 8,
        "sweep_init": 7 + 1_000_003,
        "eval": 8,
        "real_init": 7,
        "minibatch": 7,
    }
    assert INIT_SEED_OFFSET == seeding.STREAMS["sweep_init"] == 1_000_003
    assert seeding.replicates(3, 3) == [3, 4, 5]
    for role in seeding.STREAMS:  # the policy table lists every role
        assert f"``{role}``" in seeding.__doc__, role
    with pytest.raises(ValueError, match="unknown; allowed: one of data"):
        seeding.stream(0, "weights")
    with pytest.raises(ValueError, match="non-negative"):
        seeding.stream(-1, "data")


def test_seeded_draws_follow_the_streams():
    task = data.Task(n_classes=3, n_common=6, seq_len=6)
    sp = ModelSpec("CAFO", seed=2)
    for stream in ("sweep_init", "init"):
        stack = ModelStack([sp], task, device="cpu", init_stream=stream)
        alone = SelfAttention(stack.models[0].cfg).init_gaussian(
            sp.init_scale / stack.cfg.d**0.5, torch.Generator().manual_seed(2 + seeding.STREAMS[stream])
        )
        for (name, p), (_, q) in zip(stack.models[0].named_parameters(), alone.named_parameters()):
            assert torch.equal(p, q), (stream, name)
    with pytest.raises(ValueError, match="unknown"):
        ModelStack([sp], task, device="cpu", init_stream="weights")
    a = rescaling.PointerTask.sample(3, 4, 5, seed=4)
    g = torch.Generator().manual_seed(4)
    assert torch.equal(a.x_q, torch.randn(5, 3, generator=g, dtype=torch.float64) / 3**0.5)
    draw = sweep.minibatches(10, 4, seed=5)
    assert torch.equal(draw(), torch.randperm(10, generator=torch.Generator().manual_seed(5))[:4])


# Call sites that still add an offset to a seed themselves, each with its role (none left).
OFFSET_SITES: dict[str, str] = {}


def test_no_seed_offset_outside_the_seeding_policy():
    """No library code writes ``seed + <number>``: a draw's seed is ``seeding.stream(seed, role)``."""
    lib = Path(attnflow_lib.__file__).parent
    found = []
    for path in sorted(lib.rglob("*.py")):
        rel = path.relative_to(lib).as_posix()
        if rel == "seeding.py" or rel in OFFSET_SITES:
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                sides = (node.left, node.right)
                if any(isinstance(s, ast.Constant) and isinstance(s.value, int) for s in sides) and any(
                    "seed" in (ast.get_source_segment(source, s) or "").lower() for s in sides
                ):
                    found.append(f"{rel}:{node.lineno}: {ast.get_source_segment(source, node)}")
    assert not found, f"seed offsets written at the call site (use seeding.stream): {found}"


def test_series_is_a_read_only_view_of_a_quantity():
    from attnflow.record import Run, series

    class Scalar(Run):
        a = series("a", "a(t)")

    run = Scalar(t=np.arange(3.0), quantities={"a": np.array([1.0, 2.0, 3.0])})
    assert run.a is run.quantities["a"] and Scalar.a.__doc__ == "a(t)"
    with pytest.raises(AttributeError):
        run.a = np.zeros(3)
