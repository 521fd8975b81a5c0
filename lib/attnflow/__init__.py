"""attnflow: the library behind the attnflow book (two ICML 2026 papers on attention under
gradient flow). Pages are thin; every model, derivation, metric and plot style lives here.

Layers (each imports only the layers above it; ``tests/test_architecture.py`` checks the import
graph, including function-local imports: no cycle, no paper imports the other paper, no core
module imports a paper):

**base**, the page contract every page and report uses:
``params`` (the parameters cell and its schema: types, ranges, rules, cost), ``claims`` (the claims
ledger: ``check``, ``check_mean``, domains, verdicts), ``stats`` (t intervals over seeds),
``display`` (glue, equations, tables), ``exercises`` (nbgrader-style exercises), ``seeding`` (the
seeding policy: one generator stream per role), ``record`` (``Run``: the one record every flow and training returns),
``device`` (CPU/CUDA, precision), ``progress`` (progress bars), ``resources`` (where the book's
files are), ``costs`` (the measured per-step rates behind every page's run-cost estimate).

**numerics**, shared computation: ``flow`` (gradient flow with adaptive solvers), ``train``
(discrete training with per-circuit learning rates), ``sweep`` (many models trained as one batched
computation), ``plotting`` (the book's plot style), ``data`` (real datasets and their offline
stand-ins).

**papers**, one package each, never importing the other: ``attnflow.sharpening`` (Vashisht &
Ramaswamy) and ``attnflow.focus_dilution`` (Chen, Lin, Xu, Luo): model, data, theory, measures,
experiments, page reports, schemas and spec targets.

**tooling**, what runs and publishes pages (imports no paper: a page is found by its path, its
schema through the page's own validation cell): ``runner`` (``attnflow run``: resolve, pre-validate,
execute, save), ``cli`` and ``cli_sweep``, ``cli_export`` (the ``attnflow`` command), ``parallel``
(sweeps and book execution on Dask), ``atlas`` (where the claims hold, from random sweeps),
``export`` (notebooks that open anywhere). The book's Sphinx extensions are the separate package
``attnflow_book`` (the ``book`` extra), which this package never imports.
"""

__version__ = "0.1.0"
