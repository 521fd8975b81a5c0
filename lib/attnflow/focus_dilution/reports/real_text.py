"""Report of the real-text page (spec focus_dilution.md §7 item 8; claims B10, B11): the model trained
on two real corpora next to the same model trained on the population loss of each corpus' bigram
chain (the Markov approximation).

    rep = real_text.measure(cfg)    # cfg: the page's validated parameters (realtext.SCHEMA)
    rep.data_table(); rep.milestone_table(); rep.glue(); rep.figures(); rep.check_claims()

**Tolerances** (set before the runs, explained on the page): the Markov run's held-out loss stays
within ``GAP_TOL`` of the real run's drop on the plateau, and the two runs' clocks (mid-condensation,
leaving the plateau) agree to ``CLOCK_RTOL``; the first attention move, read where some lift is ℓ
away from 1, correlates with the Markov theory's move at ``move_corr_min(ℓ)`` = √(1 − ℓ²) or more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnflow import claims, display
from attnflow.focus_dilution import realtext
from attnflow.report import PageReport

__all__ = [
    "RealTextReport",
    "measure",
    "escape_time",
    "escape_due",
    "move_corr_min",
    "DUE_FACTOR",
    "GAP_TOL",
    "CLOCK_RTOL",
    "MARKOV_ERRATA",
    "ORDER_ERRATA",
    "NAMED_UNITS",
    "MILESTONE_KEYS",
]

GAP_TOL = 0.03  # B10 Markov approximation on the plateau: largest loss gap / loss drop (set before the runs)
CLOCK_RTOL = 0.1  # B10 clocks (mid-condensation, leaving the plateau): relative, the condensation clock's
DUE_FACTOR = 1.0  # B10 escape: decades of loss drop the run must have time for beyond the linear forecast
MARKOV_ERRATA, ORDER_ERRATA = "errata-real-text-markov", "errata-real-text-order"
NAMED_UNITS = (" ", "\n", "the", ",", ".")  # the token ids whose lift the figure draws
MILESTONE_KEYS = (
    "t_cond",
    "rank_init",
    "rank_cond",
    "lift_dev_cond",
    "t_move",
    "move_corr",
    "move_sign",
    "move_corr_r3",
    "mode_corr_r3",
    "mode_multiplicity",
    "t_escape",
    "rank_end",
    "gap_plateau",
    "gap_all",
    "g",
    "pi_sq",
    "loss_end",
    "bigram",
    "t_half",
    "t_half_markov",
    "t_escape_val",
    "t_escape_markov",
    "rate_cond",
    "t_forecast",
)


@dataclass
class RealTextReport(PageReport):
    """Everything the real-text page shows; per-corpus numbers are glued as ``<corpus>_<name>``."""

    lr: float
    eps: float
    d: int
    m: int
    alpha: float
    mid_first: int
    mid_last: int
    # not glued
    cfg: Any = None
    texts: dict = field(default_factory=dict)  # corpus → realtext.RealStream
    results: dict = field(default_factory=dict)  # corpus → realtext.RealTextRun
    marks: dict = field(default_factory=dict)  # corpus → realtext.milestones(...)
    first_lifts: dict = field(default_factory=dict)  # corpus → lifts of ␣, "the", the mid group at the first move
    groups: dict = field(default_factory=dict)  # "frequent", "mid" → token ids

    # ------------------------------------------------------------------ tables and glue
    def data_table(self):
        rows = []
        for c, text in self.texts.items():
            pi = text.pi
            rows.append(
                {
                    "corpus": c,
                    "source": "stand-in" if text.standin else "real",
                    "train tokens": len(text.train),
                    "d": text.d,
                    "UNK share": pi[-1],
                    **{f"#{k + 1}": f"{text.label(k)} ({pi[k]:.3f})" for k in range(5)},
                }
            )
        return display.table(rows, floatfmt="{:.3f}")

    def milestone_table(self):
        return display.table(
            [{"corpus": c, **{k: v for k, v in m.items() if np.ndim(v) == 0}} for c, m in self.marks.items()],
            floatfmt="{:.3g}",
        )

    def glue(self, prefix: str = "") -> dict[str, Any]:
        values = super().glue(prefix)
        n_top = self.cfg.n_top
        for c, m in self.marks.items():
            res = self.results[c]
            per = {key: m[key] for key in MILESTONE_KEYS}
            per.update(
                hub_lift_move=realtext.lifts_at(res, m["t_move"], [], [0])["group"],
                hub=res.text.label(0),
                space_lift_move=self.first_lifts[c][" "],
                the_lift_move=self.first_lifts[c]["the"],
                mid_lift_move=self.first_lifts[c]["group"],
                top_lift_move=realtext.lifts_at(res, m["t_move"], [], range(1, n_top))["group"],
                plateau=res.plateau,
            )
            for key in ("t_escape_val", "t_escape_markov"):  # as text: a run may not leave the plateau
                per[f"{key}_txt"] = f"t = {m[key]:g}" if np.isfinite(m[key]) else "not within the run"
            escape_diff = abs(m["t_escape_val"] - m["t_escape_markov"]) / m["t_escape_markov"]
            per["escape_diff_txt"] = f"{escape_diff:.1%} apart" if np.isfinite(escape_diff) else "no common time"
            for key, value in per.items():
                display.number(f"{prefix}{c}_{key}", value)
                values[f"{c}_{key}"] = value
        return values

    # ------------------------------------------------------------------ figures
    def figures(self) -> list:
        return [self.runs_figure(), self.moves_figure()]

    def runs_figure(self):
        """Per corpus: the losses, the attention lift per token id and the entropy / embedding rank."""
        from attnflow import plotting

        mid = self.groups["mid"]
        fig, axes = plotting.subplots(len(self.results), 3, width=3.6, height=2.9)
        for row, (c, res) in zip(axes, self.results.items()):
            text, m, t = res.text, self.marks[c], res.t
            row[0].plot(t, res.runs["real"].train_loss, color="k", label="real text, training windows")
            row[0].plot(t, res.val_loss["real"], color=plotting.PALETTE[0], label="real text, held-out")
            row[0].plot(t, res.val_loss["markov"], "--", color=plotting.PALETTE[1], label="Markov run, held-out")
            row[0].axhline(res.plateau, color="0.6", lw=1, ls=":", label="unigram plateau")
            row[0].axhline(m["bigram"], color="0.3", lw=1, ls="-.", label="bigram loss (chain)")
            row[0].set(
                xlabel="t = lr·step", ylabel="loss", title=f"{c}: loss", ylim=(m["bigram"] - 0.3, m["log_d"] + 0.1)
            )
            lift = res.lift()
            for u in NAMED_UNITS:
                if u in text.units:
                    row[1].plot(t, lift[:, text.index(u)], label=f"'{text.label(text.index(u))}'")
            row[1].plot(t, lift[:, -1], color="0.5", label="UNK")
            row[1].plot(t, realtext.group_lift(lift, mid), "k--", label=f"mid ranks {self.mid_first}–{self.mid_last}")
            row[1].plot(t, realtext.group_lift(res.lift("markov"), mid), "k:", lw=1, label="mid, Markov run")
            row[1].axhline(1, color="0.7", lw=0.8)
            row[1].set(xlabel="t", ylabel="attention lift", title="attention per token id (held-out)", yscale="log")
            ax2 = row[2].twinx()
            row[2].plot(t, res.entropy["real"], color=plotting.PALETTE[2], label="attention entropy")
            row[2].plot(t, res.entropy["markov"], ":", color=plotting.PALETTE[2], label="entropy, Markov run")
            ax2.plot(t, res.runs["real"].quantities["eff_rank_W0"], color=plotting.PALETTE[3], label="eff. rank of W0")
            row[2].set(xlabel="t", ylabel="attention entropy (nats)", title="entropy and embedding rank")
            ax2.set(ylabel="effective rank of W0", yscale="log")
            ax2.grid(False)
            for ax in row:
                for x in (m["t_cond"], m["t_move"], m["t_escape"]):
                    ax.axvline(x, color="0.8", lw=0.8, zorder=0)
            row[0].legend(fontsize="x-small")
            row[1].legend(fontsize="x-small", ncol=2, frameon=True, framealpha=0.9)
            handles = row[2].get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
            row[2].legend(handles=handles, fontsize="x-small", loc="center right", frameon=True, framealpha=0.9)
        fig.suptitle(
            "Real text (vertical lines: end of condensation, first attention move, escape)",
            y=1.0 + 0.08 / len(self.results),
        )  # clear of the panel titles for one row or two
        return fig

    def moves_figure(self):
        """Per corpus: the lift change of each token id at the first attention move vs the Markov
        theory's move (``realtext.saddle_lift``), scaled to the move's norm (its sign kept)."""
        from attnflow import plotting

        fig, axes = plotting.subplots(1, len(self.results), width=3.6, height=3.0)
        for ax, (c, res) in zip(axes[0], self.results.items()):
            m = self.marks[c]
            ax.scatter(m["move_predicted"], m["move_change"], s=14, color=plotting.PALETTE[0])
            for k in list(range(self.cfg.n_top)) + [res.text.d - 1]:
                ax.annotate(
                    res.text.label(k) if k < res.text.d - 1 else "UNK",
                    (m["move_predicted"][k], m["move_change"][k]),
                    fontsize=8,
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
        fig.suptitle("Which tokens gain attention first: measured on real text vs the Markov theory", y=1.04)
        return fig

    # ------------------------------------------------------------------ claims
    def check_claims(self) -> None:
        for c, m in self.marks.items():
            claims.check(
                "B10",
                [m["rank_cond"], m["lift_dev_cond"]],
                predicate=lambda x: x[0] < 1.5 and x[1] <= 0.02,
                tolerance="eff. rank < 1.5 and max |lift − 1| ≤ 0.02",
                what=f"{c}: effective rank of W0 and attention change at the end of condensation",
                source="paper",
            )
            due = escape_due(m["rate_cond"], m["t_forecast"])
            claims.check(
                "B10",
                [float(m["escaped"]), m["rank_end"]],
                predicate=lambda x: x[0] == 1.0 and x[1] > 1.8,
                tolerance="escapes the plateau and eff. rank > 1.8",
                what=f"{c}: loss leaves the unigram plateau, final effective rank of W0",
                source="paper",
                domain=claims.domain(
                    (
                        "the escape is due within the run: the saddle's unstable attention mode at the end of "
                        "condensation (rate r, amplitude a) takes the loss a tenth of the gap to the bigram loss "
                        f"below the plateau by the linear forecast, + {DUE_FACTOR:g}·ln 10/(2r) for a nonlinear "
                        "end, ≤ the run's end",
                        bool(due <= m["t_end"]),
                        f"r = {m['rate_cond']:.3g}, a = {m['amp_cond']:.2g}: forecast {m['t_forecast']:.4g}, "
                        f"due {due:.4g}, end {m['t_end']:g}",
                    )
                ),
            )
            floor = move_corr_min(m["move_level"])
            claims.check(
                "B11",
                m["move_corr"],
                predicate=lambda x, floor=floor: x >= floor,
                tolerance=f"corr ≥ √(1 − ℓ²) = {floor:.4f}: read at lift deviation ℓ = {m['move_level']:g}, "
                "the move differs from the linear prediction by terms of relative order ℓ",
                what=f"{c}: first attention move vs the Markov theory's: the lift of the fitted chain's "
                "saddle focus mode (θ_c¹, κ of the sign of g) on the same windows",
                source="reconstruction",
                domain=claims.domain(
                    (
                        "condensation ends near the rank-one saddle the theory linearizes at: effective rank of "
                        "W0 below 1.5 there",
                        bool(m["rank_cond"] < 1.5),
                        f"effective rank {m['rank_cond']:.3g}",
                    )
                ),
            )
            lifts = self.first_lifts[c]
            ok_order = claims.check(
                "B11",
                [lifts[" "], lifts["the"], lifts["group"]],
                predicate=realtext.paper_order,
                tolerance="lift(␣) > 1, lift(the) > 1, both > mean lift of the mid-frequency ranks",
                what=f"{c}: lifts of ␣, 'the' and the mid-frequency tokens at the first attention move",
                source="paper",
                errata=ORDER_ERRATA,
            )
            claims.check(
                "B10",
                m["t_half"],
                m["t_half_markov"],
                rtol=CLOCK_RTOL,
                what=f"{c}: time of mid-condensation, real run vs Markov run",
                source="reconstruction",
            )
            ok_gap = claims.check(
                "B10",
                m["gap_plateau"],
                0.0,
                atol=GAP_TOL,
                tolerance="set before the runs",
                what=f"{c}: Markov approximation, largest held-out loss gap on the plateau / loss drop",
                source="paper",
                errata=MARKOV_ERRATA,
            )
            t_real, censored = escape_time(m["t_escape_val"], m["t_escape_markov"], m["t_end"])
            ok_escape = claims.check(
                "B10",
                t_real,
                m["t_escape_markov"],
                rtol=CLOCK_RTOL,
                tolerance="set before the runs"
                + (
                    f"; the real run is still on the plateau at T = {t_real:g}, a lower bound of its time"
                    if censored
                    else ""
                ),
                what=f"{c}: Markov approximation, time the held-out loss leaves the plateau, real vs Markov",
                source="paper",
                errata=MARKOV_ERRATA,
                domain=claims.domain(
                    (
                        f"a real time within the run, or a run longer than {1 + CLOCK_RTOL:g}× the "
                        "Markov time (a real run still on the plateau then misses the criterion)",
                        bool(np.isfinite(t_real)),
                        f"real run on the plateau at T = {m['t_end']:g}, Markov time {m['t_escape_markov']:g}",
                    )
                ),
            )
            display.number(f"{c}_order_verdict", "holds" if ok_order else "does not hold")
            display.number(f"{c}_gap_verdict", "holds" if ok_gap else "does not hold")
            display.number(f"{c}_escape_verdict", "holds" if ok_escape else "does not hold")


def escape_time(t_real: float, t_markov: float, horizon: float, rtol: float = CLOCK_RTOL) -> tuple[float, bool]:
    """The real run's plateau-leaving time for the clock comparison, and whether it is censored.

    A real run that has not left the plateau by the end of the run (NaN) left it after
    ``horizon``: where the Markov run left by horizon / (1 + rtol), that lower bound already misses
    the criterion and enters as ``horizon`` (a decided "not within rtol", as a Markov run that has
    not left counts); otherwise the comparison is undecided (NaN: outside the claim's domain)."""
    if np.isfinite(t_real):
        return float(t_real), False
    decided = bool(np.isfinite(t_markov) and horizon > (1 + rtol) * t_markov)
    return (float(horizon) if decided else float("nan")), decided


def escape_due(rate: float, t_forecast: float, factor: float = DUE_FACTOR) -> float:
    """B10 "leaves the plateau": the time by which the run must have left, from its state at the end of
    condensation (``realtext.milestones``: rate r and forecast of the saddle's unstable attention mode).

    The forecast is R2's end of the θ_c¹ plateau, linear: the mode's loss drop ½ r a² grows tenfold
    every ln 10 / (2r), and its nonlinear end (attention saturating) delivers less, so the run must
    last ``factor`` decades of drop beyond the forecast. A run shorter than that is outside the
    claim's domain, decided before the escape is looked for. The clock is R2's, not the loss
    criterion's: measured from the end of condensation, the loss leaves after 0.9× (WikiText, book
    defaults: 96 vs 104) to 3.4× the forecast's time (Shakespeare, defaults: 203 vs 92; smoke
    WikiText seeds 1, 250983, 735707: 132, 152, 155 vs 60, 72, 136), through the slower growth of
    W0's second direction after the attention has moved (its Hessian rate at the first move,
    0.008–0.019, orders the smoke seeds). No forecast of that second stage is validated yet, so a
    run due here that is still on the plateau fails (a finding, not hidden)."""
    return float(t_forecast + factor * np.log(10) / (2 * rate)) if rate > 0 else float("inf")


def move_corr_min(level: float) -> float:
    """B11's floor on corr(first move, mode prediction): the move is read where the largest
    |lift − 1| reaches ``level`` (ℓ). The lift is a smooth function of the scores, so beyond the
    linear term the move carries terms of relative size O(ℓ); a vector within relative distance ℓ
    of another has correlation ≥ √(1 − ℓ²) with it (ℓ = 0.1: 0.9950)."""
    return float(np.sqrt(1.0 - level**2))


def measure(cfg) -> RealTextReport:
    """Seed, load every corpus, train the real and the Markov runs, and measure the milestones."""
    from attnflow import plotting, seeding

    seeding.seed_everything(cfg.seed)
    plotting.use_style()
    texts = {
        c: realtext.load_stream(c, cfg.vocab_size, source=cfg.source, max_chars=cfg.max_chars) for c in cfg.corpora
    }
    results = {
        c: realtext.train(
            text,
            seq_len=cfg.seq_len,
            n_train=cfg.n_train,
            n_eval=cfg.n_eval,
            steps=cfg.steps,
            lr=cfg.lr,
            optimizer=cfg.optimizer,
            record_every=cfg.record_every,
            init_scale=cfg.init_scale,
            d_model=cfg.d_model,
            smoothing=cfg.smoothing,
            seed=cfg.seed,
            device=cfg.device,
        )
        for c, text in texts.items()
    }
    marks = {c: realtext.milestones(res) for c, res in results.items()}
    groups = {"frequent": range(cfg.n_top), "mid": range(cfg.mid_ranks[0], cfg.mid_ranks[1] + 1)}
    first_lifts = {c: realtext.lifts_at(results[c], m["t_move"], (" ", "the"), groups["mid"]) for c, m in marks.items()}
    return RealTextReport(
        lr=cfg.lr,
        eps=cfg.init_scale,
        d=cfg.vocab_size,
        m=cfg.d_model,
        alpha=cfg.smoothing,
        mid_first=cfg.mid_ranks[0],
        mid_last=cfg.mid_ranks[1],
        cfg=cfg,
        texts=texts,
        results=results,
        marks=marks,
        first_lifts=first_lifts,
        groups=groups,
    )
