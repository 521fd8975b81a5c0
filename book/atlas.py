# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Where the claims hold
#
# Every theory page accepts a whole parameter space, and each of its claims states the part of that
# space where the theory predicts it (its *domain*). This page asks where the claims actually hold:
# each theory page was run at random points drawn from its sweep space (`book/sweeps.yml`: which
# parameters vary and over what range, always inside the page's schema; every drawn point is
# validated before it runs), and every claim of every run was recorded as passed, outside its
# domain, not reproduced (a documented disagreement with a paper), or failed.
#
# The table below is read from a committed sweep (`data/atlas/`), not re-run during the book build.
# To regenerate it on this machine, or unchanged on a Dask cluster
# (`dask scheduler` on one machine, `dask worker tcp://HOST:8786` on each of the others):
#
# ```bash
# python -m attnflow.atlas --draws 20 --profile book --workers 2
# python -m attnflow.atlas --draws 20 --scheduler tcp://HOST:8786
# ```
#
# One page at a time: `attnflow sweep focus_dilution/focus --random 20 --workers 2` (or
# `--grid a_h=0.3,0.5,0.7 --grid seed=1,2`); the result is a Parquet table with one row per claim
# check, and a re-run skips the points already done.

# %% tags=["parameters"]
atlas_dir = "../data/atlas"   # folder of the committed sweep table, relative to this page

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.atlas import ATLAS_SCHEMA
cfg = params.validate(globals(), ATLAS_SCHEMA)

# %%
from attnflow import atlas, plotting

plotting.use_style()
rep = atlas.atlas_report(cfg.atlas_dir)
rep.glue()
rep.page_table()

# %% [markdown]
# ## The sweep
#
# {glue:text}`n_points` runs of {glue:text}`n_pages` theory pages (at least {glue:text}`min_draws`
# random points each, profile {glue:text}`profile`), last regenerated on {glue:text}`date`; the
# commit at which each page ran is in the table's last column (`data/atlas/provenance.json` holds
# each page's commit, library hash, date and command: a page is regenerated on its own after a
# change to its domains). In {glue:text}`frac_clean:.1%` of the runs (95% Wilson interval
# {glue:text}`frac_clean_lo:.2f`–{glue:text}`frac_clean_hi:.2f`) every claim either passed or was
# outside its domain; {glue:text}`n_failed_points` runs had at least one failed claim and
# {glue:text}`n_error_points` raised. Each point is one run of its page at that profile: at the book
# profile 14–28 s (median per page) on one core of the shared 2-core machine.
#
# ## Where claims fail
#
# Each marker is one run, placed by two of the parameters that vary and coloured by its outcome.

# %%
figs = rep.figures()

# %% [markdown]
# The claims that failed or were not reproduced at least once, with the fraction of their checks in
# each verdict (an empty table means none did):

# %%
rep.failing_claims()

# %% [markdown]
# A claim that fails inside its stated domain is a finding about the reconstruction, not a tolerance
# to widen: each is discussed on the {doc}`errata` page. A claim that is often *outside* its domain
# says that the sweep space reaches regimes the theory does not describe (a plateau not reached by
# the horizon, a linear regime never entered); those runs are counted, never shown as passes.

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
