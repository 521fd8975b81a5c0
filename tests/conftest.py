"""Test-wide settings: offline Hugging Face, headless plots, quiet progress bars; and the two test
tiers (issue 24).

Tiers. ``make test`` runs ``pytest -m "not tier2"``: every book page once as a smoke-profile
notebook (tests/test_pages.py) plus the unit, parity, property and schema tests, in about four
minutes on two cores. ``make test-tier2`` runs ``-m tier2``: everything else — the same pages on
other seeds and chains, export round trips and student notebooks, fault injection in demo kernels,
the browser, wheel and fresh-venv builds, Dask clusters and the slow parity tests. ``make test-all``
and ``.ci/run`` run both, each test once. No test file carries the ``tier2`` marker itself: the table
:data:`TIER2` below adds it at collection, so moving a test between tiers is a one-line change here
and no other test file has to change. ``slow`` (wheel / fresh venv) is kept as a label and implies
``tier2``. tests/test_tiers.py fails when the fast tier selects a slow or tier-2 test, when an
executable page of _toc.yml is not executed in the fast tier, or when a row of the table matches
no test any more (a renamed test would otherwise fall back into the fast tier).
"""

import json
import os
import re
from dataclasses import dataclass

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATTNFLOW_QUIET", "1")


import pytest  # noqa: E402


