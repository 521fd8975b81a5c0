"""Figure functions of the focus–dilution pages: each takes run records (``runs.FlowRun``,
``training.TrainRun``, …) and the times a page measured on them, and returns a matplotlib figure; the
pages call them and hold no plotting code."""

from __future__ import annotations

import numpy as np

from attnflow import plotting
from attnflow.plotting import PALETTE, shade_stages

__all__ = [
    "condensation_stage",
    "unigram_saddle",
    "dilution",
    "focus_stage",
    "escape_overview",
    "pca_phases",
    "pca_time",
    "cycle_loss",
    "cycle_zoom",
    "robustness_sweeps",
    "real_text_runs",
    "real_text_moves",
]


def condensation_stage(
    run, t_leave: float, t_cond: float, fit_window: tuple[float, float], sigma0: float, title: str = ""
):
    """Stage 1 (R1) on a population flow ``run``: the loss from log d to H(π), the singular values of W0,
    W1 and ‖WQWKᵀ‖_F (with a slope σ0 over the fit window) and the alignment of the top singular vectors
    of W0 with π and of W1 with π − 1/d; condensation [t_leave, t_cond] shaded in blue, the plateau
    after it in grey, up to 2 t_cond."""
    t, q, chain = run.t, run.quantities, run.chain
    fig, ax = plotting.subplots(1, 3, width=3.6, height=3.1)
    ax = ax[0]
    t_plot_end = min(float(t[-1]), 2.0 * t_cond)
    sel = t <= t_plot_end
    for a_ in ax:
        shade_stages(a_, [("condensation", t_leave, t_cond), ("plateau", t_cond, t_plot_end)])
    ax[0].plot(t[sel], q["loss"][sel], color="k")
    ax[0].axhline(np.log(chain.d), ls=":", color=PALETTE[0], label=r"$\log d$")
    ax[0].axhline(chain.unigram_entropy(), ls="--", color=PALETTE[1], label=r"$H(\pi)$")
    ax[0].set(xlabel="t", ylabel="population loss", title="loss: uniform → unigram")
    ax[0].legend()
    ax[1].semilogy(t[sel], q["sigma1"][sel], color=PALETTE[0], label=r"$\sigma_1(W_0)$")
    ax[1].semilogy(t[sel], q["sv_W1"][sel, 0], color=PALETTE[2], ls="--", label=r"$\sigma_1(W_1)$")
    ax[1].semilogy(t[sel], q["sigma2"][sel], color=PALETTE[3], label=r"$\sigma_2(W_0)$")
    ax[1].semilogy(t[sel], q["M_fro"][sel], color=PALETTE[4], label=r"$\|W_QW_K^\top\|_F$")
    t0, t1 = fit_window
    tt = np.array([t0, t1])
    ax[1].semilogy(
        tt,
        run.value("sigma1", t0) * np.exp(sigma0 * (tt - t0)) * 2.5,
        color="k",
        lw=1,
        label=r"slope $\sigma_0$ (shifted)",
    )
    ax[1].set(xlabel="t", title="rank one grows, attention frozen")
    ax[1].legend()
    ax[2].plot(t[sel], q["cos_W0_pi"][sel], color=PALETTE[0], label=r"$|\cos(u_1(W_0),\pi)|$")
    ax[2].plot(t[sel], q["cos_W1_pic"][sel], color=PALETTE[2], ls="--", label=r"$|\cos(v_1(W_1),\pi-\frac{1}{d})|$")
    ax[2].set(xlabel="t", ylim=(0, 1.05), title="alignment of the top singular vectors")
    ax[2].legend(loc="lower right")
    return plotting.tidy(fig, title)


