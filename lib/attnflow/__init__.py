"""attnflow: the library behind the attnflow book (two ICML 2026 papers on attention under
gradient flow). Pages are thin; every model, derivation, metric and plot style lives here.

Shared pieces: ``params`` (page parameter contract), ``claims`` (claims ledger), ``flow``
(gradient flow with adaptive solvers), ``train`` (discrete training with per-circuit learning
rates), ``seeding``, ``device``, ``plotting``, ``display``, ``runner``.
Paper parts: ``attnflow.sharpening`` and ``attnflow.focus_dilution``.
"""
__version__ = "0.1.0"
