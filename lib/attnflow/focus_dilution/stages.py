"""Stage detector of the focus–dilution cycle (claim B1; spec §6 time-line) — no hand-picked times.

    detected = stages.detect(t, loss, focus=low_hub_attention, rank=sigma2_W0)
    detected.stages  # [Stage("condensation", 0, 91), Stage("plateau", 91, 1640), Stage("focus", …), …]
    stages.shade(ax, detected)

Three signals, three rules; each threshold is an amplitude, never a time:

1. **Loss transitions.** The loss is resampled on a uniform grid in log t and its speed
   v = −dL/d log t computed (the stages live on time scales from 10 to 10⁴, so log time puts
   them on one footing). Each local maximum of v above ``peak_frac``·max v, highest first, is a
   transition, extended on both sides until v falls below ``edge_frac`` × its own peak (or meets
   a transition already found, with which it merges); transitions that drop the loss by
   less than ``min_drop`` × (total drop) are noise. Everything between transitions is a plateau.
   The first transition ends **condensation** (which starts at t₀: the linear growth from the
   origin is invisible in the loss until its end).
2. **Focus / dilution.** ``focus`` holds signals that rise when attention concentrates on the
   frequent token and fall when it spreads (the pages pass the hub attention and the attention
   of low-frequency queries to the hub). Their swings — alternating extrema at least
   ``min_swing`` apart (a zig-zag filter) — are **focus** (rising) and **dilution** (falling),
   counted where the signal moves: speed |dy/d log t| ≥ ``swing_edge`` × the swing's peak speed.
3. **Escape.** ``rank`` is σ₂(W0) (or any signal of a new embedding direction). A rise of
   log(rank) by at least log(``min_rank_factor``) is an **escape**, from where log(rank) starts to
   move (same speed rule) to the end of the loss transition it triggers. Where the rise starts
   while an earlier loss transition or attention swing is still under way, its start is hidden by
   that move: the escape is then the next loss transition the rise triggers (the dilution's own
   loss drop is not the escape's), and the θ_c² rest before it stays a plateau of the first cycle.

Labels are combined with priority condensation > dilution > focus > escape > plateau: the escape
lasts until attention moves again (the next cycle's focus), and it starts a new cycle.
``tests/test_stages.py`` recovers known boundaries of synthetic step curves.

**Causality (issue 21, DESIGN principle 9).** Run on a whole record, the detector places a boundary
with data after it, so a boundary read by a claim's domain would read a later state:

- the log-time grids (1024 points for the loss, 2048 for the swings) span the record to its last
  time: every located edge moves with the record's end;
- the loss speed is smoothed over 5 grid points centred (2 ahead) and differentiated centrally (1
  ahead); the focus signals are median-filtered over 5 stored samples centred (2 ahead); at a
  record's end both are one-sided or padded;
- a transition counts where its peak speed is ≥ ``peak_frac`` × the fastest loss speed of the record
  and its drop ≥ ``min_drop`` × the loss range of the record: a later, larger drop raises both bars;
- transitions are grown from the highest peak first and stop where they meet one already found, and
  adjacent ones merge: an early transition's end can be a later one's (condensation merged with the
  first focus ends after the focus);
- a transition's or swing's edges are where its speed falls below a share of its own peak speed,
  and a swing's end extremum is confirmed only when the signal turns back by ``min_swing``: the
  amplitude filter of the moves and the extent of the swing read the signal up to that turn;
- a rise meets the following fall at the extremum where the gap is short (the end of a focus is set
  by the next dilution's start);
- an escape exists only once σ₂ has grown ``min_rank_factor``-fold; its start is moved past a move
  under way and then to the start of the loss transition it triggers, later; and escapes that start
  before a stage renumber its cycle (a first dilution becomes cycle 2).

A domain therefore never reads a boundary of the whole-record detection. :func:`detect` with
``until=t`` locates the stages from the stored times ≤ t only, and :func:`decide` gives a boundary
decided causally: the first stored time at which the detector, reading the record up to that time
only, finds a stage over (its located end at least the detector's own look-ahead before: the
stencils above, :data:`DECISION_GRID` loss-grid steps or the median filter's half-width plus two
swing-grid steps). That time is the boundary a domain reads and a measurement starts from
(:func:`end_of_condensation`, :func:`end_of_dilution`); it is the same whatever follows it
(``tests/test_stages_causal.py``). The whole-record detection stays what measurements read (the
stage sequence of B1, the windows of the cycle page's measures).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "detect_runs",
    "MIN_SWING",
    "SecondCycle",
    "second_cycle",
    "escape_start",
    "Stage",
    "Stages",
    "detect",
    "detect_run",
    "Decision",
    "decide",
    "decide_run",
    "end_of_condensation",
    "end_of_dilution",
    "DECISION_GRID",
    "loss_transitions",
    "swings",
    "shade",
    "legend_handles",
    "STAGE_NAMES",
    "MISSING",
    "CYCLE_ORDER",
    "has_subsequence",
    "letters",
    "contains",
    "AFTER_CONDENSATION",
    "CycleMeasures",
    "cycle_measures",
    "seed_means",
    "stage_rows",
    "measure_rows",
]

STAGE_NAMES = ("condensation", "plateau", "focus", "dilution", "escape")
CYCLE_ORDER = ("condensation", "plateau", "focus", "dilution", "escape", "focus", "dilution")
"""The full cycle of claim B1: one cycle, the escape, and the next cycle's focus and dilution."""
AFTER_CONDENSATION = CYCLE_ORDER[1:]
"""B1's cycle measured from the end of condensation on (where its domains read their state)."""