def unigram_saddle(plateau, blocks, g: float, random_run, t_read: float, title: str = ""):
    """R2 (claims B4, B5, B17), two rows. Top, on the flow of ``plateau`` (``runs.PlateauRun``): the loss
    on its plateau at H(π) (θ_c¹ read at ``t_read``), the amplitudes a_k against απ_k, and |κ| and
    ‖WQWKᵀ‖_F with a slope 2g over the κ window (shaded). Bottom: the spectrum of −∇²L at θ_c¹ by block
    (``blocks``: ``spectrum.jacobian_blocks``), then, on the flow ``random_run`` of a random chain
    (``runs.FlowRun``), the turn of W1 from π − 1/d to ℓ and the loss and ‖W0‖_F at their predictions."""
    from attnflow.focus_dilution.closed_forms import theta_c1

    run = plateau.run
    q, t, chain = run.quantities, run.t, run.chain
    a_star = theta_c1(chain).a
    fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
    ax = axes[0]
    for a_ in ax[:3]:
        shade_stages(a_, [("condensation", t[1], plateau.t_cond), ("plateau", plateau.t_cond, t[-1])])
    ax[0].semilogx(t[1:], q["loss"][1:], color="k")
    ax[0].axhline(chain.unigram_entropy(), ls="--", color=PALETTE[1], label=r"$H(\pi)$")
    ax[0].axvline(t_read, color=PALETTE[3], lw=1, label=r"$\theta_c^1$ read here")
    ax[0].set(xlabel="t", ylabel="loss", title="plateau at the unigram loss")
    ax[0].legend()
    for k in range(chain.d):
        (line,) = ax[1].semilogx(t[1:], q["amp"][1:, k], lw=1.4, label=f"$a_{k}$" if k < 3 else None)
        ax[1].axhline(a_star[k], ls=":", color=line.get_color(), lw=1)
    ax[1].set(xlabel="t", title=r"amplitudes $a_k$ (dotted: $\alpha\pi_k$)")
    ax[1].legend()
    ax[2].semilogy(t, np.abs(q["kappa"]), color=PALETTE[0], label=r"$|\kappa|$")
    ax[2].semilogy(t, q["M_fro"], color=PALETTE[4], lw=1, label=r"$\|W_QW_K^\top\|_F$")
    tt = np.array(plateau.t_kappa)
    i0 = run.at(plateau.t_kappa[0])
    ax[2].semilogy(
        tt,
        np.abs(q["kappa"][i0]) * np.exp(2 * abs(g) * (tt - plateau.t_kappa[0])) * 3,
        color="k",
        lw=1,
        label=r"slope $2g$ (shifted)",
    )
    ax[2].axvspan(*plateau.t_kappa, color=PALETTE[0], alpha=0.08)
    ax[2].set(xlabel="t", title=r"attention grows at $2g$")
    ax[2].legend()
    ax = axes[1]
    n_emb = len(blocks.embedding_eigs)
    ax[0].plot(np.arange(n_emb), blocks.embedding_eigs, ".", color=PALETTE[0], label=r"$(W_0,W_1)$ block")
    ax[0].plot(
        n_emb + np.arange(len(blocks.attention_eigs)),
        blocks.attention_eigs,
        ".",
        color=PALETTE[3],
        label=r"$(W_Q,W_K)$ block",
    )
    ax[0].axhline(g, color=PALETTE[3], lw=0.8, ls=":")
    ax[0].set_yscale("symlog", linthresh=1e-3)
    ax[0].set(xlabel="eigenvalue index (sorted per block)", title=r"spectrum of $-\nabla^2L(\theta_c^1)$")
    ax[0].legend()
    tr, qr, rand = random_run.t, random_run.quantities, random_run.chain
    ax[1].plot(tr, qr["cos_W1_pic"], color=PALETTE[2], label=r"$|\cos(v_1(W_1),\pi-\frac{1}{d})|$")
    ax[1].plot(tr, qr["cos_W1_ell"], color=PALETTE[1], ls="--", label=r"$|\cos(v_1(W_1),\ell)|$")
    ax[1].set(xlabel="t", ylim=(0.9, 1.002), title=f"random chain (d = {rand.d}): $W_1$ turns")
    ax[1].legend(loc="lower right")
    ax[2].plot(tr, qr["loss"], color="k")
    ax[2].axhline(rand.unigram_entropy(), ls="--", color=PALETTE[1], label=r"$H(\pi)$")
    ax2 = ax[2].twinx()
    ax2.plot(tr, qr["W0_fro"], color=PALETTE[0], lw=1.2)
    ax2.axhline(theta_c1(rand).W0_norm, ls=":", color=PALETTE[0])
    ax2.set_ylabel(r"$\|W_0\|_F$ (blue; dotted: predicted)", color=PALETTE[0])
    ax2.grid(False)
    ax[2].set(xlabel="t", ylabel="loss", title="random chain: loss and $\\|W_0\\|_F$")
    ax[2].legend(loc="center right")
    return plotting.tidy(fig, title)


