"""Page reports of the focus–dilution chapter: one module per page, each a function that measures
what the page shows and returns a typed :class:`attnflow.report.PageReport` (glue, figures,
claims with their domains)."""

from attnflow.report import PageReport


class SpecGluedReport(PageReport):
    """A report whose page cites the spec's reference numbers: ``glue`` also glues every float of
    ``targets.SPEC`` as ``spec_<name>`` (one place for what condensation, unigram_saddle and focus share)."""

    def glue(self, prefix: str = ""):
        from attnflow import display
        from attnflow.focus_dilution.targets import SPEC

        out = super().glue(prefix)
        for name, value in SPEC.items():
            if isinstance(value, float):
                display.number(f"spec_{name}", value)
        return out