def contains(wanted=CYCLE_ORDER):
    """The predicate "a stage sequence contains ``wanted`` in order" (for ``claims.check``)."""

    def test(names) -> bool:
        return has_subsequence(names, wanted)

    test.__name__ = f"contains {' → '.join(wanted)}"
    return test


_PRIORITY = {"plateau": 0, "escape": 1, "focus": 2, "dilution": 3}


@dataclass
class Stage:
    name: str  # one of STAGE_NAMES
    start: float
    end: float
    cycle: int  # 1 for the first focus–dilution cycle, +1 after each escape
    level: float  # median loss over the stage (the plateau level for plateaus)


MISSING = Stage("missing", float("nan"), float("nan"), 0, float("nan"))
"""Stands in for a stage the detector did not find: every time and level is NaN, so a measurement
taken at it is NaN (and a claim on it fails or is outside its domain, never silently passes)."""


def has_subsequence(names, wanted=CYCLE_ORDER) -> bool:
    """True when ``wanted`` occurs in ``names`` in order (other stages may come in between)."""
    it = iter(names)
    return all(any(n == w for n in it) for w in wanted)


def letters(names) -> str:
    """Stage names as initials: ``["condensation", "plateau"]`` → ``"C P"``."""
    return " ".join(n[0].upper() for n in names)


@dataclass
class Stages:
    """Detected stages plus the raw detections they were built from."""

    stages: list[Stage]
    transitions: list[tuple[float, float]]  # loss transitions (start, end)
    focus_swings: list[tuple[float, float, int]] = field(default_factory=list)  # (start, end, ±1)
    rank_swings: list[tuple[float, float, int]] = field(default_factory=list)

    def names(self, after: float | None = None) -> list[str]:
        """Stage names in order; with ``after``, only the stages that end after that time (the sequence a
        claim measures from ``after`` on, e.g. from the end of condensation)."""
        return [s.name for s in self.stages if after is None or s.end > after]

    def find(self, name: str, cycle: int | None = None) -> list[Stage]:
        return [s for s in self.stages if s.name == name and (cycle is None or s.cycle == cycle)]

    def first(self, name: str, cycle: int | None = None) -> Stage | None:
        found = self.find(name, cycle)
        return found[0] if found else None

    def get(self, name: str, cycle: int | None = None, after: float | None = None) -> Stage:
        """The first stage ``name`` (of ``cycle``; starting after time ``after``), or :data:`MISSING`."""
        found = [s for s in self.find(name, cycle) if after is None or s.start > after]
        return found[0] if found else MISSING

    def has_cycle(self, wanted=CYCLE_ORDER, after: float | None = None) -> bool:
        """Whether the detected sequence (of the stages that end after ``after``) contains ``wanted`` in
        order (claim B1)."""
        return has_subsequence(self.names(after), wanted)

    def letters(self) -> str:
        return letters(self.names())

    def table(self) -> list[dict]:
        return [dict(stage=s.name, cycle=s.cycle, start=s.start, end=s.end, loss=s.level) for s in self.stages]


def _check(t, y, name: str) -> tuple[np.ndarray, np.ndarray]:
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    if t.ndim != 1 or y.shape != t.shape:
        raise ValueError(f"{name}: expected 1-D arrays of equal length, received t {t.shape} and {name} {y.shape}")
    if len(t) < 5:
        raise ValueError(f"{name}: {len(t)} stored times; need at least 5 to find stages")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        raise ValueError(f"{name}: non-finite values (NaN or inf); allowed: finite numbers (did training diverge?)")
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"{name}: times must be strictly increasing")
    return t, y


def loss_transitions(
    t,
    loss,
    *,
    peak_frac: float = 0.02,
    edge_frac: float = 0.05,
    min_drop: float = 0.02,
    n_grid: int = 1024,
    smooth: int = 5,
) -> list[tuple[float, float]]:
    """Intervals (start, end) where the loss falls (rule 1 of the module docstring)."""
    t, loss = _check(t, loss, "loss")
    u = _log_grid(t, n_grid)  # uniform grid in log t
    L = np.interp(np.exp(u), t, loss)
    v = -np.gradient(L, u)  # −dL/d log t
    if smooth > 1:
        v = np.convolve(v, np.ones(smooth) / smooth, mode="same")
    total = loss.max() - loss.min()
    if total <= 0 or v.max() <= 0:
        return []
    padded = np.concatenate([[-np.inf], v, [-np.inf]])
    peaks = np.flatnonzero((v >= padded[:-2]) & (v >= padded[2:]) & (v >= peak_frac * v.max()))
    free, found = np.ones(n_grid, bool), []
    for k in peaks[np.argsort(-v[peaks])]:  # highest peak first
        if not free[k]:
            continue  # inside a larger transition
        lo = hi = k
        while lo > 0 and free[lo - 1] and v[lo - 1] >= edge_frac * v[k]:
            lo -= 1
        while hi < n_grid - 1 and free[hi + 1] and v[hi + 1] >= edge_frac * v[k]:
            hi += 1
        free[lo : hi + 1] = False
        if L[lo] - L[hi] >= min_drop * total:  # else a wiggle: no transition
            found.append([lo, hi])
    found.sort()
    merged: list[list[int]] = []
    for lo, hi in found:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(float(np.exp(u[lo])), float(np.exp(u[hi]))) for lo, hi in merged]