def dilution(run, run_c, red, v: np.ndarray, cyc, delta_cycle: float, L_c2: float = float("nan")):
    """Stage 3 (R4): top row, the main flow ``run`` — amplitudes, the rare queries' attention to the
    hub, the loss (stage spans from the :class:`~attnflow.focus_dilution.measure.Redistribution` ``red``
    shaded; ``L_c2`` the closed-form L(θ_c²), drawn when finite); bottom row, the drive ``v`` against π
    and the second cycle of ``run_c`` (its :class:`~attnflow.focus_dilution.stages.SecondCycle` ``cyc``):
    hub attention and attention entropy, loss (``delta_cycle``: its asymmetry δ, for the titles)."""
    chain, q, t = run.chain, run.quantities, run.t
    pi, hub = chain.pi, chain.hub
    low = [i for i in range(chain.d) if i != hub]
    A, amp = q["A"], q["amp"]
    H_pi = chain.unigram_entropy()
    close = np.abs(q["loss"] - red.L_end) < 1e-4 * (H_pi - red.L_end + 1e-12)
    t_settle = float(t[np.flatnonzero(close)[0]])
    fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
    spans = [
        ("condensation", 0, red.t_cond),
        ("plateau", red.t_cond, red.t_onset),
        ("focus", red.t_onset, red.t_peak),
        ("dilution", red.t_peak, t_settle),
        ("plateau", t_settle, t[-1]),
    ]
    ax = axes[0]
    for a_ in ax:
        shade_stages(a_, spans)
    ax[0].plot(t, amp[:, hub], color=PALETTE[0], label="frequent token")
    ax[0].plot(t, amp[:, low].mean(1), color=PALETTE[1], label="rare tokens (mean)")
    ax[0].axhline(0, color="k", lw=0.6)
    ax[0].set(xlabel="t", ylabel=r"$a_k=\langle h_k,u\rangle$", title="amplitudes move apart")
    ax[0].legend()
    ax[1].plot(t, A[:, hub, hub], color=PALETTE[0], label="frequent query")
    ax[1].plot(t, red.A_low_hub, color=PALETTE[1], label="rare queries")
    ax[1].axhline(pi[hub], ls=":", color="k", lw=1, label=r"$\pi_{\rm hub}$")
    ax[1].set(xlabel="t", ylabel=r"$A_{i,\rm hub}$", ylim=(pi[hub] - 0.06, None), title="focus, then dilution")
    ax[1].legend()
    ax[2].plot(t, q["loss"], color="k")
    ax[2].axhline(H_pi, ls="--", color=PALETTE[1], label=r"$H(\pi)$")
    if np.isfinite(L_c2):
        ax[2].axhline(L_c2, ls="--", color=PALETTE[2], label=r"$L(\theta_c^2)$ closed form")
    ax[2].set(xlabel="t", ylabel="loss", ylim=(red.L_end - 0.01, H_pi + 0.01), title="second plateau")
    ax[2].legend()
    ax = axes[1]
    keys = np.arange(chain.d)
    ax[0].bar(keys - 0.2, v / np.abs(v).max(), 0.4, color=PALETTE[3], label=r"$v/\max|v|$")
    ax[0].bar(keys + 0.2, pi / pi.max(), 0.4, color=PALETTE[0], label=r"$\pi/\max\pi$")
    ax[0].axhline(0, color="k", lw=0.6)
    ax[0].set(xlabel="token k", title=r"next-order drive $v$ vs $\pi$")
    ax[0].legend()
    qc, tc = run_c.quantities, run_c.t
    delta_c = delta_cycle
    ax[1].plot(tc, qc["hub_attention"], color=PALETTE[4], label=r"hub attention $\sum_i\pi_iA_{i,\rm hub}$")
    ax[1].plot(tc, qc["attn_entropy"], color=PALETTE[2], label="attention entropy")
    if cyc.escaped:
        ax[1].axvline(cyc.t_esc, color="k", lw=0.8, ls=":")
    ax[1].set(xlabel="t", title=f"δ = {delta_c:g}: the second cycle")
    ax[1].legend(loc="center right")
    ax[2].plot(tc, qc["loss"], color="k")
    for level, lab, col in [
        (run_c.chain.unigram_entropy(), r"$H(\pi)$", PALETTE[1]),
        (run_c.chain.bigram_loss(), "bigram optimum", PALETTE[3]),
    ]:
        ax[2].axhline(level, ls="--", color=col, label=lab)
    ax[2].set(xlabel="t", ylabel="loss", title=f"δ = {delta_c:g}: loss")
    ax[2].legend()
    return plotting.tidy(fig, f"Dilution on the {chain.name}")


