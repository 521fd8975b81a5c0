"""One GD step of the focus–dilution training at cycle's paper size: the fused loss and gradient
(``attnflow.focus_dilution.fused``) against autograd of ``training.run_losses`` (the path before issue 23) and a
plain loop with torch.optim.SGD on the same stacked θ.

    .venv/bin/python benchmarks/bench_markov_step.py [--runs 10] [--samples 65536] [--seq-len 512] [--reps 8]

The batch is built as the page builds it (``MarkovContexts`` per data seed, ``training.stack``, float32, one
thread): cycle's paper profile has R = 10 runs of N = 65 536 sequences of length s = 16 384, ~65 000 distinct
rows each. The default ``--seq-len 512`` gives the same row count (98.5 % of the sequences distinct) at 1/32
of the sampling time; the step's cost depends on the rows only. The three paths are timed interleaved
(min and median of ``--reps``, noisy on a shared machine) and, through ``sweep.train`` itself, over
``--train-steps`` steps of each less a run of 0 steps (the step the page pays, update and records
included). The estimate of cycle's paper time is steps × step + the chain walk (numpy's or the compiled
one, timed on one seed at ``--seq-len`` and scaled to N·s·seeds of the paper profile).

**Share of the roofline** (issue 23: the paper-size step ≥ 20 % of it). The machine's limits are measured
here, with the step's thread count: the float32 matmul rate (best of a 1024² ``torch.mm``) and the memory
bandwidth (best of a 256 MB ``copy_``, read + write). The step's floor is the larger of its essential
FLOPs over the matmul rate and its compulsory bytes over the bandwidth: per run and row, the three
d × d products of the loss and gradient (Vᵀ A, V ∂ℓ/∂Z, A ∂ℓ/∂Zᵀ: 6 d² FLOPs) and about 20 d elementwise
FLOPs (the exponentials counted as one), and one read of the rows as ``fused.rows`` stores them (query,
counts and weights (R, d, B), w̄ (R, 1, B), float32). The share printed is that floor over the measured
fused step (``fused`` min): 100 % would be a step that touches its data once at full bandwidth.

``--real-text`` times real_text's paper size instead (R = 3 seeds of N = 16,384 windows of s = 128 tokens of
the WikiText stand-in, vocabulary d = 256, width m = 32): the one-hot pass, the wide pass (``fused.wide``:
gathered score rows, rank-m value products, column blocks) and autograd, with the wide pass's floor (per run
and column 12 d m + 20 d FLOPs; one read of counts and weights (R, d, B), w̄ and the int64 query index).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from attnflow.focus_dilution import fused, realtext, training
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.model import PARAM_NAMES, init_params
from attnflow.focus_dilution.samples import MarkovContexts

PAPER = dict(n_samples=65536, seq_len=16384, n_seeds=10, steps=16000, lr=0.5, record_every=20, d_model=8)


def _timed(fns: dict, reps: int) -> dict:
    for f in fns.values():
        f()
    out = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append(time.perf_counter() - t)
    return out


def roofline(reps: int = 5) -> tuple[float, float]:
    """(float32 matmul FLOP/s, memory bytes/s) of this machine at torch's current thread count: best of ``reps``."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    x, y = torch.randn(2**26), torch.empty(2**26)  # 256 MB each, far outside the caches
    mm = min(_timed({"mm": lambda: torch.mm(a, b)}, reps)["mm"])
    cp = min(_timed({"copy": lambda: y.copy_(x)}, reps)["copy"])
    return 2 * 1024**3 / mm, 2 * 4 * x.numel() / cp


def step_floor(
    R: int, d: int, B: int, flops_s: float, bytes_s: float, m: int | None = None
) -> tuple[float, float, float]:
    """(seconds, FLOPs, bytes): the fused step's floor on a machine of ``flops_s`` and ``bytes_s``
    (module docstring); with ``m``, the wide pass's (rank-m products, an int64 index for the query)."""
    if m is None:
        flops, nbytes = R * B * (6 * d * d + 20 * d), 4 * R * B * (3 * d + 1)
    else:
        flops, nbytes = R * B * (12 * d * m + 20 * d), R * B * (4 * (2 * d + 1) + 8)
    return max(flops / flops_s, nbytes / bytes_s), flops, nbytes


