"""Page reports of the sharpening chapter: one module per page, each a function that measures
what the page shows and returns a typed :class:`attnflow.report.PageReport` (glue, figures,
claims with their domains)."""