def focus_stage(
    run,
    run_v,
    t_cond: float,
    t_onset: float,
    t_peak: float,
    t_onset_v: float,
    dA_closed: np.ndarray,
    dA_flow: np.ndarray,
    g: float,
    g_v: float,
    title: str = "",
):
    """Stage 2 (R3, claim B6), two rows. Top, on the page's flow ``run``: attention of the frequent and the
    rare queries to the frequent token and the attention entropy (condensation, plateau up to ``t_onset``,
    focus up to ``t_peak``, dilution shaded), and the flow's slope ∂κA against the closed form. Bottom, on
    the violating chain's flow ``run_v`` (g < 0): attention to the hub, the frequent query's row, and
    π_k − ‖π‖² of both chains."""
    t, q, markov = run.t, run.quantities, run.chain
    pi, hub = markov.pi, markov.hub
    A = q["A"]
    low = [i for i in range(markov.d) if i != hub]
    fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
    ax = axes[0]
    spans = [
        ("condensation", 0, t_cond),
        ("plateau", t_cond, t_onset),
        ("focus", t_onset, t_peak),
        ("dilution", t_peak, t[-1]),
    ]
    for a_ in ax[:2]:
        shade_stages(a_, spans)
    ax[0].plot(t, A[:, hub, hub], color=PALETTE[0], label="frequent query")
    for j, i in enumerate(low):
        ax[0].plot(t, A[:, i, hub], color=PALETTE[1], lw=1.2, label="rare queries" if j == 0 else None)
    ax[0].axhline(pi[hub], ls=":", color="k", lw=1, label=r"$\pi_{\rm hub}$")
    ax[0].set(xlabel="t", ylabel=r"$A_{i,\rm hub}$", title="attention to the frequent token")
    ax[0].legend()
    ax[1].plot(t, q["attn_entropy"], color=PALETTE[2], label=r"$\sum_i\pi_iH(A_{i\cdot})$")
    ax[1].plot(t, q["hub_attention"], color=PALETTE[4], label=r"$\sum_i\pi_iA_{i,\rm hub}$")
    ax[1].set(xlabel="t", title="attention entropy and hub attention")
    ax[1].legend()
    ax[2].plot(dA_closed.ravel(), dA_flow.ravel(), "o", color=PALETTE[0], ms=4)
    lim = np.abs(dA_closed).max() * 1.1
    ax[2].plot([-lim, lim], [-lim, lim], color="k", lw=0.8)
    ax[2].set(
        xlabel=r"closed form $c\alpha^2\pi_i\pi_k(\pi_k-\|\pi\|^2)$",
        ylabel=r"flow: slope of $A_{ik}$ vs $\kappa$",
        title=r"$\partial_\kappa A$: flow = formula",
    )
    ax = axes[1]
    tv, Av, vio = run_v.t, run_v.quantities["A"], run_v.chain
    pi_v, hub_v = vio.pi, vio.hub
    ax[0].plot(tv, Av[:, hub_v, hub_v], color=PALETTE[0], label="frequent query")
    for j, i in enumerate([i for i in range(vio.d) if i != hub_v]):
        ax[0].plot(tv, Av[:, i, hub_v], color=PALETTE[1], lw=1.2, label="rare queries" if j == 0 else None)
    ax[0].axhline(pi_v[hub_v], ls=":", color="k", lw=1)
    shade_stages(ax[0], [("focus", t_onset_v, tv[-1])])
    ax[0].set(xlabel="t", ylabel=r"$A_{i,\rm hub}$", title="violating chain ($g<0$): attention to the hub")
    ax[0].legend()
    for k in range(vio.d):
        ax[1].plot(
            tv,
            Av[:, hub_v, k],
            lw=1.4,
            color=PALETTE[0] if k == hub_v else PALETTE[1 + (k % 5)],
            label="hub key" if k == hub_v else (f"rare key {k}" if k < 3 else None),
        )
    shade_stages(ax[1], [("focus", t_onset_v, tv[-1])])
    ax[1].set(xlabel="t", title="frequent query's attention row")
    ax[1].legend()
    width = 0.38
    ax[2].bar(
        np.arange(markov.d) - width / 2,
        pi - (pi**2).sum(),
        width,
        color=PALETTE[0],
        label=r"page chain: $\pi_k-\|\pi\|^2$",
    )
    ax[2].bar(
        np.arange(vio.d) + width / 2,
        pi_v - (pi_v**2).sum(),
        width,
        color=PALETTE[3],
        label=r"violating: $\pi_k-\|\pi\|^2$",
    )
    ax[2].axhline(0, color="k", lw=0.8)
    ax[2].set(xlabel="key token k", title=f"g = {g:.4f} (page chain)\ng = {g_v:.4f} (violating)")
    ax[2].legend()
    return plotting.tidy(
        fig, title or "Focus: attention tilts with κ·π_iπ_k(π_k − ‖π‖²); the sign of κ is the sign of g"
    )