def real_text(reps: int) -> None:
    """real_text's paper size (module docstring): one-hot pass, wide pass and autograd."""
    stream = realtext.load_stream("wikitext", vocab_size=256, source="standin")
    sets = [realtext.window_examples(stream.train, stream.d, 16384, 128, s) for s in range(3)]
    batch = training.stack(sets, torch.float32)
    R, d, B = batch["weights"].shape
    m = 32
    th0 = init_params(d, m, 1e-3, 1)
    theta = {n: th0[n].float().expand(R, *th0[n].shape).clone().requires_grad_(True) for n in PARAM_NAMES}
    rows = fused.rows(batch)
    rule = fused.wide

    def on(path):
        def step():
            fused.wide = lambda d, m: path == "wide"
            try:
                fused.loss_and_grad(theta, rows)
            finally:
                fused.wide = rule

        return step

    def autograd_step():
        torch.autograd.grad(training.run_losses(theta, batch).sum(), list(theta.values()))

    times = _timed({"one-hot": on("one-hot"), "wide": on("wide"), "autograd": autograd_step}, reps)
    best = {k: min(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:9s} step min {1e3 * min(v):7.1f} ms  median {1e3 * np.median(v):7.1f} ms")
    flops_s, bytes_s = roofline()
    floor, flops, nbytes = step_floor(R, d, B, flops_s, bytes_s, m=m)
    print(
        f"R = {R}, d = {d}, B = {B}, m = {m}: wide vs one-hot {best['one-hot'] / best['wide']:.2f}×, "
        f"vs autograd {best['autograd'] / best['wide']:.2f}×; floor max({flops / 1e6:.0f} MFLOP, "
        f"{nbytes / 1e6:.0f} MB) = {1e3 * floor:.1f} ms at {flops_s / 1e9:.1f} GFLOP/s, {bytes_s / 1e9:.1f} GB/s: "
        f"wide step at {floor / best['wide']:.0%} of it"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=PAPER["n_seeds"])
    ap.add_argument("--samples", type=int, default=PAPER["n_samples"])
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--train-steps", type=int, default=40)
    ap.add_argument("--real-text", action="store_true", help="real_text's paper size instead (module docstring)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.real_text:
        real_text(a.reps)
        return
    chain = hub_family(n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.1)  # cycle's chain
    sets = [MarkovContexts(chain, a.samples, a.seq_len, seed=s).examples() for s in range(a.runs)]
    walks = _timed(
        {w: lambda w=w: MarkovContexts(chain, a.samples, a.seq_len, seed=0, walk=w) for w in ("numpy", "compiled")},
        max(1, a.reps // 4),
    )
    walk = {w: min(v) for w, v in walks.items()}
    batch = training.stack(sets, torch.float32)
    R, d, B = batch["weights"].shape
    print(
        f"R = {R} runs, d = {d}, B = {B} rows; chain walk per data seed at s = {a.seq_len}: "
        f"numpy {walk['numpy']:.2f} s, "
        f"compiled {walk['compiled']:.2f} s ({walk['numpy'] / walk['compiled']:.2f}×)"
    )
    th0 = init_params(d, PAPER["d_model"], 0.03, 1)
    theta = {n: th0[n].float().expand(R, *th0[n].shape).clone().requires_grad_(True) for n in PARAM_NAMES}
    params = list(theta.values())
    rows = fused.rows(batch)
    opt = torch.optim.SGD(params, lr=PAPER["lr"])

    def autograd_step():
        grads = torch.autograd.grad(training.run_losses(theta, batch).sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(0.0 * g)  # the update's memory traffic, θ unchanged

    def fused_step():
        grads = torch.autograd.grad(fused.run_losses(theta, rows)[0].sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(0.0 * g)

    def torch_optim_step():
        opt.zero_grad()
        training.run_losses(theta, batch).sum().backward()
        opt.param_groups[0]["lr"] = 0.0  # θ unchanged: every path times the same point
        opt.step()

    def forward_only():
        with torch.no_grad():
            training.run_losses(theta, batch)

    times = _timed(
        {"autograd": autograd_step, "fused": fused_step, "torch.optim": torch_optim_step, "forward": forward_only},
        a.reps,
    )
    for k, v in times.items():
        print(f"{k:12s} step min {1e3 * min(v):7.1f} ms  median {1e3 * np.median(v):7.1f} ms")
    flops_s, bytes_s = roofline()
    floor, flops, nbytes = step_floor(R, d, B, flops_s, bytes_s)
    print(
        f"roofline ({torch.get_num_threads()} thread): matmul {flops_s / 1e9:.1f} GFLOP/s, "
        f"copy {bytes_s / 1e9:.1f} GB/s; "
        f"step floor max({flops / 1e6:.0f} MFLOP, {nbytes / 1e6:.0f} MB) = {1e3 * floor:.1f} ms; "
        f"fused step at {floor / min(times['fused']):.0%} of it, autograd at {floor / min(times['autograd']):.0%}"
    )
    for k in ("autograd", "torch.optim"):
        print(
            f"fused vs {k}: {min(times[k]) / min(times['fused']):.2f}× (min), "
            f"{np.median(times[k]) / np.median(times['fused']):.2f}× (median)"
        )

    specs = [training.RunSpec(chain, e, f"seed {s}") for s, e in enumerate(sets)]
    kw = dict(lr=PAPER["lr"], record_every=PAPER["record_every"], init_scale=0.03, device="cpu", desc="bench")
    per_step = {}
    for flag in (False, True, False, True):
        took = []
        for steps in (0, a.train_steps):  # the difference leaves out the set-up (stack, rows) and the end
            t = time.perf_counter()
            training.train_runs(specs, steps=steps, fused=flag, **kw)
            took.append(time.perf_counter() - t)
        per_step.setdefault(flag, []).append((took[1] - took[0]) / a.train_steps)
    old, new = min(per_step[False]), min(per_step[True])
    print(
        f"sweep.train step (update and records included): autograd {1e3 * old:.1f} ms, fused {1e3 * new:.1f} ms, "
        f"{old / new:.2f}×"
    )
    scale = PAPER["seq_len"] / a.seq_len * PAPER["n_samples"] / a.samples * PAPER["n_seeds"]
    for name, step, w in (
        ("before (autograd, numpy walk)", old, "numpy"),
        ("now (fused, compiled walk)", new, "compiled"),
    ):
        total = PAPER["steps"] * step + walk[w] * scale
        print(
            f"cycle paper estimate, {name}: {PAPER['steps']} steps × {1e3 * step:.1f} ms "
            f"+ walk {walk[w] * scale / 60:.1f} min = {total / 60:.1f} min (flow and figures not included)"
        )


if __name__ == "__main__":
    main()
