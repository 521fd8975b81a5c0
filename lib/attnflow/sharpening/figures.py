"""Figure functions of the sharpening pages: each takes run records (``attnflow.record.Run`` and its
subclasses) and returns a matplotlib figure; the pages call them and hold no plotting code."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnflow import plotting
from attnflow.plotting import MODEL_COLORS

__all__ = [
    "full_model_vs_reduced",
    "factorized_vs_rescaled",
    "line_plane",
    "step_order",
    "metrics_over_ratio",
    "RATIO_METRICS",
    "growth_curves",
    "training_at_matched_loss",
    "orderings_at_matched_loss",
    "attention_at_matched_loss",
    "dtap_grid",
    "ac_over_threshold",
    "criteria_grid",
    "attention_histograms",
    "real_data_metrics",
    "real_data_dtap",
]


def full_model_vs_reduced(runs: Mapping, title: str = ""):
    """Proposition 2: the full model's (a, b) (lines) against the reduced ODE (dots), and the state's
    distance from the two-scalar manifold, for ``runs`` = {parametrization: reduction.Comparison}."""
    fig, ax = plotting.subplots(1, 3, width=3.6, height=3.1)
    ax = ax[0]
    for name, c in runs.items():
        col, k = MODEL_COLORS[name], max(1, len(c.t) // 12)
        ax[0].plot(c.t, c.a_full, color=col, alpha=0.6, lw=2.4, label=name)
        ax[0].plot(c.t[::k], c.a_reduced[::k], "o", ms=3.5, color=col)
        ax[1].plot(c.t, c.b_full, color=col, alpha=0.6, lw=2.4)
        ax[1].plot(c.t[::k], c.b_reduced[::k], "o", ms=3.5, color=col)
        ax[2].semilogy(c.t[1:], np.maximum(c.residual[1:], 1e-18), color=col)
    ax[0].set(xlabel="t", ylabel="a (OV scalar)", title="full model (lines)\nvs reduced ODE (dots)")
    ax[0].legend()
    ax[1].set(xlabel="t", ylabel="b (QK scalar)", title="same, QK scalar")
    ax[2].set(
        xlabel="t", ylabel="distance from the manifold", title="the flow stays on the manifold", ylim=(1e-18, 1e-6)
    )
    return plotting.tidy(fig, title)


def factorized_vs_rescaled(flows, scalar_runs: Mapping):
    """Lemma 1: entries of W_QK(t) along the factor flow (lines), the rescaled collapsed ODE (dots) and
    the plain collapsed flow at the same η (dashed); the loss along the three; and the scalar example
    b = qk against the rescaled ODE for b, for ``flows`` a ``rescaling.FlowComparison`` and
    ``scalar_runs`` = {imbalance δ: ``rescaling.scalar_flows`` run}."""
    fig, ax = plotting.subplots(1, 3, width=3.6, height=3.1)
    ax, t = ax[0], flows.t
    k = max(1, len(t) // 20)
    d = flows.W_factorized.shape[1]
    for i, j in [(0, 0), (0, 1), (1, 0), (2, 2)][:d]:
        (line,) = ax[0].plot(t, flows.W_factorized[:, i, j], lw=2.2, alpha=0.55)
        ax[0].plot(t[::k], flows.W_rescaled[::k, i, j], "o", ms=3.5, color=line.get_color())
        ax[0].plot(t, flows.W_collapsed[:, i, j], "--", lw=1.0, color=line.get_color())
    ax[0].set(
        xlabel="t",
        ylabel=r"entries of $W_{QK}(t)$",
        title="factorized (line) = rescaled (dots)\nplain collapsed (dashed) differs",
    )
    loss = flows.loss
    ax[1].plot(t, loss["factorized"], color=MODEL_COLORS["FAFO"], lw=2.4, alpha=0.6, label="factorized")
    ax[1].plot(t, loss["rescaled"], ":", color="k", label="rescaled collapsed")
    ax[1].plot(t, loss["collapsed"], "--", color=MODEL_COLORS["CACO"], label=r"collapsed, same $\eta$")
    ax[1].set(xlabel="t", ylabel="loss", title="loss along the three flows")
    ax[1].legend()
    for delta, r in scalar_runs.items():
        (line,) = ax[2].plot(r["t"], r["b_factorized"], lw=2.2, alpha=0.55, label=rf"$\delta={delta:g}$")
        kk = max(1, len(r["t"]) // 20)
        ax[2].plot(r["t"][::kk], r["b_rescaled"][::kk], "o", ms=3.5, color=line.get_color())
    ax[2].set(xlabel="t", ylabel=r"$b=qk$", title="scalar: $(q,k)$ flow (line)\nvs rescaled ODE for $b$ (dots)")
    ax[2].legend(title=r"$L=-\log p(b)$, $n=9$")
    return plotting.tidy(fig, "Lemma 1: gradient flow on factors = collapsed flow at a state-dependent rate")


def line_plane(runs: Mapping, title: str = ""):
    """Theorem 3: trajectories in the (Φ, Ψ) plane, one panel per parametrization (2 per row for 4),
    each ratio r a shade, with the dotted line of slope r through the origin; ``runs`` =
    {(parametrization, r): reduced.ReducedRun} (``reduced.solve_grid``)."""
    names = list(dict.fromkeys(name for name, _ in runs))
    ratios = list(dict.fromkeys(r for _, r in runs))
    ncol = 2 if len(names) == 4 else min(len(names), 3)
    nrow = -(-len(names) // ncol)
    fig, axes = plotting.subplots(nrow, ncol, width=3.4, height=2.8)
    shades = np.linspace(0.35, 1.0, len(ratios))
    for j, name in enumerate(names):
        axj = axes[j // ncol, j % ncol]
        for alpha, r in zip(shades, ratios):
            run = runs[(name, r)]
            s = run.system
            dphi, dpsi = s.phi(run.a) - s.phi(run.a[0]), s.psi(run.b) - s.psi(run.b[0])
            axj.plot(dphi, dpsi, color=MODEL_COLORS[name], alpha=alpha, lw=2.4, label=f"r = {r:g}")
            axj.plot([0, dphi[-1]], [0, r * dphi[-1]], "k:", lw=0.9)
        axj.set(xlabel=r"$\Phi(a)-\Phi(a_0)$", ylabel=r"$\Psi(b)-\Psi(b_0)$", title=name)
        axj.legend(loc="upper left")
    for j in range(len(names), nrow * ncol):
        axes[j // ncol, j % ncol].set_visible(False)
    return plotting.tidy(fig, title)


def step_order(studies: Mapping, runs: Mapping, drift_factor: float, title: str = ""):
    """Theorem 3 broken by discrete steps. Left: the GD drift of the invariant against the step size h
    (log-log, a dotted slope-1 line through the finest point of the first model), ``studies`` =
    {parametrization: reduction.StepStudy}. Right: the adaptive ODE's drift/(rtol·S) per ratio r,
    ``runs`` = {(parametrization, r): reduced.ReducedRun}, below ``drift_factor`` (dotted)."""
    names = list(studies)
    ratios = list(dict.fromkeys(r for _, r in runs))
    fig, ax = plotting.subplots(1, 2, width=4.0, height=3.1)
    for name, st in studies.items():
        ax[0, 0].loglog(st.steps, st.drift, "o-", color=MODEL_COLORS[name], label=name)
    for name in dict.fromkeys(n for n, _ in runs):
        rel = [runs[(name, r)].relative_drift() for r in ratios]
        ax[0, 1].semilogy(range(len(ratios)), rel, "o-", color=MODEL_COLORS[name], label=name)
    first = studies[names[0]]
    ax[0, 0].loglog(first.steps, first.drift[-1] * first.steps / first.steps[-1], "k:", label="slope 1")
    ax[0, 0].set(xlabel="step size h", ylabel=r"max drift of $\Psi-r\Phi$", title="GD on the full model: O(h)")
    ax[0, 0].legend()
    ax[0, 1].axhline(drift_factor, color="k", ls=":", lw=1)
    ax[0, 1].set(
        xticks=range(len(ratios)),
        xticklabels=[f"r={r:g}" for r in ratios],
        ylabel=r"drift / (rtol·S)",
        title=f"adaptive ODE: below {drift_factor:g} (dotted)",
    )
    return plotting.tidy(fig, title)


RATIO_METRICS = (  # (metric of experiments.ByRatio, panel title); arrows: ERASER's better direction
    ("attn_relevant", "attention mass on distinct token"),
    ("ac", r"AC($\tau_a$)"),
    ("acmc", r"ACMC($\tau_a,\tau_c$)"),
    ("sufficiency", "sufficiency ↓ (AOPC)"),
    ("comprehensiveness", "comprehensiveness ↑ (AOPC)"),
    ("accuracy", "test accuracy"),
)


def metrics_over_ratio(results: Mapping, optimizer: str, title: str = ""):
    """The ratio sweep: the six metrics of :data:`RATIO_METRICS` over r = η_QK/η_OV at every loss level
    (seed mean, band: min–max over seeds) for one ``optimizer``, from ``results`` =
    {(optimizer, level): ``experiments.ByRatio``}; darker lines are lower losses."""
    import seaborn as sns

    levels = {level: lv for (opt, level), lv in results.items() if opt == optimizer}
    colors = sns.color_palette("crest", len(levels))
    fig, axes = plotting.subplots(2, 3, width=3.3, height=2.7)
    for ax, (m, label) in zip(axes.flat, RATIO_METRICS):
        for (level, lv), color in zip(levels.items(), colors):
            v = lv[m]  # (n_ratios, n_seeds)
            ax.fill_between(lv.ratios, v.min(1), v.max(1), color=color, alpha=0.2, lw=0)
            ax.plot(lv.ratios, v.mean(1), "o-", color=color, label=f"L* = {level:g}")
        ax.set(xscale="log", xlabel=r"$r=\eta_{QK}/\eta_{OV}$", title=label)
        ax.set_xticks(lv.ratios, [f"{r:g}" for r in lv.ratios])  # every level has the same r
    axes[0, 0].legend(title="matched loss")
    return plotting.tidy(fig, title)


def training_at_matched_loss(exp, init: str = "gaussian", title: str = ""):
    """The parametrizations trained to a matched loss, for ``exp`` an ``experiments.Experiment`` (its models
    with initialization ``init``, one line per model, coloured by parametrization): attention mass on the
    distinct token against the training loss (dotted: the matched loss L*), and attention mass and
    training accuracy over the GD steps; every line ends where its model reached L*."""
    fig, axes = plotting.subplots(1, 3, width=3.5, height=3.1)
    ax = axes[0]
    loss, mass, acc = exp.loss, exp.stats["attn_relevant"], exp.stats["accuracy"]  # (R, P) each
    names = list(dict.fromkeys(sp.parametrization for sp in exp.specs if sp.init == init))
    for n in names:
        for k, i in enumerate(exp.select(parametrization=n, init=init)):
            ok = ~np.isnan(loss[:, i])  # recorded steps before the model froze
            kw = dict(color=MODEL_COLORS[n], lw=1.2, alpha=0.8, label=n if k == 0 else None)
            ax[0].plot(loss[ok, i], mass[ok, i], **kw)
            ax[1].plot(exp.steps[ok], mass[ok, i], **kw)
            ax[2].plot(exp.steps[ok], acc[ok, i], **kw)
    n_seeds = len(exp.select(parametrization=names[0], init=init)) if names else 0
    if exp.target_loss is not None:
        ax[0].axvline(exp.target_loss, color="k", ls=":", lw=1)
    ax[0].set(
        xscale="log",
        xlabel="training loss (decreasing →)",
        ylabel="attention mass\non the distinct token",
        title="attention vs training loss",
    )
    ax[0].invert_xaxis()
    ax[0].legend(title=f"{n_seeds} seeds each", loc="lower right")
    ax[1].set(xlabel="GD step", ylabel="attention mass\non the distinct token", title="attention over training")
    ax[2].set(xlabel="GD step", ylabel="training accuracy", title="accuracy over training")
    return plotting.tidy(fig, title)


def orderings_at_matched_loss(res, balanced, ode_uniform: Mapping, ode_exact: Mapping, target_loss: float):
    """Open question Q2: attention mass at the matched loss L* per parametrization — the reduced ODE with
    r' = 1 (squares) and with the model's exact r' (diamonds), the full model from the balanced state
    (crosses) and from random initializations (one dot per seed); ``res`` and ``balanced`` are
    ``experiments.ByParametrization`` (random and balanced models), ``ode_*`` {parametrization: p}."""
    fig, axes = plotting.subplots(1, 1, width=6.6, height=3.4)
    ax = axes[0, 0]
    names = res.names
    x = np.arange(len(names))
    ax.scatter(
        x - 0.24, [ode_uniform[n] for n in names], marker="s", color="0.5", s=45,
        label="reduced ODE, r' = 1 (spec §8.1 convention)",
    )  # fmt: skip
    ax.scatter(
        x - 0.08, [ode_exact[n] for n in names], marker="D", color="k", s=45,
        label="reduced ODE, exact r' of this model",
    )  # fmt: skip
    ax.scatter(
        x + 0.08, [balanced.mean(n) for n in names], marker="x", color="k", s=60, label="full model, balanced init"
    )
    for j, n in enumerate(names):
        m = res.of(n)  # (n_seeds,)
        ax.scatter(
            np.full(len(m), j + 0.24), m, color=MODEL_COLORS[n], s=28, alpha=0.85,
            label="full model, random init (seeds)" if j == 0 else None,
        )  # fmt: skip
    ax.set_xticks(x, names)
    ax.set(ylabel=f"attention mass at L* = {target_loss:g}", title="Q2: which orderings survive?")
    ax.legend(loc="lower right")
    return plotting.tidy(fig)


def growth_curves(runs: Mapping, title: str = ""):
    """Theorem 4 along the reduced flow to its horizon, for ``runs`` = {(parametrization, r):
    reduced.ReducedRun} (``reduced.solve_grid``; solid: the first r, dotted: the others). Top left: the
    margin u = a p against log t with the OV laws (dashed CO, dash-dotted FO); top right: the CACO odds
    against log² t with the slope r/2 (dotted); bottom left: the CACO b against log log t with the
    law log(rn/2) + 2 log log t (dotted); bottom right: odds / law in (a, b) of the table → 1."""
    from attnflow.sharpening.reduced import ReducedSystem

    first = next(iter(runs.values())).system
    n, K, horizon = first.n_compete, first.n_classes, next(iter(runs.values())).meta["horizon"]
    ratios = list(dict.fromkeys(r for _, r in runs))
    r0 = ratios[0]
    fig, ax = plotting.subplots(2, 2, width=3.9, height=3.0)
    for (name, r), run in runs.items():
        ls = "-" if r == r0 else ":"
        keep = run.t >= 1.0
        t = run.t[keep]
        ax[0, 0].plot(np.log(t), (run.a * run.p)[keep], ls, color=MODEL_COLORS[name], label=name if r == r0 else None)
        ax[1, 1].semilogx(
            t,
            (run.odds / run.system.odds_law_in_a(run.a, run.b))[keep],
            ls,
            color=MODEL_COLORS[name],
            label=f"{name}, r={r:g}",
        )
    for fo, style in ((False, "k--"), (True, "k-.")):
        s = ReducedSystem("CAFO" if fo else "CACO", 1.0, n, K)
        tt = np.geomspace(10.0, horizon, 100)
        ax[0, 0].plot(np.log(tt), s.a_law(tt), style, lw=1, label="law, FO" if fo else "law, CO")
    ax[0, 0].set(xlabel=r"$\log t$", ylabel=r"margin $u=a\,p$", title=f"OV: u ~ log t (solid r={r0:g})")
    ax[0, 0].legend()
    caco = {r: runs[(name, r)] for name, r in runs if name == "CACO"}
    for r, run in caco.items():
        keep = run.t >= 10.0
        L = np.log(run.t[keep])
        alpha = 0.5 + 0.5 * (r == max(caco))
        ax[0, 1].plot(L**2, run.odds[keep], color=MODEL_COLORS["CACO"], alpha=alpha, label=f"r={r:g}")
        ax[0, 1].plot(L**2, r / 2 * L**2, "k:", lw=1)
        ax[1, 0].plot(np.log(L), run.b[keep], color=MODEL_COLORS["CACO"], alpha=alpha, label=f"r={r:g}")
        ax[1, 0].plot(np.log(L), 2 * np.log(L) + np.log(r * n / 2), "k:", lw=1)
    ax[0, 1].set(
        xlabel=r"$\log^2 t$", ylabel=r"odds $e^b/n$", title="CACO: odds vs log² t (dotted: slope r/2)", yscale="log"
    )
    ax[1, 0].set(xlabel=r"$\log\log t$", ylabel=r"$b$", title="CACO: b vs log log t (dotted: slope 2)")
    if caco:
        ax[0, 1].legend()
        ax[1, 0].legend()
    ax[1, 1].axhline(1.0, color="k", lw=0.8)
    ax[1, 1].set(xlabel="t", ylabel="odds / law in (a, b)", title="the QK laws of the table → 1")
    ax[1, 1].legend(ncol=2, loc="lower right")
    return plotting.tidy(fig, title)


def attention_at_matched_loss(runs: Mapping, points, sampled, *, u_star: float, lr_ratio: float, title: str = ""):
    """Corollary 5: p at s = s* over r per parametrization (reduced ODE); the reduced trajectories in the
    (a, p) plane at ratio ``lr_ratio`` crossing the hyperbola p = u*/a; the sampled GD runs' attention
    mass at the loss target (bars: seed means, dots: seeds, with the worst accuracy). ``runs`` =
    {(name, r): ReducedRun}, ``points`` a ``mechanism.MatchedPoints``, ``sampled`` a
    ``mechanism.SampledModels``."""
    fig, ax = plotting.subplots(1, 3, width=3.7, height=3.2)
    ratios = points.lr_ratios
    for name in points.parametrizations:
        col = MODEL_COLORS[name]
        ax[0, 0].semilogx(ratios, [points.p_match[(name, r)] for r in ratios], "o-", color=col, label=name)
        run = runs[(name, lr_ratio)]
        if run.event is not None:
            stop = run.t <= run.event["t"] * 3
            ax[0, 1].plot(run.a[stop], run.p[stop], color=col, label=f"{name}, r={lr_ratio:g}")
            ax[0, 1].plot(run.event["a"], run.event["p"], "o", color=col)
    a_grid = np.linspace(u_star / 0.999, max(14.0, u_star * 2), 200)
    ax[0, 1].plot(a_grid, u_star / a_grid, "k--", lw=1, label=r"$p=u_*/a$")
    ax[0, 0].set(
        xlabel=r"$r=\eta_{QK}/\eta_{OV}$",
        ylabel=r"attention mass $p$ at $s=s_*$",
        title="faster QK → sharper attention",
    )
    ax[0, 0].legend()
    ax[0, 1].set(
        xlabel="a (OV scalar)",
        ylabel="p: attention on\nthe distinct token",
        xlim=(0, max(14.0, u_star * 2)),
        ylim=(0, 1.02),
        title="every model crosses p = u*/a",
    )
    ax[0, 1].legend(loc="lower right")
    keys = list(sampled.runs)
    means = [float(np.nanmean(sampled.values(k))) if np.isfinite(sampled.values(k)).any() else 0.0 for k in keys]
    worst = [np.nanmin(acc) if np.isfinite(acc := sampled.values(k, "accuracy")).any() else float("nan") for k in keys]
    # the worst accuracy under each bar's name (text over neighbouring bars ran into each other)
    labels = [f"{n}\nr={r:g}\nacc ≥ {w:.2f}" for (n, r), w in zip(keys, worst)]
    ax[0, 2].bar(labels, means, color=[MODEL_COLORS[n] for n, _ in keys], alpha=0.7)
    for i, key in enumerate(keys):
        vals = sampled.values(key)
        vals = vals[np.isfinite(vals)]  # runs not at the matched loss are not drawn
        if vals.size:
            ax[0, 2].scatter(np.full(vals.size, i), vals, s=12, color="k", zorder=3)
        ax[0, 2].text(i, means[i] + 0.03, f"{means[i]:.3f}", ha="center", fontsize=plotting.SMALLEST_FONT_PT)
    loss_target = next((run.meta.get("loss_target") for rs in sampled.runs.values() for run in rs), float("nan"))
    ax[0, 2].set(
        ylim=(0, 1.2),
        ylabel=f"attention mass at loss {loss_target:g}",
        title=f"full model, sampled, GD ({len(sampled.seeds)} seeds)",
    )
    return plotting.tidy(fig, title)


def dtap_grid(models: Mapping, ratios, *, bins: int, title: str = ""):
    """DTAP maps of ``models`` = {(parametrization, r): metrics.ModelType}: the four parametrizations
    at r = 1 (top row), FAFO at every r of ``ratios`` (bottom row); log colour scale."""
    import matplotlib.colors as mcolors
    import seaborn as sns  # only the heatmap pages pay for seaborn's import

    names = [n for n in MODEL_COLORS if (n, 1.0) in models]
    cols = min(max(len(names), len(ratios)), 4)
    top, bottom = [(n, 1.0) for n in names], [("FAFO", float(r)) for r in ratios]
    panels = [top[i : i + cols] for i in range(0, len(top), cols)] + [
        bottom[i : i + cols] for i in range(0, len(bottom), cols)
    ]
    fig, axes = plotting.subplots(len(panels), cols, width=2.4, height=2.5)
    ticks = [0, bins // 2, bins]
    for i, row in enumerate(panels):
        for j in range(cols):
            ax = axes[i, j]
            if j >= len(row):
                ax.axis("off")
                continue
            m = models[row[j]]
            sns.heatmap(
                np.where(m.heat > 0, m.heat, np.nan)[::-1],
                ax=ax,
                cmap="rocket_r",
                cbar=False,
                square=True,
                norm=mcolors.LogNorm(vmin=1e-3, vmax=1.0),
            )
            ax.set_xticks(ticks, [0, 0.5, 1], rotation=0)
            ax.set_yticks(ticks, [1, 0.5, 0])
            ax.grid(False)
            # the top y tick label sits on the heatmap's top edge: the title keeps clear of it
            ax.set_title(f"{m.name}, r = {m.r:g}\nmean mass {m.mass.mean():.3f}", pad=10)
            ax.set(xlabel="attention on\nthe distinct token", ylabel="p(true class)")
    fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.6, label="fraction of sequences (log scale)")
    return plotting.tidy(fig, title)


def ac_over_threshold(models: Mapping, ratios):
    """AC over τ_a: the four parametrizations at r = 1, and FAFO at every r against FACO."""
    import seaborn as sns  # only the heatmap pages pay for seaborn's import

    fig, axes = plotting.subplots(1, 2, width=4.2, height=3.2)
    ax = axes[0]
    for n in (n for n in MODEL_COLORS if (n, 1.0) in models):
        m = models[(n, 1.0)]
        ax[0].plot(m.taus, m.ac.mean(1), "o-", color=MODEL_COLORS[n], label=n)
    shades = sns.light_palette(MODEL_COLORS["FAFO"], len(ratios) + 1)[1:]  # darker = larger r
    for k, r in enumerate(ratios):
        m = models[("FAFO", float(r))]
        ax[1].plot(m.taus, m.ac.mean(1), "o-", color=shades[k], label=f"FAFO r = {r:g}")
    faco = models[("FACO", 1.0)]
    ax[1].plot(faco.taus, faco.ac.mean(1), "k--", lw=1, label="FACO r = 1")
    for a, t in zip(ax, ("four parametrizations, r = 1", "FAFO with faster QK")):
        a.set(
            xlabel=r"threshold $\tau_a$",
            ylabel=r"AC = fraction with attention $\geq \tau_a$",
            title=t,
            ylim=(-0.03, 1.03),
        )
        a.legend(loc="lower left")
    return plotting.tidy(fig)


def real_data_metrics(ex):
    """AC and ACMC over the threshold τ_a (Q3), attention entropy and accuracy over r of a
    ``realdata.RealExperiment``: seed means (lines; AdamW solid, SGD dashed) and single seeds (dots)."""
    ratios = sorted({float(r) for m in ex.metrics.values() for r in m["lr_ratio"]})
    colors = dict(zip(ratios, plotting.PALETTE))
    fig, grid = plotting.subplots(2, 2, width=4.0, height=2.9)
    axes = grid.reshape(1, 4)  # panels in reading order
    for opt, m in ex.metrics.items():
        ls = "-" if opt == "adamw" else "--"
        for r in ratios:
            sel = m["lr_ratio"] == r
            mean_ac = m["ac_sweep"][:, sel].mean(1)
            axes[0, 0].plot(m["tau_attns"], mean_ac, ls, marker="o", color=colors[r], label=f"{opt}, r = {r:g}")
            axes[0, 1].plot(m["tau_attns"], m["acmc_sweep"][:, sel].mean(1), ls, marker="o", color=colors[r])
        for ax, key in zip(axes[0, 2:], ["entropy", "accuracy"]):
            ax.plot(ratios, [ex.seed_mean(opt, key, r) for r in ratios], ls, marker="o", color="0.3", label=opt)
            for r in ratios:
                sel = m["lr_ratio"] == r
                ax.scatter(m["lr_ratio"][sel], m[key][sel], s=12, color=colors[r], zorder=3)
    tau_conf = next(iter(ex.metrics.values()))["tau_conf"]
    ratio = r"$r=\eta_{QK}/\eta_{OV}$"
    axes[0, 0].set(xlabel=r"$\tau_a$", ylabel="AC", title="AC over the threshold")
    axes[0, 1].set(xlabel=r"$\tau_a$", ylabel=f"ACMC (τ_c = {tau_conf:g})", title="ACMC over the threshold")
    axes[0, 2].set(xscale="log", xlabel=ratio, ylabel="nats", title="attention entropy")
    axes[0, 3].set(xscale="log", xlabel=ratio, ylabel="test accuracy", title="accuracy")
    axes[0, 0].legend(handlelength=3.2, frameon=True, framealpha=0.9)  # long handles: dashes
    axes[0, 2].legend(handlelength=3.2, frameon=True, framealpha=0.9)
    return plotting.tidy(fig, f"{ex.title}: means over seeds (dots: single seeds)")


def real_data_dtap(ex, relevant: str, unit: str):
    """DTAP heatmaps (spec §7.3) of a ``realdata.RealExperiment``, first optimizer and seed, at r = 1
    and r_max: x = attention on the ``relevant`` tokens, y = true-class probability, colour = fraction
    of the test ``unit`` (e.g. "questions")."""
    opt, m = next(iter(ex.metrics.items()))
    seed = int(m["seed"][0])
    fig, axes = plotting.subplots(1, 2, width=3.4, height=3.1)
    for ax, r in zip(axes[0], [1.0, ex.r_max]):
        model = np.flatnonzero((m["lr_ratio"] == r) & (m["seed"] == seed))[0]
        H, _, _ = np.histogram2d(m["conf_each"][model], m["attn_each"][model], bins=10, range=[[0, 1], [0, 1]])
        image = ax.imshow(H / max(H.sum(), 1), origin="lower", extent=[0, 1, 0, 1], cmap="viridis", vmin=0)
        ax.grid(False)
        ax.set(xlabel=f"attention on {relevant}", ylabel="true-class probability", title=f"{opt}, r = {r:g}")
    fig.colorbar(image, ax=axes[0, -1], label=f"fraction of test {unit}")
    return plotting.tidy(fig, f"DTAP heatmaps, seed {seed}")


def criteria_grid(held: Mapping, criteria: Mapping, fast, fast_ratio: float, fafo_minus_caco, scales, steps):
    """A grid of init scales (rows) × GD steps (columns): how many of the per-cell ``criteria`` ({letter:
    words}) hold (``held`` = {letter: (n_scales, n_steps) bool}; the letters of those that fail are written
    in the cell), the seed-mean attention of FAFO at r = ``fast_ratio`` (``fast``) and FAFO − CACO at r = 1."""
    import seaborn as sns  # only the heatmap pages pay for seaborn's import

    # one panel per row, cells wider than tall: the failed-claim letters and signed values of a 6 × 6 grid
    # ran into each other in three square panels side by side
    fig, axes = plotting.subplots(3, 1, width=7.0, height=0.45 * len(scales) + 1.4)
    axes = axes[:, 0]
    failed = np.array(
        [
            ["".join(k for k in criteria if not held[k][i, j]) or "✓" for j in range(len(steps))]
            for i in range(len(scales))
        ]
    )
    kw = dict(xticklabels=[f"{lr:g}" for lr in steps], yticklabels=[f"{s:g}" for s in scales], cbar=False, square=False)
    count = sum(np.asarray(held[k], dtype=int) for k in criteria)
    sns.heatmap(count, ax=axes[0], annot=failed, fmt="", cmap="RdYlGn", vmin=0, vmax=len(criteria), **kw)
    axes[0].set_title("claims holding (letters: failed)")
    sns.heatmap(fast, ax=axes[1], annot=True, fmt=".2f", cmap="mako", vmin=0.5, vmax=1.0, **kw)
    axes[1].set_title(f"FAFO at r = {fast_ratio:g}: attention at L*")
    lim = float(np.nanmax(np.abs(fafo_minus_caco))) or 1.0
    sns.heatmap(fafo_minus_caco, ax=axes[2], annot=True, fmt="+.2f", cmap="vlag", vmin=-lim, vmax=lim, **kw)
    axes[2].set_title("FAFO − CACO at r = 1 (Q2)")
    for ax in axes:
        ax.grid(False)
        ax.set(xlabel=r"GD step $\eta_{OV}$", ylabel=r"init std $\times\sqrt{d}$")
    return plotting.tidy(fig, "  ".join(f"{k}: {v}" for k, v in criteria.items()))


def attention_histograms(models: Mapping, scales, lr_ov: float):
    """Held-out attention on the distinct token, one panel per init scale of ``scales`` at GD step ``lr_ov``:
    ``models`` = {(label, colour): (experiments.ByParametrization on the (init_scale, lr_ov) grid, the name of
    its parametrization to show)}; the legend gives the share of sequences that look elsewhere
    (largest attention weight on a common token)."""
    fig, axes = plotting.subplots(1, len(scales), width=3.6, height=3.0)
    for ax, s in zip(axes[0], scales):
        for (label, color), (res, name) in models.items():
            mass = res.at(name, "test_attn_relevant_each", init_scale=s, lr_ov=lr_ov)
            elsewhere = 1 - res.at(name, "test_top1_relevant", init_scale=s, lr_ov=lr_ov).mean()
            ax.hist(
                np.ravel(mass),
                bins=np.linspace(0, 1, 41),
                histtype="step",
                lw=1.6,
                color=color,
                label=f"{label}: {100 * elsewhere:.1f}%",
            )
        ax.set(
            yscale="log",
            xlabel="attention on the distinct token",
            ylabel="held-out sequences",
            title=f"init std {s:g}/√d, GD step {lr_ov:g}",
        )
        # short labels under a shared title: a legend wider than its panel feeds back into constrained
        # layout (each pass shrinks the axes to fit the overhang) until the axes collapse
        ax.legend(loc="best", title="look elsewhere")
    return plotting.tidy(fig)