def escape_overview(run0, trap, sweep, ls, run_c, lambda1: float, horizon: float, delta: float, spec_rates=None):
    """Stage 4 (R5) from the escape page's records: top, trapping at δ = 0 (σ₂(W0), σ_max(M⊥), the plateau
    after settling shaded), σ₂(W0) of each δ run with its linear window, the escape rate against δ (with
    σ_max(M⊥) at θ_c²(δ) of the restricted flows ``ls`` and the line λ₁δ); bottom, the escape time against
    1/δ, the singular values of W0 in the run ``run_c`` at ``delta`` (new directions open) and the loss of
    the sweep. ``trap``: the δ = 0 statistics (``escape.trap_stats``), ``sweep``: ``escape.SweepRow`` s,
    ``spec_rates``: the spec's rates per δ, drawn where given."""
    q0, t0, sym = run0.quantities, run0.t, run0.chain
    fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
    ax = axes[0]
    ax[0].semilogy(t0, q0["sigma2"], color=PALETTE[0], label=r"$\sigma_2(W_0)$")
    ax[0].semilogy(t0, q0["M_perp_smax"], color=PALETTE[3], label=r"$\sigma_{\max}(M_\perp)$")
    if trap.settled:
        shade_stages(ax[0], [("plateau", trap.t_settle, float(t0[-1]))])
    ax[0].set(xlabel="t", title=r"$\delta=0$: trapped at $\theta_c^2$")
    ax[0].legend()
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(sweep))]
    for col, r in zip(colors, sweep):
        ax[1].semilogy(r.run.t, r.run.quantities["sigma2"], color=col, lw=1.3, label=f"δ = {r.delta:g}")
        if r.stats.window_found:
            ax[1].axvspan(*r.stats.window, color=col, alpha=0.12)
    early = t0 <= horizon
    ax[1].semilogy(t0[early], q0["sigma2"][early], color="k", lw=1, ls=":", label="δ = 0")
    ax[1].axhspan(0.01, 0.1, color="k", alpha=0.04)
    ax[1].set(xlabel="t", title=r"$\sigma_2(W_0)$: escape at rate $\propto\delta$")
    ax[1].legend()
    ds = np.array([r.delta for r in sweep])
    dd = np.linspace(0, ds.max() * 1.05, 50)
    ax[2].plot(ds, [r.stats.rate for r in sweep], "o", color=PALETTE[0], label=r"rate of $\sigma_2(W_0)$")
    ax[2].plot(
        ds, [r.stats.M_perp_mean for r in sweep], "x", color=PALETTE[3], ms=8, label=r"mean $\sigma_{\max}(M_\perp)$"
    )
    ax[2].plot(dd, lambda1 * dd, color="k", lw=1, label=r"$\lambda_1\delta$ (Lyapunov–Schmidt)")
    ax[2].plot(
        ls.deltas, ls.sigma_max, "s", color=PALETTE[2], ms=4, label=r"$\sigma_{\max}(M_\perp(\theta_c^2(\delta)))$"
    )
    if spec_rates is not None:
        ax[2].plot(
            ds, [spec_rates.get(d_, float("nan")) for d_ in ds], "+", color=PALETTE[1], ms=10, label="spec (Euler)"
        )
    ax[2].set(xlabel=r"$\delta$", ylabel="rate", title="escape rate vs δ")
    ax[2].legend()
    ax = axes[1]
    ax[0].plot(1 / ds, np.array([r.stats.t_escape for r in sweep]) - trap.t_settle, "o-", color=PALETTE[0])
    ax[0].set(xlabel=r"$1/\delta$", ylabel=r"$t_{\rm esc}-t_{\rm settle}$", title="escape time Θ(1/δ)")
    sv = run_c.quantities["sv_W0"]
    for k in range(sv.shape[1]):
        ax[1].semilogy(run_c.t, sv[:, k], lw=1.3, label=rf"$\sigma_{k + 1}(W_0)$")
    ax[1].axhline(0.1, color="k", lw=0.8, ls=":")
    ax[1].set(xlabel="t", title=f"δ = {delta:g}: new directions open")
    ax[1].legend(ncol=3, loc="lower right")
    for col, r in zip(colors, sweep):
        ax[2].plot(r.run.t, r.run.quantities["loss"], color=col, lw=1.3, label=f"δ = {r.delta:g}")
    ax[2].plot(t0[early], q0["loss"][early], color="k", lw=1, ls=":", label="δ = 0")
    ax[2].axhline(trap.bigram0, color=PALETTE[3], ls="--", lw=1, label="bigram (δ = 0)")
    ax[2].set(
        xlabel="t",
        ylabel="loss",
        ylim=(trap.bigram0 - 0.01, sym.unigram_entropy() + 0.01),
        title="loss: θ_c² plateau, then the next cycles",
    )
    ax[2].legend(ncol=2, loc="upper right")
    return plotting.tidy(fig, f"Escape from the degenerate point, {sym.name.replace(', δ=0', '')}")


def _pca_style(chain):
    """Token labels and colours of the PCA figures (the hub first in the legend's wording)."""
    d, hub = chain.d, chain.hub
    return ["hub" if k == hub else f"low {k}" for k in range(d)], [PALETTE[k % len(PALETTE)] for k in range(d)]