def _log_grid(t: np.ndarray, n_grid: int) -> np.ndarray:
    """A uniform grid u in log t over the stored times t > 0."""
    pos = t[t > 0]
    if len(pos) < 5:
        raise ValueError("need at least 5 stored times t > 0 (speeds are taken in log time)")
    return np.linspace(np.log(pos[0]), np.log(t[-1]), n_grid)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) indices of the runs of True in a boolean array."""
    edges = np.diff(np.concatenate([[0], mask.astype(int), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


def swings(t, y, min_swing: float, *, edge_frac: float = 0.1, n_grid: int = 2048) -> list[tuple[float, float, int]]:
    """Rises (+1) and falls (−1) of y between alternating extrema at least ``min_swing`` apart
    (zig-zag filter), each reported where it actually moves: where its speed |dy/d log t| is at
    least ``edge_frac`` × the swing's peak speed (a rise with a pause gives two intervals). A rise
    turning straight into a fall (the gap shorter than both) meets it at the extremum."""
    t, y = _check(t, y, "signal")
    return [tuple(m) for moves in _swing_moves(t, y, min_swing, edge_frac, n_grid) for m in moves]


def _swing_moves(t, y, min_swing, edge_frac, n_grid) -> list[list[list]]:
    """Per swing, its moving intervals [start, end, sign] (see :func:`swings`)."""
    if not min_swing > 0:
        raise ValueError(f"min_swing = {min_swing!r}; allowed: a number > 0")
    lo_i = hi_i = cand = direction = 0  # running extrema before the first swing
    ext: list[int] = []  # confirmed extrema
    for i in range(1, len(y)):
        if direction == 0:
            lo_i, hi_i = (i if y[i] < y[lo_i] else lo_i), (i if y[i] > y[hi_i] else hi_i)
            if y[i] - y[lo_i] >= min_swing:
                ext, cand, direction = [lo_i], i, 1
            elif y[hi_i] - y[i] >= min_swing:
                ext, cand, direction = [hi_i], i, -1
        elif direction * (y[i] - y[cand]) > 0:
            cand = i  # the swing goes on
        elif direction * (y[cand] - y[i]) >= min_swing:
            ext.append(cand)  # reversal confirmed
            cand, direction = i, -direction
    if direction != 0:
        ext.append(cand)
    u = _log_grid(t, n_grid)
    tu, Y = np.exp(u), np.interp(np.exp(u), t, y)
    w = np.gradient(Y, u)  # dy/d log t
    per_swing = []
    for a, b in zip(ext[:-1], ext[1:]):
        sign = 1 if y[b] > y[a] else -1
        inside = (tu >= t[a]) & (tu <= t[b])
        speed = np.where(inside, sign * w, -np.inf)
        runs = _runs(speed >= edge_frac * speed.max()) if inside.sum() >= 2 else []
        moves = [[float(tu[i]), float(tu[j]), sign] for i, j in runs if abs(Y[j] - Y[i]) >= 0.1 * abs(y[b] - y[a])]
        per_swing.append(moves or [[float(t[a]), float(t[b]), sign]])
    for k, b in enumerate(ext[1:-1]):
        left, right = per_swing[k][-1], per_swing[k + 1][0]
        gap = right[0] - left[1]
        if left[1] <= t[b] <= right[0] and gap < min(left[1] - left[0], right[1] - right[0]):
            left[1] = right[0] = float(t[b])
    return per_swing


def median_filter(y: np.ndarray, width: int) -> np.ndarray:
    """Running median over ``width`` stored samples (odd; edges repeat the end values). It removes
    oscillations of a few samples — GD at the edge of stability flips attention every step, which
    a recording every k steps aliases — and leaves slower movements, and their timing, intact."""
    if width <= 1:
        return np.asarray(y, dtype=float)
    if width % 2 == 0:
        raise ValueError(f"smooth = {width!r}; allowed: an odd number of samples (1 = no smoothing)")
    h = width // 2
    padded = np.concatenate([np.full(h, y[0]), y, np.full(h, y[-1])])
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, width), axis=1)


MIN_SWING = 0.01  # smallest rise/fall of a focus signal that counts as focus/dilution (attention units; see detect)


def detect(
    t,
    loss,
    focus=None,
    rank=None,
    *,
    min_swing: float = MIN_SWING,
    min_rank_factor: float = 10.0,
    edge_frac: float = 0.05,
    swing_edge: float = 0.1,
    peak_frac: float = 0.02,
    min_drop: float = 0.02,
    smooth: int = 5,
    until: float | None = None,
) -> Stages:
    """Stages of one trajectory from its loss (T,), focus signal(s) and rank signal (T,) (module docstring).

    focus: one signal (T,) or several (a list, or a dict name -> (T,)): a rise of any is focus, a
        fall of any is dilution (dilution wins where they overlap). The pages pass the hub
        attention Σ_i π_i A_{i,hub} and the low-query hub attention (``training.low_hub_attention``):
        the first shows the second cycle's dilution, the second the first cycle's (spec R4).

    min_swing: smallest rise/fall of ``focus`` that counts (attention units; 0.01 ≫ the
        plateau wiggles of ~10⁻⁴ and < the first-cycle swing of ~0.02).
    min_rank_factor: smallest growth of ``rank`` that counts as a new direction (×10).
    smooth: running-median width (stored samples) applied to the focus signals first.
    until: locate the stages from the stored times t ≤ ``until`` only, as if the record ended there
        (nothing after it is read: the detection a domain may use at that time, issue 21).
    """
    if until is not None:
        t, loss, focus, rank = _prefix(until, t, loss, focus, rank)
    t, loss = _check(t, loss, "loss")
    if not min_rank_factor > 1:
        raise ValueError(f"min_rank_factor = {min_rank_factor!r}; allowed: a number > 1")
    trans = loss_transitions(t, loss, peak_frac=peak_frac, edge_frac=edge_frac, min_drop=min_drop)
    signals = _signal_list(focus)
    f_sw = sorted(
        s
        for y in signals
        for s in swings(t, median_filter(_check(t, y, "focus")[1], smooth), min_swing, edge_frac=swing_edge)
    )
    r_sw = []
    if rank is not None:
        r = _check(t, rank, "rank")[1]
        if np.any(r <= 0):
            raise ValueError("rank: the rank signal must be > 0 (it is compared on a log scale, e.g. σ₂(W0))")
        per_rise = _swing_moves(t, np.log(r), np.log(min_rank_factor), swing_edge, 2048)
        r_sw = [(m[0][0], m[-1][1], 1) for m in per_rise if m[0][2] > 0]  # one escape per rise
    t0, t1 = float(t[0]), float(t[-1])
    cond_end = trans[0][1] if trans else t0
    marks: list[tuple[float, float, str]] = []
    for a, b, sign in f_sw:
        marks.append((a, b, "focus" if sign > 0 else "dilution"))
    escapes = []
    for a, b, _ in r_sw:
        a0, a = a, _after_moves(a, [(s, e) for s, e in trans[1:]] + [(s, e) for s, e, _ in f_sw])
        after = [(s, e) for s, e in trans[1:] if e > a and s <= max(b, a)]  # the loss transition it triggers
        if a > a0 and after:  # the rise began under an earlier move: the escape is the transition it triggers
            a = max(a, after[0][0])
        elif a > a0:  # ... and triggers none within the record: the rise itself, from where it starts
            a = a0
        escapes.append((a, after[0][1] if after else max(a, b)))
        marks.append((a, escapes[-1][1], "escape"))
    cuts = sorted({t0, cond_end, t1, *[x for a, b, _ in marks for x in (a, b) if cond_end < x < t1]})
    pieces: list[list] = [["condensation", t0, cond_end]] if cond_end > t0 else []
    for a, b in zip(cuts[:-1], cuts[1:]):
        if b <= cond_end or b - a <= 1e-9 * (t1 - t0):
            continue
        mid = 0.5 * (a + b)
        name = max((m[2] for m in marks if m[0] <= mid <= m[1]), key=_PRIORITY.get, default="plateau")
        if pieces and pieces[-1][0] == name:
            pieces[-1][2] = b
        else:
            pieces.append([name, a, b])
    out = []
    for name, a, b in pieces:
        sel = (t >= a) & (t <= b)
        level = float(np.median(loss[sel])) if sel.any() else float(np.interp(0.5 * (a + b), t, loss))
        # the cycle counts escapes that began before this piece (an escape interrupted by a focus
        # is still one escape); an escape piece belongs to the cycle it ends
        cycle = 1 + sum(e0 < a - 1e-9 * (t1 - t0) for e0, _ in escapes)
        out.append(Stage(name, float(a), float(b), cycle, level))
    return Stages(out, trans, f_sw, r_sw)


def _signal_list(focus) -> list:
    """The focus signals of :func:`detect` as a list (one signal, a list or a dict name → signal)."""
    if focus is None:
        return []
    if isinstance(focus, dict):
        return list(focus.values())
    return list(focus) if isinstance(focus, (list, tuple)) else [focus]


def _prefix(until, t, loss, focus=None, rank=None):
    """The inputs of :func:`detect` restricted to the stored times t ≤ ``until`` (focus kept as one signal, a
    list or a dict)."""
    t = np.asarray(t, dtype=float)
    if not np.isfinite(until):
        raise ValueError(f"until = {until!r}; allowed: a finite time")
    k = int(np.searchsorted(t, until, side="right"))

    def cut(y):
        return None if y is None else np.asarray(y, dtype=float)[:k]

    if isinstance(focus, dict):
        focus = {name: cut(y) for name, y in focus.items()}
    elif isinstance(focus, (list, tuple)):
        focus = [cut(y) for y in focus]
    else:
        focus = cut(focus)
    return t[:k], cut(loss), focus, cut(rank)


def _after_moves(a: float, moves: list[tuple[float, float]]) -> float:
    """The first time ≥ ``a`` outside every interval of ``moves`` that contains it (where a move under way at
    ``a`` — a loss transition or an attention swing — ends)."""
    moved = True
    while moved:
        moved = False
        for s, e in moves:
            if s <= a < e:
                a, moved = e, True
    return a


def legend_handles():
    """Patches for a figure legend of the stage colours."""
    from matplotlib.patches import Patch

    from attnflow.plotting import STAGE_COLORS

    return [Patch(facecolor=STAGE_COLORS[n], edgecolor="0.6", label=n) for n in STAGE_NAMES]


def shade(ax, detected: Stages, *, labels: bool = True, min_label_width: float = 0.03, alpha: float = 1.0) -> None:
    """Shade each detected stage behind the curves of ``ax`` (``plotting.shade_stages``, clipped to the
    view: call after plotting) and write its initial (C, P, F, D, E, with the cycle for F, D) at the top
    where the span is wide enough to read."""
    from attnflow.plotting import shade_stages

    spans = [
        (s.name, s.start, s.end, s.name[0].upper() + (str(s.cycle) if s.name in ("focus", "dilution") else ""))
        for s in detected.stages
    ]
    shade_stages(ax, spans, clip=True, labels=labels, min_label_width=min_label_width, alpha=alpha)


def signals(run) -> dict[str, np.ndarray]:
    """The detector's inputs for a population flow (``runs.FlowRun``) or a trained run
    (``training.TrainRun``): the loss the run descends (training loss for a trained run), the
    hub attention and the low-query hub attention (measured on the training contexts for a trained
    run, on the population model for a flow) and σ₂(W0)."""
    from attnflow.focus_dilution.training import low_hub_attention

    quantities, chain = run.quantities, run.chain
    rank = np.maximum(quantities["sigma2"], 1e-12)  # width m = 1 has no σ₂: a constant floor, never an escape
    if getattr(run, "train_loss", None) is not None:
        return dict(loss=run.train_loss, hub=run.data_hub_attention, low_hub=run.data_low_hub_attention, rank=rank)
    return dict(
        loss=quantities["loss"],
        hub=quantities["hub_attention"],
        low_hub=low_hub_attention(quantities["A"], chain.pi, chain.hub),
        rank=rank,
    )


def detect_run(run, until: float | None = None, **kw) -> Stages:
    """:func:`detect` on a flow or a trained run, with the signals of :func:`signals` (``until``: from the stored
    times ≤ ``until`` only)."""
    inputs = signals(run)
    return detect(
        run.t, inputs["loss"], focus=[inputs["hub"], inputs["low_hub"]], rank=inputs["rank"], until=until, **kw
    )


# ----------------------------------------------------------------------------- boundaries decided causally
DECISION_GRID = 4
"""Loss-grid steps a transition's located end must lie before the record's end to be final: the speed one step
past the end must be clear of the record's end, and it reads the centred smoothing (2 steps ahead) of the central
difference (1 step ahead)."""
_SWING_GRID_STEPS = 2  # the swing speed one step past a move's end reads one more grid point (central difference)
_LOSS_GRID, _SWING_GRID = 1024, 2048  # the grids of loss_transitions and swings (their n_grid defaults)
MOVES = ("focus", "dilution")


@dataclass
class Decision:
    """A stage boundary decided causally (:func:`decide`): ``t`` is the first stored time at which the detector,
    reading the record up to ``t`` only, finds ``stage`` over (NaN: not within the record, or not before
    ``until``); ``stage`` the stage as located then (:data:`MISSING` when never); ``stages`` the detection on the
    stored times ≤ ``t`` (None when never); ``until`` the last stored time searched."""

    t: float
    stage: Stage
    stages: Stages | None
    until: float

    @property
    def found(self) -> bool:
        return bool(np.isfinite(self.t))

    @property
    def time(self) -> float | None:
        """``t`` where decided, None where not (a claim's ``measured_from``)."""
        return float(self.t) if self.found else None

    def letters(self) -> str:
        """The stage sequence seen at the decision (initials; of the whole searched record when never decided)."""
        return self.stages.letters() if self.stages is not None else ""


def _settled_by(t: np.ndarray, name: str, smooth: int) -> float:
    """The latest end at which a stage ``name`` located on the stored times ``t`` (a record ending at t[-1]) is
    final, i.e. does not read the record's end: a move (focus, dilution) ``smooth // 2`` stored samples (the
    median filter's padding) and two swing-grid steps before it; any other stage (ended by a loss transition)
    :data:`DECISION_GRID` loss-grid steps before it."""
    pos = t[t > 0]
    span = np.log(t[-1]) - np.log(pos[0])
    if name in MOVES:
        h = max(smooth // 2, 0)
        if len(t) <= h + 1:
            return -np.inf
        return float(t[-1 - h] * np.exp(-_SWING_GRID_STEPS * span / (_SWING_GRID - 1)))
    return float(t[-1] * np.exp(-DECISION_GRID * span / (_LOSS_GRID - 1)))


def decide(t, loss, focus=None, rank=None, *, pick, moves: bool = False, until: float | None = None, **kw) -> Decision:
    """The first stored time τ at which ``pick(detect(..., until=τ))`` — the stage of interest as the detector
    places it from the record up to τ only — is a stage that is over: found (finite) and ending by
    :func:`_settled_by` (its end does not read the record's end). Nothing after τ is read, so the result is the
    same on any record that agrees up to τ (the boundary a domain may read at τ and a measurement may start from:
    module docstring, issue 21).

    pick: ``Stages → Stage`` (e.g. ``lambda st: st.get("dilution", 1)``); :data:`MISSING` while absent.
    moves: the picked stage is a focus or a dilution: the search starts where a focus signal's range first
        reaches ``min_swing`` (before that no swing, hence no such stage, can be detected), and a pick of
        another stage is refused.
    until: search the stored times ≤ ``until`` only. ``kw``: the detector's settings (:func:`detect`).
    """
    if until is not None:
        t, loss, focus, rank = _prefix(until, t, loss, focus, rank)
    t = np.asarray(t, dtype=float)
    smooth = kw.get("smooth", 5)
    pos = np.flatnonzero(t > 0)
    end = float(t[-1]) if len(t) else float("nan")
    if len(pos) < 5:
        return Decision(float("nan"), MISSING, None, end)
    first = int(pos[4])  # the detector needs 5 stored times > 0
    if moves:
        sigs = [np.asarray(y, dtype=float) for y in _signal_list(focus)]
        ranges = [np.maximum.accumulate(y) - np.minimum.accumulate(y) for y in sigs]
        reach = [np.flatnonzero(r >= kw.get("min_swing", MIN_SWING)) for r in ranges]
        reach = [r[0] for r in reach if len(r)]
        if not reach:
            return Decision(float("nan"), MISSING, None, end)
        first = max(first, min(reach))
    for k in range(first, len(t)):
        st = detect(t, loss, focus, rank, until=float(t[k]), **kw)
        sg = pick(st)
        if not np.isfinite(sg.end):
            continue
        if moves and sg.name not in MOVES:
            raise ValueError(f"decide(moves=True) picked a {sg.name!r} stage; moves is for {MOVES} only")
        if sg.end <= _settled_by(t[: k + 1], sg.name, smooth):
            return Decision(float(t[k]), sg, st, float(t[k]))
    return Decision(float("nan"), MISSING, None, end)


def decide_run(run, pick, *, moves: bool = False, until: float | None = None, **kw) -> Decision:
    """:func:`decide` on a flow or a trained run, with the signals of :func:`signals`."""
    inputs = signals(run)
    return decide(
        run.t,
        inputs["loss"],
        [inputs["hub"], inputs["low_hub"]],
        inputs["rank"],
        pick=pick,
        moves=moves,
        until=until,
        **kw,
    )


def _first_stage(st: Stages) -> Stage:
    return st.stages[0] if st.stages else MISSING


def end_of_condensation(run, until: float | None = None, **kw) -> Decision:
    """When condensation is over, decided causally (:func:`decide`): the first stored time at which the detector,
    reading the run up to then, has ended its first stage (the cycle page's t_cond, from which R5 forecasts)."""
    return decide_run(run, _first_stage, until=until, **kw)


def end_of_dilution(
    run, cycle: int | None = 1, *, after_focus: bool = False, until: float | None = None, **kw
) -> Decision:
    """When the first dilution is over, decided causally (:func:`decide`): the first stored time at which the
    detector, reading the run up to then, has ended it — the dilution of cycle ``cycle`` (``after_focus``: the
    first dilution after the first focus, whatever cycle it is counted in, as ``pca.first_focus_dilution``). The
    state at that time is θ_c² reached, as a domain may read it (R5's forecasts, the trap's window)."""

    def pick(st: Stages) -> Stage:
        if after_focus:
            f1 = st.get("focus")
            return st.get("dilution", after=f1.start) if np.isfinite(f1.start) else MISSING
        return st.get("dilution", cycle)

    return decide_run(run, pick, moves=True, until=until, **kw)


@dataclass
class SecondCycle:
    """The second focus–dilution cycle of a flow that escapes θ_c² (a run with asymmetry δ > 0).

    ``t_esc``: first stored time after ``after`` with σ₂(W0) > ``escaped_at`` (nan: no escape); the hub
    attention Σ_i π_i A_{i,hub} at the escape, at its largest after it (``hub_peak`` at ``t_hub_peak``)
    and its least after the peak; the attention entropy's least after the escape and its final value.
    ``pre_escape``: the stage the detector puts right before its first escape stage ending after
    ``after`` (``t_esc_start`` its start); ``from_plateau``: that stage is a plateau after a focus. Both are
    read from the detection of the run up to ``t_esc`` only (``detect_run(run, until=t_esc)``): the
    second-cycle claims are measured from ``t_esc``, and their domain reads these (issue 21)."""

    escaped: bool
    t_esc: float
    hub_at_esc: float
    hub_peak: float
    t_hub_peak: float
    hub_min_after: float
    ent_min: float
    ent_final: float
    L_end: float
    t_esc_start: float
    pre_escape: str
    from_plateau: bool
    hub_at: dict = field(default_factory=dict)

    @property
    def rise(self) -> float:
        """Hub-attention rise from the escape to its peak (focus 2)."""
        return self.hub_peak - self.hub_at_esc

    @property
    def fall(self) -> float:
        """Hub-attention fall from its peak to its least after it (dilution 2)."""
        return self.hub_peak - self.hub_min_after

    @property
    def ent_rise(self) -> float:
        """Attention-entropy rise from its least after the escape to the horizon."""
        return self.ent_final - self.ent_min


def escape_start(st: Stages, after: float) -> tuple[str, float, bool]:
    """Where a second cycle starts, from detected stages ``st``: (the stage right before the first escape
    stage ending after ``after``, that escape stage's start, whether the stage before is a plateau that
    follows a focus — the flow rested on θ_c²(δ) before σ₂(W0) grew); ("no escape detected", nan, False)."""
    for i, s in enumerate(st.stages):
        if s.name == "escape" and s.end > after:
            pre = st.stages[i - 1].name if i else "none"
            return pre, float(s.start), bool(pre == "plateau" and any(p.name == "focus" for p in st.stages[:i]))
    return "no escape detected", float("nan"), False


def second_cycle(run, after: float, escaped_at: float = 0.1, at: tuple = (), st: Stages | None = None) -> SecondCycle:
    """:class:`SecondCycle` of a flow ``run`` (quantities sigma2, hub_attention, attn_entropy, loss) past
    ``after`` (the onset of the first focus); ``at``: times at which to also read the hub attention
    (``hub_at[t]``, at the stored time closest to min(t, t_esc)); ``st``: its stages for :func:`escape_start`
    (default: :func:`detect_run` on the stored times ≤ t_esc, the whole run where it does not escape)."""
    q, t = run.quantities, run.t
    hub, ent = q["hub_attention"], q["attn_entropy"]
    out_mask = (t > after) & (q["sigma2"] > escaped_at)
    nan = float("nan")
    if st is None:
        st = detect_run(run, until=float(t[np.flatnonzero(out_mask)[0]]) if out_mask.any() else None)
    pre, t_start, from_plateau = escape_start(st, after)
    if not out_mask.any():
        blank = dict.fromkeys(["t_esc", "hub_at_esc", "hub_peak", "t_hub_peak", "hub_min_after", "ent_min"], nan)
        return SecondCycle(
            False,
            **blank,
            ent_final=nan,
            L_end=float(q["loss"][-1]),
            t_esc_start=t_start,
            pre_escape=pre,
            from_plateau=from_plateau,
            hub_at=dict.fromkeys(at, nan),
        )
    t_esc = float(t[np.flatnonzero(out_mask)[0]])
    i_esc = run.at(t_esc)
    sel = t >= t_esc
    k_peak = int(np.argmax(np.where(sel, hub, -1)))
    return SecondCycle(
        escaped=True,
        t_esc=t_esc,
        hub_at_esc=float(hub[i_esc]),
        hub_peak=float(hub[k_peak]),
        t_hub_peak=float(t[k_peak]),
        hub_min_after=float(hub[k_peak:].min()),
        ent_min=float(ent[sel].min()),
        ent_final=float(ent[-1]),
        L_end=float(q["loss"][-1]),
        t_esc_start=t_start,
        pre_escape=pre,
        from_plateau=from_plateau,
        hub_at={x: float(hub[run.at(min(x, t_esc))]) for x in at},
    )


# ----------------------------------------------------------------------------- the cycle read off one run
@dataclass
class CycleMeasures:
    """The stage measurements of one run (the cycle page's claims B1, B6, B7, B9, B14; :func:`cycle_measures`);
    NaN (``gainer`` −1) where the stage they are read at is missing."""

    has_cycle: bool  # the detected sequence contains CYCLE_ORDER
    letters: str  # the detected sequence as initials
    sign_frac: float  # B6: share of ΔA_ik over focus 1 with the sign of ∂κA_ik (entries above 1 % of the largest)
    hub_before: float  # hub attention at the start / end of focus 1
    hub_after: float
    gainer: int  # B6: token gaining most attention θ_c¹ → end of dilution 1 (−1: missing)
    da_hub: float  # B7: amplitude change of the hub, θ_c¹ → end of dilution 1
    da_low_max: float  # ... largest amplitude change of a low token
    peak: float  # B7: peak of the low-query hub attention over focus 1 + dilution 1
    after: float  # ... its value at the end of dilution 1
    s2_growth: float  # B9: σ₂(W0) at the run's end / at the end of dilution 1
    n_cycle2: int  # B9: focus/dilution stages of cycle 2
    L_c2: float  # B14: population loss at the end of the θ_c² plateau (the plateau after focus 1)

    @property
    def fall(self) -> float:
        """Fall of the low-query hub attention from its peak to the end of dilution 1."""
        return self.peak - self.after


def _read(run, y: np.ndarray, time: float) -> float:
    return float(y[run.at(time)]) if np.isfinite(time) else float("nan")


def cycle_measures(run, detected: Stages, chain, score_scale: float = 1.0) -> CycleMeasures:
    """Measure one run (the flow or a trained run: quantities A, amp, sigma2, loss) at the stages ``detected`` in
    it: R3's signs over focus 1 (``closed_forms.dkappa_A``), the token gaining most attention and the amplitude
    changes from θ_c¹ (end of plateau 1) to the end of dilution 1, the low-query hub attention's peak and value
    there, the growth of σ₂(W0) after dilution 1, the cycle-2 stages and the loss at the end of the θ_c² plateau."""
    from attnflow.focus_dilution import closed_forms

    nan = float("nan")
    focus1, dil1, plat1 = detected.get("focus", 1), detected.get("dilution", 1), detected.get("plateau", 1)
    plat2 = detected.get("plateau", 1, after=focus1.start) if np.isfinite(focus1.start) else MISSING
    sig, q, hub = signals(run), run.quantities, chain.hub
    low = np.arange(chain.d) != hub
    sign_frac = hub_before = hub_after = nan
    if np.isfinite(focus1.start):
        dA = q["A"][run.at(focus1.end)] - q["A"][run.at(focus1.start)]  # (d, d)
        pred = closed_forms.dkappa_A(chain, score_scale)
        big = np.abs(pred) > 0.01 * np.abs(pred).max()
        sign_frac = float(np.mean(np.sign(dA[big]) == np.sign(pred[big])))
        hub_before, hub_after = _read(run, sig["hub"], focus1.start), _read(run, sig["hub"], focus1.end)
    gainer, da_hub, da_low, peak, after, growth = -1, nan, nan, nan, nan, nan
    if np.isfinite(plat1.end) and np.isfinite(dil1.end):
        i1, i2 = run.at(plat1.end), run.at(dil1.end)  # θ_c¹ → end of dilution 1
        gainer = int(np.argmax(chain.pi @ (q["A"][i2] - q["A"][i1])))  # (d,) attention gained per key
        da = q["amp"][i2] - q["amp"][i1]
        da_hub, da_low = float(da[hub]), float(da[low].max())
        growth = float(q["sigma2"][-1] / q["sigma2"][i2])
    if np.isfinite(focus1.start) and np.isfinite(dil1.end):
        sel = (run.t >= focus1.start) & (run.t <= dil1.end)
        peak, after = float(sig["low_hub"][sel].max()), _read(run, sig["low_hub"], dil1.end)
    L_c2 = _read(run, q["loss"], plat2.end) if np.isfinite(plat2.end) else nan
    n2 = len([s for s in detected.stages if s.cycle == 2 and s.name in ("focus", "dilution")])
    return CycleMeasures(
        detected.has_cycle(),
        detected.letters(),
        sign_frac,
        hub_before,
        hub_after,
        gainer,
        da_hub,
        da_low,
        peak,
        after,
        growth,
        n2,
        L_c2,
    )


def seed_means(measures: list[CycleMeasures]) -> dict[str, float]:
    """The mean over runs of every float field of :class:`CycleMeasures` (over the runs where it is finite; NaN
    when none), ``has_cycle`` as the share of runs, ``n_cycle2`` its plain mean and ``gainer`` the token most runs
    name (−1: none)."""
    from attnflow.stats import finite_mean

    out = {
        name: finite_mean([getattr(m, name) for m in measures])
        for name in ("sign_frac", "hub_before", "hub_after", "da_hub", "da_low_max", "peak", "after", "s2_growth")
    }
    out["L_c2"] = finite_mean([m.L_c2 for m in measures])
    out["has_cycle"] = float(np.mean([m.has_cycle for m in measures]))
    out["n_cycle2"] = float(np.mean([m.n_cycle2 for m in measures]))
    named = [m.gainer for m in measures if m.gainer >= 0]
    out["gainer"] = int(max(set(named), key=named.count)) if named else -1
    return out


def stage_rows(runs: dict[str, Stages]) -> list[dict]:
    """One table row per detected stage of each named run (``{"flow": stages, ...}``), the run's name first."""
    return [dict(run=name, **row) for name, detected in runs.items() for row in detected.table()]


def measure_rows(labels: list[str], measures: list[CycleMeasures]) -> list[dict]:
    """One table row per run: its stages, whether they contain the full cycle, and the measurements of the claims."""
    return [
        dict(
            run=label,
            stages=m.letters,
            full_cycle=m.has_cycle,
            sign_frac=m.sign_frac,
            gainer=m.gainer,
            da_hub=m.da_hub,
            da_low_max=m.da_low_max,
            fall=m.fall,
            s2_growth=m.s2_growth,
            L_c2=m.L_c2,
        )
        for label, m in zip(labels, measures)
    ]


def detect_runs(runs):
    """:func:`detect_run` on every run of a dict (key → run; same keys) or a list (same order)."""
    if isinstance(runs, dict):
        return {k: detect_run(r) for k, r in runs.items()}
    return [detect_run(r) for r in runs]