def pytest_configure(config):
    """Under pytest-xdist, each worker gets its share of the cores for torch, BLAS and the page
    kernels it starts (``OMP_NUM_THREADS`` is inherited): two workers with two threads each on two
    cores oversubscribe them, and OpenMP's spinning threads then slow small models many times over
    (the book's own policy, one core per page: attnflow.parallel.page_process)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return
    threads = str(max(1, (os.cpu_count() or 1) // int(workers)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, threads)
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


FAST_TIER = "not tier2"  # the -m expression of `make test` (tests/test_tiers.py reads the Makefile)


@dataclass(frozen=True)
class Tier2:
    """Tests that run in the second tier: ``file`` (tests/NAME.py), ``test`` (the function name,
    a regular expression matched in full, None for every test of the file), ``param`` (a regular
    expression searched in the parametrization id, None for all), ``why``."""

    file: str
    test: str | None
    param: str | None
    why: str

    def matches(self, item) -> bool:
        if item.path.name != self.file:
            return False
        if self.test is not None and not re.fullmatch(self.test, getattr(item, "originalname", item.name)):
            return False
        if self.param is not None:
            spec = getattr(item, "callspec", None)
            if spec is None or not re.search(self.param, spec.id):
                return False
        return True


TIER2 = [
    Tier2(
        "test_contributing.py",
        "test_the_grading_recipe_fails_on_a_check_added_after_finish",
        None,
        "teaching.md's grading recipe end to end: two papermill kernels on a tiny notebook "
        "(the library guard, test_claims::test_a_check_after_finish_fails_the_run, is tier 1)",
    ),
    # --- the book pages again, beyond the one smoke run per page of the fast tier ----------------
    Tier2(
        "test_pages.py",
        "test_page_smoke_runs_with_other_seeds",
        None,
        "robustness: each page again on other seeds (18 page kernels); the default-seed smoke run is tier 1",
    ),
    Tier2(
        "test_focus_pages.py",
        "test_theory_page_on_chains_far_from_the_reference",
        None,
        "robustness: three theory pages × four far chains / second seed set (12 page kernels)",
    ),
    Tier2(
        "test_focus_pages.py",
        "test_page_runs_with_a_random_valid_chain",
        None,
        "robustness: dilution and escape on a random chain (2 page kernels)",
    ),
    Tier2(
        "test_focus_reports_dilution_escape.py",
        "test_page_on_other_chains_and_seeds",
        None,
        "robustness: dilution and escape on far chains and a second seed set (8 page kernels)",
    ),
    Tier2(
        "test_stages_causal.py",
        "test_book_default_domain_boundaries_are_prefix_stable|test_other_hub_chains_and_seeds|"
        "test_dirichlet_chains|test_sampled_runs",
        None,
        "prefix stability of the stage boundaries domains read, on the book-default runs of four pages and on "
        "other chains, seeds and sampled data (~45 s); the synthetic records and the smoke flows are tier 1",
    ),
    Tier2(
        "test_export.py",
        "test_exported_page_runs_with_plain_papermill_in_an_empty_folder",
        None,
        "export round trip: a page run, exported, run again with plain papermill (2 × 2 kernels)",
    ),
    Tier2(
        "test_export.py",
        "test_sphinx_download_writes_notebooks_and_buttons",
        None,
        "export: builds a small Sphinx site",
    ),
    Tier2(
        "test_exercises.py",
        "test_real_student_notebook_stops_with_not_yet",
        None,
        "student notebook of a real page run under papermill (a page kernel)",
    ),
    Tier2(
        "test_runner_interactive.py",
        None,
        None,
        "a full page run, then cells re-run in the live kernel (a second run of lemma1)",
    ),
    Tier2(
        "test_runner.py",
        "test_a_valid_new_value_is_injected_and_recorded",
        None,
        "a second full run of lemma1 through the CLI (the smoke run of tier 1 covers the page; "
        "injection of -p values is also checked before any kernel by the exit-2 tests)",
    ),
    # --- fault injection in demo kernels -----------------------------------------------------------
    Tier2(
        "test_runner_faults.py",
        "test_a_failed_claim_keeps_notebook_and_record|"
        "test_a_page_that_raises_keeps_its_notebook_and_names_the_cell|"
        "test_a_full_disk_on_saving_says_so_and_leaves_nothing|"
        "test_a_signal_stops_the_kernel_and_leaves_no_files|"
        "test_a_finished_run_removes_the_kernel_socket_directory|"
        "test_a_cell_timeout_is_one_line_naming_the_cell_and_limit|"
        "test_heartbeat_names_the_cell_and_the_pages_progress_bar|"
        "test_a_teachers_parameter_and_claim_run_through_the_runner",
        None,
        "fault injection: one demo kernel each (raise, full disk, signals, timeout, heartbeat); "
        "the exit-2 checks before any kernel stay in tier 1",
    ),
    Tier2("test_runner_hub.py", None, None, "fault injection: a Hub that stalls, waited out to its deadline"),
    Tier2(
        "test_faults_sweep.py",
        None,
        None,
        "fault injection in sweeps and the atlas (issue 26): refused schedulers, interrupted sweeps, fake-page kernels",
    ),
    # --- builds, browsers, clusters ------------------------------------------------------------------
    Tier2(
        "test_browser.py",
        "test_no_console_errors|test_nothing_wider_than_its_column|test_page_never_pans_sideways|"
        "test_math_is_never_clipped|test_printed_output_wraps|test_math_typeset_and_no_raw_markup|"
        "test_minibook_statement_numbers_and_glue|test_no_word_of_a_book_table_is_broken_across_lines|"
        "test_text_is_readable_in_light_and_dark_mode",
        None,
        "browser: builds a mini-book and renders it in headless Chromium; the helpers' unit tests stay in tier 1",
    ),
    Tier2("test_wheel.py", None, None, "wheel build and fresh venv (also marked slow)"),
    Tier2(
        "test_parallel.py",
        "test_sweep_records_pass_outside_and_crash_and_resumes|"
        "test_sweep_against_a_separately_started_scheduler|test_cli_exit_codes|"
        "test_execute_pages_caches_and_reexecutes_when_the_library_changes|test_atlas_report_from_a_sweep_table|"
        "test_atlas_regenerate_keeps_one_table_per_page_without_stale_points|"
        "test_a_cluster_that_times_out_on_shutdown_loses_nothing|test_page_kernels_do_not_inherit_the_workers_malloc_trim",
        None,
        "Dask: a LocalCluster or a separately started scheduler, and fake-page kernels per point; "
        "sweep spaces and the build-only modules stay in tier 1",
    ),
    # --- slow unit and parity tests (issue 24: the twelve slowest, ≈ 95 s) ---------------------------
    Tier2(
        "test_focus_model.py",
        "test_the_sequence_loss_tends_to_the_population_loss",
        None,
        "slow limit: 20 000 sampled sequences of length 400 (≈ 17 s)",
    ),
    Tier2(
        "test_sweep.py",
        "test_batched_training_equals_looped_training",
        None,
        "slow parity: batched vs looped training, five optimizers (≈ 38 s); "
        "test_each_slice_is_torchs_optimizer_bit_for_bit keeps the batched optimizers in tier 1",
    ),
    Tier2(
        "test_focus_closed_forms.py",
        "test_sympy_identities_hold|test_unigram_saddle_sympy_identities",
        None,
        "slow symbolic: two sympy simplifications (≈ 13 s); the closed forms' numeric checks stay in tier 1",
    ),
]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marker must be there when it does
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is not None or any(row.matches(item) for row in TIER2):
            item.add_marker(pytest.mark.tier2)
    # what tests/test_tiers.py checks: every collected test (before deselection), its markers and
    # its `page` parameter, and which table rows matched
    config.stash[ALL_ITEMS] = [_describe(item) for item in items]
    config.stash[ROWS_MATCHED] = [any(row.matches(item) for item in items) for row in TIER2]


ALL_ITEMS = pytest.StashKey[list]()
ROWS_MATCHED = pytest.StashKey[list]()


def _describe(item) -> dict:
    spec = getattr(item, "callspec", None)
    page = spec.params.get("page") if spec is not None else None
    return {
        "nodeid": item.nodeid,
        "file": item.path.name,
        "markers": sorted({m.name for m in item.iter_markers()}),
        "page": page if isinstance(page, str) else None,
        "fixtures": sorted(getattr(item, "fixturenames", ())),
    }


def pytest_collection_finish(session):
    """``ATTNFLOW_TIER_REPORT=PATH``: write the collection (every test, its markers) to PATH as JSON
    (tests/test_tiers.py, when the session it runs in did not collect the whole suite)."""
    path = os.environ.get("ATTNFLOW_TIER_REPORT")
    if path and ALL_ITEMS in session.config.stash:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"items": session.config.stash[ALL_ITEMS], "rows_matched": session.config.stash[ROWS_MATCHED]}, f)


@pytest.fixture(scope="module")
def one_cpu_thread():
    """One torch and BLAS thread for a module of tiny models (``attnflow.device.single_threaded``)."""
    from attnflow.device import single_threaded

    with single_threaded():
        yield


@pytest.fixture
def ledger(tmp_path, monkeypatch, request):
    """A claims ledger of its own for one test: records go to ``tmp_path`` under a page named after
    the test module; yields ``claims.records`` (the records so far) and clears the page afterwards.
    Modules that need another shape (a factory, a dict by ``what``) define their own ``ledger``."""
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page(f"test/{request.module.__name__.rsplit('.', 1)[-1]}", {})
    yield claims.records
    claims._state.update(page=None, records=[], parameters={})


# --- focus–dilution fixtures shared by the training pages' tests ------------------------------------
@pytest.fixture(scope="module")
def chain():
    """The small hub chain of the training pages' tests (d = 6); a module may define its own."""
    from attnflow.focus_dilution.chain import hub_family

    return hub_family(4, 0.5, 0.3, 0.4, 0.1)


@pytest.fixture(scope="module")
def short_run(chain):
    """40 GD steps on the population rows of the module's ``chain``: condensation has not ended, no
    later stage exists."""
    from attnflow.focus_dilution import training

    return training.train_runs(
        [training.RunSpec(chain, training.population_examples(chain), "short")],
        steps=40,
        record_every=4,
        lr=1.0,
        dtype="float64",
    )[0]