def pca_phases(rows, chain):
    """PCA page: one row per run, ``rows`` = [(name, pca.Phases), ...], one PC1–PC2 panel per phase (condensation,
    retraction from the first focus to the end of the first dilution, expansion from there to the end)."""
    from attnflow.focus_dilution import pca

    labels, colors = _pca_style(chain)
    fig, ax = plotting.subplots(len(rows), 3, width=3.4, height=3.0)
    for row, (name, ph) in enumerate(rows):
        mk = ph.marks
        windows = [
            ("condensation", 0.0, mk["condensed"]),
            ("retraction (focus → dilution)", mk["focus"], mk["diluted"]),
            ("expansion (escape → next cycle)", mk["diluted"], mk["end"]),
        ]
        pca.plot_phases(ax[row, :], ph.p, ph.run.t, windows, labels, colors)
        ax[row, 0].set_ylabel(f"{name}\nPC2")
    ax[0, 0].legend(loc="upper left")
    return plotting.tidy(fig, "Embeddings h_k(t) on the principal components of the whole trajectory")


def pca_time(rows, chain, horizon: float):
    """PCA page: every token's PC1 (solid) and PC2 (dashed) coordinate against time, one panel per run in
    ``rows`` = [(name, pca.Phases), ...], the detected stages shaded."""
    from attnflow.focus_dilution import stages

    labels, colors = _pca_style(chain)
    fig, ax = plotting.subplots(1, len(rows), width=4.6, height=2.8, sharey=True)
    for a, (name, ph) in zip(ax[0], rows):
        for k in range(chain.d):
            a.plot(ph.run.t, ph.p.coords[:, k, 0], color=colors[k], lw=1.5, label=labels[k])
            a.plot(ph.run.t, ph.p.coords[:, k, 1], color=colors[k], lw=1.0, ls="--")
        a.set(xlim=(0, horizon), xlabel="t", title=f"{name}: PC1 (solid), PC2 (dashed)")
        stages.shade(a, ph.detected)
    ax[0, 0].set_ylabel("coordinate")
    ax[0, -1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5))
    return plotting.tidy(fig)


def finite_sample_sweep(
    population, flow, sampled: dict, n_samples, seq_len, seed: int, H_pi: float, L_c2: float, d: int
):
    """Finite-sample page: population loss (top) and low-query attention on the hub (bottom) of the runs
    of data seed ``seed`` over the N-sweep at the largest s (left) and the s-sweep at the largest N
    (right), against the same GD on the population loss (dashed) and the exact flow (dotted);
    ``sampled`` maps (N, s, seed) to the trained runs, ``H_pi`` and ``L_c2`` mark the plateau levels."""
    from attnflow.focus_dilution import stages

    N_max, s_max = max(n_samples), max(seq_len)
    fig, ax = plotting.subplots(2, 2, width=4.6, height=2.8, sharex=True)
    sweeps = [("N", sorted({(N, s_max) for N in n_samples})), ("s", sorted({(N_max, s) for s in seq_len}))]
    for col, (name, keys) in enumerate(sweeps):
        for j, (N, s) in enumerate(keys):
            r = sampled[(N, s, seed)]
            label = f"N = {N}" if name == "N" else f"s = {s}"
            ax[0, col].plot(r.t, r.quantities["loss"], color=PALETTE[j], label=label)
            ax[1, col].plot(r.t, stages.signals(r)["low_hub"], color=PALETTE[j])
        for a, key in ((ax[0, col], "loss"), (ax[1, col], "low_hub")):
            for run, style, label in ((population, "k--", "population (same GD)"), (flow, "k:", "population flow")):
                y = run.quantities["loss"] if key == "loss" else stages.signals(run)["low_hub"]
                a.plot(run.t, y, style, lw=1.2, label=label)
        ax[0, col].axhline(H_pi, color="0.5", lw=0.8)
        lo = np.nanmin([L_c2, H_pi, float(population.quantities["loss"].min())]) - 0.01
        ax[0, col].set(
            title=f"sweep over {name} ({'s' if name == 'N' else 'N'} = {s_max if name == 'N' else N_max})",
            ylabel="population loss of θ" if col == 0 else "",
            ylim=(lo, np.log(d) + 0.005),
        )
        ax[1, col].set(xlabel="t = η · step", ylabel="low-query attention on hub" if col == 0 else "")
        ax[0, col].legend()
    return plotting.tidy(
        fig, f"Finite-sample training approaches the population dynamics as N and s grow (data seed {seed})"
    )


def _cycle_columns(flow, stages_flow, trained, stages_trained, trained_title: str):
    return [(flow, stages_flow, "population flow", False), (trained, stages_trained, trained_title, True)]


