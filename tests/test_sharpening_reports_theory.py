"""Page reports of the sharpening theory pages on small inputs: fields, domains, claims verdicts,
schema rules that refuse bad input before running, and the spec targets module."""

import json

import pytest

from attnflow import claims
from attnflow.sharpening import targets

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))

    def start(page):
        claims.begin_page(page)
        path = tmp_path / (page.replace("/", "__") + ".json")
        return lambda: {r["what"]: r for r in json.loads(path.read_text())["claims"]}

    return start


def cfg_of(schema, **values):
    return schema.validate(values)


# ---------------------------------------------------------------------------------------------- targets
def test_targets_hold_the_spec_tables():
    assert targets.REDUCED[(1.0, "FACO")].p_match == 0.9770
    assert targets.REDUCED[(10.0, "CACO")].odds_l2_end == 6.226
    assert targets.half_unit(3) == pytest.approx(5e-4)
    assert targets.is_reduced_config(9, 5, 0.1, 0.1) and not targets.is_reduced_config(10, 5, 0.1, 0.1)
    assert targets.is_full_config(n_classes=5, gd_lr=0.1) and not targets.is_full_config(gd_lr=0.3)
    assert targets.ORDER_R1 == ("FACO", "CACO", "FAFO", "CAFO")
