"""Page reports of the focus–dilution chapter: one module per page, each a function that measures
what the page shows and returns a typed :class:`attnflow.report.PageReport` (glue, figures,
claims with their domains)."""