def cycle_loss(flow, stages_flow, trained, stages_trained, refs: dict, horizon: float, trained_title: str):
    """Claim B1 (cycle page): the loss of the population ``flow`` and of one ``trained`` run (its training loss and the
    population loss of its θ) on a log time axis to ``horizon``, the loss levels ``refs`` ({label: value}) and the
    stages detected in each run shaded."""
    from attnflow.focus_dilution import stages

    fig, ax = plotting.subplots(1, 2, width=4.6, height=2.9, sharey=True)
    for a, (run, detected, title, is_trained) in zip(
        ax[0], _cycle_columns(flow, stages_flow, trained, stages_trained, trained_title)
    ):
        t = np.maximum(run.t, 1.0)
        a.plot(t, stages.signals(run)["loss"], color="k", label="training loss" if is_trained else "loss")
        if is_trained:
            a.plot(t, run.quantities["loss"], color=PALETTE[0], ls="--", lw=1.2, label="population loss of θ")
        for (name, value), ls in zip(refs.items(), [":", "-.", "--", (0, (1, 3))]):
            a.axhline(value, color="0.45", ls=ls, lw=0.9, label=name)
        a.set(xscale="log", xlim=(1.0, horizon), title=title, xlabel="t (training: η · step)")
        stages.shade(a, detected)
        a.legend(loc="lower left")
    ax[0, 0].set_ylabel("loss")
    fig.legend(handles=stages.legend_handles(), loc="outside lower center", ncol=5)
    return plotting.tidy(fig, "Claim B1: the loss through the stages")


def cycle_zoom(flow, stages_flow, trained, stages_trained, horizon: float, trained_title: str):
    """Claims B1, B6, B7, B9 (cycle page): from just before the first detected focus to ``horizon``, the attention
    on the hub (all queries and the low-frequency queries), the attention entropy and the singular values of W0 of
    the population ``flow`` and one ``trained`` run, their detected stages shaded."""
    from attnflow.focus_dilution import stages

    starts = [detected.get("focus", 1).start for detected in (stages_flow, stages_trained)]
    starts = [x for x in starts if np.isfinite(x)]
    t_zoom = 0.8 * min(starts) if starts else 0.0
    fig, ax = plotting.subplots(3, 2, width=4.6, height=2.3, sharex=True)
    for col, (run, detected, title, _) in enumerate(
        _cycle_columns(flow, stages_flow, trained, stages_trained, trained_title)
    ):
        signals, a = stages.signals(run), ax[:, col]
        a[0].plot(run.t, signals["hub"], color=PALETTE[1], label="all queries")
        a[0].plot(run.t, signals["low_hub"], color=PALETTE[2], ls="--", label="low-frequency queries")
        a[1].plot(run.t, run.quantities["attn_entropy"], color=PALETTE[4])
        a[2].semilogy(run.t, run.quantities["sv_W0"], color=PALETTE[0], lw=1.2)
        a[0].set(title=title)
        a[2].set(xlabel="t (training: η · step)", xlim=(t_zoom, horizon))
        for x in a:
            stages.shade(x, detected, labels=x is a[0])
    ax[0, 0].set_ylabel("attention on hub")
    ax[1, 0].set_ylabel("attention entropy")
    ax[2, 0].set_ylabel(r"$\sigma_k(W_0)$")
    ax[0, 0].legend(loc="center left")
    fig.legend(handles=stages.legend_handles(), loc="outside lower center", ncol=5)
    return plotting.tidy(fig, "Claim B1: focus, dilution, escape and the next cycle (B6, B7, B9)")


SWEEP_NAMES = {"ε": "ε", "m": "m", "δ": "δ", "chain": "(a_h, b_h)"}  # the robustness page's sweeps, as labelled


def robustness_sweeps(runs: dict):
    """The robustness page's sweeps, one row per sweep (``runs`` keyed (sweep, value), sweeps ε, m, δ, chain): hub
    attention (a jump up is a focus) and σ₂(W0) (a rise by decades is an escape), linear time."""
    fig, ax = plotting.subplots(4, 2, width=4.4, height=2.0, sharex=True, sharey="col")
    for row, kind in enumerate(SWEEP_NAMES):
        for j, k in enumerate([k for k in runs if k[0] == kind]):
            r = runs[k]
            ax[row, 0].plot(r.t, r.quantities["hub_attention"], color=PALETTE[j], label=f"{SWEEP_NAMES[kind]} = {k[1]}")
            ax[row, 1].semilogy(r.t, np.maximum(r.quantities["sigma2"], 1e-6), color=PALETTE[j])
        ax[row, 0].set_ylabel(f"sweep over {SWEEP_NAMES[kind]}\nhub attention")
        ax[row, 1].set_ylabel(r"$\sigma_2(W_0)$")
        ax[row, 1].legend(*ax[row, 0].get_legend_handles_labels(), loc="center left", bbox_to_anchor=(1.02, 0.5))
    ax[-1, 0].set(xlabel="t")
    ax[-1, 1].set(xlabel="t")
    return plotting.tidy(fig, "Which stages appear, move or vanish (population GD)")


