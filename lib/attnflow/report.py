"""The page report (DESIGN.md, principle 10): a page's measurements as one typed result.

Each page calls one library function that measures everything the page shows and returns a
dataclass deriving from :class:`PageReport`. The page then reads as the story::

    rep = page_report(cfg)        # measurements, derived windows and tolerances
    rep.glue()                    # every scalar field glued under its own name for the prose
    rep.figures()                 # the page's figures (matplotlib), each with its provenance
    rep.check_claims()            # the claims with their domains and statistics

``glue`` glues every int/float/str/bool field (numpy scalars included); fields whose name starts
with ``_`` and non-scalar fields (arrays, runs) are not glued. Subclasses implement
``check_claims`` and usually ``figures``; reports are unit-tested on small inputs and reused by
the sweep/atlas, which reads ``claims`` records rather than the notebook.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from attnflow import display

__all__ = ["PageReport", "scalar_fields"]


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float, str, np.integer, np.floating, np.bool_))


def scalar_fields(obj: Any) -> dict[str, Any]:
    """Name -> value of the public scalar fields of a dataclass instance."""
    out = {}
    for f in dataclasses.fields(obj):
        if f.name.startswith("_"):
            continue
        v = getattr(obj, f.name)
        if _is_scalar(v):
            out[f.name] = v.item() if hasattr(v, "item") else v
    return out


class PageReport:
    """Base of the per-page reports; subclasses are dataclasses."""

    def glue(self, prefix: str = "") -> dict[str, Any]:
        """Glue every public scalar field as ``prefix + name``; returns what was glued."""
        values = scalar_fields(self)
        for name, value in values.items():
            display.number(prefix + name, value)
        return values

    def figures(self) -> list:
        """The page's figures; the default report has none."""
        return []

    def check_claims(self) -> None:  # pragma: no cover - every report overrides it
        raise NotImplementedError(f"{type(self).__name__} does not check claims")
