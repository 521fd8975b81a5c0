"""Batched sweep vs a Python loop over the same models (issue 5 quality bar: ≥ 5× on 2 CPU cores).

    .venv/bin/python benchmarks/bench_sweep.py [--steps 100] [--device auto] [--n-train 2000]

The sweep: 4 parametrizations × 4 ratios r ∈ {1, 2, 5, 10} × 3 seeds = 48 models on the
synthetic task of spec §5.1 (K = 5, M = 20, T = 12, N = 2000), full-batch GD with η_OV = 0.1,
η_QK = r·η_OV, Gaussian init of std 0.1/√d, the same number of steps for every model (no early
stop). Three ways to train them:

- **batched**: ``sharpening.experiments.run`` — all 48 models in one stacked computation;
- **loop (SelfAttention)**: the ordinary way — for each model, the theory chapter's
  ``SelfAttention`` with torch's SGD optimizer (``attnflow.train.make_optimizer``, two parameter groups);
- **loop (stacked code, P = 1)**: the batched code called once per model, which separates the
  gain of batching from the gain of the token-coordinate forward.

Each phase runs in its own child process, so the peak memory it reports (``ru_maxrss`` on CPU,
``torch.cuda.max_memory_allocated`` on GPU) is its own. The final parameters of the batched run
and of the SelfAttention loop are compared (float32, so to ~1e-5).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

PARAMETRIZATIONS = ["CACO", "CAFO", "FACO", "FAFO"]
RATIOS = [1.0, 2.0, 5.0, 10.0]
SEEDS = [0, 1, 2]


def specs():
    from attnflow.sharpening import experiments

    return experiments.grid(PARAMETRIZATIONS, RATIOS, SEEDS, lr_ovs=[0.1], init_scales=[0.1])


def phase_batched(args) -> dict:
    from attnflow.sharpening import data, experiments

    exp = experiments.run(
        specs(),
        data.Task(),
        n_train=args.n_train,
        n_test=10,
        steps=args.steps,
        target_loss=None,
        record_every=args.steps,
        device=args.device,
    )
    params = {n: v.cpu() for n, v in exp.run.params.items()}
    torch.save({"params": params, "order": [s.label for s in exp.specs]}, args.out)
    return {"seconds": exp.run.wall_s, "steps": exp.run.steps_run}


def phase_loop(args) -> dict:
    from attnflow import device as devices, seeding, train
    from attnflow.sharpening import data, experiments
    from attnflow.sharpening.model import ModelConfig, SelfAttention

    dev = devices.resolve(args.device)
    task = data.Task()
    finals, seconds = [], 0.0
    for spec in specs():
        batch = data.sample(task, args.n_train, seeding.generator(spec.seed)).to(dev)
        cfg = ModelConfig(spec.parametrization, task.vocab_size, task.n_classes, dtype=torch.float32)
        model = (
            SelfAttention(cfg)
            .init_gaussian(spec.init_scale / cfg.d**0.5, seeding.generator(spec.seed + experiments.INIT_SEED_OFFSET))
            .to(dev)
        )
        t0 = time.perf_counter()
        opt = train.make_optimizer(model.groups(spec.lr_qk, spec.lr_ov), "gd")
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            model.loss(batch).backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        seconds += time.perf_counter() - t0
        finals.append({n: p.detach().cpu() for n, p in model.named_parameters()})
    torch.save(finals, args.out)
    return {"seconds": seconds, "steps": args.steps}


def phase_loop_stacked(args) -> dict:
    from attnflow.sharpening import data, experiments

    seconds = 0.0
    for spec in specs():
        exp = experiments.run(
            [spec],
            data.Task(),
            n_train=args.n_train,
            n_test=10,
            steps=args.steps,
            target_loss=None,
            record_every=args.steps,
            device=args.device,
        )
        seconds += exp.run.wall_s
    return {"seconds": seconds, "steps": args.steps}


def child(args) -> None:
    torch.set_num_threads(args.threads)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    out = {"batched": phase_batched, "loop": phase_loop, "loop_stacked": phase_loop_stacked}[args.phase](args)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    print("RESULT " + json.dumps(out))


def run_phase(phase: str, args, out_file: str) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--phase",
        phase,
        "--steps",
        str(args.steps),
        "--device",
        args.device,
        "--n-train",
        str(args.n_train),
        "--threads",
        str(args.threads),
        "--out",
        out_file,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100, help="GD steps per model (same for every phase)")
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads in every phase (the sweep's default)")
    ap.add_argument("--skip-stacked-loop", action="store_true", help="skip the third phase")
    ap.add_argument("--phase", choices=("batched", "loop", "loop_stacked"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        return child(args)
    import tempfile
    from pathlib import Path

    from attnflow import device as devices

    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    n = len(PARAMETRIZATIONS) * len(RATIOS) * len(SEEDS)
    print(
        f"{n} models (4 parametrizations × 4 ratios × 3 seeds), N = {args.n_train}, {args.steps} GD steps each, "
        f"device {devices.resolve(args.device)}, {args.threads} CPU thread(s)"
    )
    res = {
        "batched": run_phase("batched", args, str(tmp / "batched.pt")),
        "loop": run_phase("loop", args, str(tmp / "loop.pt")),
    }
    if not args.skip_stacked_loop:
        res["loop_stacked"] = run_phase("loop_stacked", args, str(tmp / "unused.pt"))
    batched, looped = torch.load(tmp / "batched.pt"), torch.load(tmp / "loop.pt")
    worst = 0.0
    for i, spec in enumerate(specs()):
        for name, p in looped[i].items():
            stacked = batched["params"][f"{spec.parametrization}.{name}"]
            slot = [j for j, s in enumerate(specs()) if s.parametrization == spec.parametrization].index(i)
            worst = max(worst, float((stacked[slot] - p).abs().max()))
    for phase, r in res.items():
        mem = (
            f"peak CUDA {r['peak_cuda_mb']:.0f} MB"
            if r["peak_cuda_mb"] is not None
            else f"peak RSS {r['peak_rss_mb']:.0f} MB"
        )
        print(
            f"  {phase:13s} {r['seconds']:8.2f} s   "
            f"{1000 * r['seconds'] / (n * args.steps):7.3f} ms per model-step   {mem}"
        )
    ratio = res["loop"]["seconds"] / res["batched"]["seconds"]
    print(
        f"speed ratio, loop (SelfAttention) / batched: {ratio:.1f}×  "
        f"(target ≥ 5×: {'met' if ratio >= 5 else 'NOT met'})"
    )
    if "loop_stacked" in res:
        print(
            "speed ratio, loop (stacked code, P = 1) / batched: "
            f"{res['loop_stacked']['seconds'] / res['batched']['seconds']:.1f}×"
        )
    print(f"largest |batched − looped| over all final parameters: {worst:.2e}")


if __name__ == "__main__":
    main()