REAL_TEXT_UNITS = (" ", "\n", "the", ",", ".")  # the token ids whose lift the real-text figure draws


def real_text_runs(runs: dict, marks: dict, mid):
    """The real-text page, one row per corpus (``runs``: corpus → ``realtext.RealTextRun``, ``marks``:
    its ``realtext.milestones``): the losses, the attention lift per token id (``mid``: the ranks of
    the mid-frequency group) and the attention entropy with the embedding's effective rank."""
    mid = list(mid)
    fig, axes = plotting.subplots(len(runs), 3, width=3.6, height=2.9)
    for row, (c, res) in zip(axes, runs.items()):
        text, m, t = res.text, marks[c], res.t
        row[0].plot(t, res.runs["real"].train_loss, color="k", label="real text, training windows")
        row[0].plot(t, res.val_loss["real"], color=PALETTE[0], label="real text, held-out")
        row[0].plot(t, res.val_loss["markov"], "--", color=PALETTE[1], label="Markov run, held-out")
        row[0].axhline(res.plateau, color="0.6", lw=1, ls=":", label="unigram plateau")
        row[0].axhline(m["bigram"], color="0.3", lw=1, ls="-.", label="bigram loss (chain)")
        row[0].set(xlabel="t = lr·step", ylabel="loss", title=f"{c}: loss", ylim=(m["bigram"] - 0.3, m["log_d"] + 0.1))
        lift = res.lift()
        for u in REAL_TEXT_UNITS:
            if u in text.units:
                row[1].plot(t, lift[:, text.index(u)], label=f"'{text.label(text.index(u))}'")
        row[1].plot(t, lift[:, -1], color="0.5", label="UNK")
        row[1].plot(t, lift[:, mid].mean(-1), "k--", label=f"mid ranks {mid[0]}–{mid[-1]}")
        row[1].plot(t, res.lift("markov")[:, mid].mean(-1), "k:", lw=1, label="mid, Markov run")
        row[1].axhline(1, color="0.7", lw=0.8)
        row[1].set(xlabel="t", ylabel="attention lift", title="attention per token id (held-out)", yscale="log")
        ax2 = row[2].twinx()
        row[2].plot(t, res.entropy["real"], color=PALETTE[2], label="attention entropy")
        row[2].plot(t, res.entropy["markov"], ":", color=PALETTE[2], label="entropy, Markov run")
        ax2.plot(t, res.runs["real"].quantities["eff_rank_W0"], color=PALETTE[3], label="eff. rank of W0")
        row[2].set(xlabel="t", ylabel="attention entropy (nats)", title="entropy and embedding rank")
        ax2.set(ylabel="effective rank of W0", yscale="log")
        ax2.grid(False)
        for ax in row:
            for x in (m["t_cond"], m["t_move"], m["t_escape"]):
                ax.axvline(x, color="0.8", lw=0.8, zorder=0)
        row[0].legend()
        row[1].legend(ncol=2, frameon=True, framealpha=0.9)
        handles = row[2].get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        row[2].legend(handles=handles, loc="center right", frameon=True, framealpha=0.9)
    return plotting.tidy(fig, "Real text (vertical lines: end of condensation, first attention move, escape)")


def real_text_moves(runs: dict, marks: dict, n_top: int):
    """Per corpus: the lift change of each token id at the first attention move against the Markov
    theory's move (``realtext.saddle_lift``, scaled to the move's norm, its sign kept); the ``n_top``
    most frequent tokens and UNK are named."""
    fig, axes = plotting.subplots(1, len(runs), width=3.6, height=3.0)
    for ax, (c, res) in zip(axes[0], runs.items()):
        m = marks[c]
        ax.scatter(m["move_predicted"], m["move_change"], s=14, color=PALETTE[0])
        for k in list(range(n_top)) + [res.text.d - 1]:
            name = res.text.label(k) if k < res.text.d - 1 else "UNK"
            plotting.droppable(  # tokens in order of frequency: a rarer label gives way to a frequent one
                ax.annotate(name, (m["move_predicted"][k], m["move_change"][k]), fontsize=plotting.SMALLEST_FONT_PT)
            )
        ax.axhline(0, color="0.7", lw=0.8)
        ax.axvline(0, color="0.7", lw=0.8)
        lim = 1.05 * float(np.abs(np.concatenate([m["move_predicted"], m["move_change"]])).max())
        ax.plot([-lim, lim], [-lim, lim], color="0.6", lw=0.8, ls="--")  # same size: the line is y = x
        ax.set(
            xlabel="Markov theory: lift − 1",
            ylabel="lift − 1 at the first move",
            title=f"{c}: t = {m['t_move']:g}, corr {m['move_corr']:.4f}",
        )
    return plotting.tidy(fig, "Which tokens gain attention first: measured on real text vs the Markov theory")
