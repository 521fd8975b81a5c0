"""The optimizer update of a large stacked embedding: sweep.train's in-place update against its
masked form (what every step paid before issue 23) and against torch.optim.Adam over the same
models (one parameter group per model, torch's default foreach implementation).

    .venv/bin/python benchmarks/bench_optimizer_update.py [--models 20] [--vocab 8000] [--dim 64] [--steps 20]

The shape is the real-data pages' token embedding at paper size: (P, V, d) with P models. The
objective is deliberately cheap (a quadratic of the embedding) so that the update dominates,
as it did there (52–81 % of a step). All three give the same bits for Adam (tests/test_sweep.py);
the script checks the in-place and masked results agree exactly. It prints seconds per step, the
ratios, and the fraction of the memory-bandwidth bound (Adam reads p, g, m, v and writes p, m, v:
7 × 4 bytes per float32 entry per step; --bandwidth GB/s, default 10 for this 2-core machine).
"""

from __future__ import annotations

import argparse
import time

import torch

from attnflow import sweep


def _train(E0, rates, steps, limits=None):
    target = torch.linspace(-1, 1, E0.shape[-1], dtype=E0.dtype)

    def objective(params, sample, models):
        return ((params["E"][models] - target) ** 2).mean(dim=(-2, -1)), {}

    tensors = {"E": sweep.Stacked(E0.clone(), torch.arange(E0.shape[0]), rates)}
    t0 = time.perf_counter()
    run = sweep.train(objective, tensors, E0.shape[0], optimizer="adam", steps=steps, step_limits=limits)
    return (time.perf_counter() - t0) / steps, run.params["E"]


def _torch_adam(E0, rates, steps):
    target = torch.linspace(-1, 1, E0.shape[-1], dtype=E0.dtype)
    ps = [E0[i].clone().requires_grad_(True) for i in range(E0.shape[0])]
    opt = torch.optim.Adam([{"params": [p], "lr": float(r)} for p, r in zip(ps, rates)])
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        sum(((p - target) ** 2).mean() for p in ps).backward()
        opt.step()
    return (time.perf_counter() - t0) / steps, torch.stack([p.detach() for p in ps])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--bandwidth", type=float, default=10.0, help="memory bandwidth in GB/s")
    a = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    E0 = torch.randn(a.models, a.vocab, a.dim, generator=gen)
    rates = torch.logspace(-3, -2, a.models, dtype=torch.float64)
    fast, e_fast = _train(E0, rates, a.steps)
    # one model stops after its first step: every later step of the others takes the masked form
    masked, e_masked = _train(E0, rates, a.steps + 1, limits=[1] + [a.steps + 1] * (a.models - 1))
    user, e_user = _torch_adam(E0, rates, a.steps)
    bound = 7 * 4 * E0.numel() / (a.bandwidth * 1e9)
    print(f"(P, V, d) = ({a.models}, {a.vocab}, {a.dim}), Adam, {a.steps} steps")
    print(f"  sweep.train, in place        {fast * 1e3:8.1f} ms/step   {bound / fast:5.1%} of the bandwidth bound")
    print(f"  sweep.train, masked updates  {masked * 1e3:8.1f} ms/step   in place is {masked / fast:.2f}× faster")
    print(f"  torch.optim.Adam (foreach)   {user * 1e3:8.1f} ms/step   in place is {user / fast:.2f}× faster")
    same = torch.equal(e_fast[1:], _train(E0, rates, a.steps)[1][1:])
    print(f"  in-place run reproducible bit for bit: {same}; max |Δ| vs torch.optim: "
          f"{(e_fast - e_user).abs().max().item():.2g}")  # fmt: skip
    del e_masked


if __name__ == "__main__":
    main()
