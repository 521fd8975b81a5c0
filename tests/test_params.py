"""The parameter contract: unknown names, wrong types, out-of-range values give clear errors."""
import pytest

from attnflow import claims
from attnflow.params import Param, ParameterError, Schema, validate

SCHEMA = Schema(
    "test/page",
    requires=[(lambda c: c.d_h <= c.d, "d_h ≤ d")],
    d=Param(int, 2, 16, "embedding dimension"),
    d_h=Param(int, 1, 16, "head dimension"),
    lr_ratio=Param(float, 0.0, None, "r = η_QK/η_OV", lo_open=True),
    model=Param(str, choices=("CACO", "CAFO", "FACO", "FAFO"), doc="parametrization"),
    ratios=Param(list, 0.0, 100.0, "ratios to sweep", item=float, lo_open=True),
    batched=Param(bool, doc="train all models at once"),
)
GOOD = dict(d=4, d_h=2, lr_ratio=3, model="FAFO", ratios=[1, 2.5], batched=True)


@pytest.fixture(autouse=True)
def _claims_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))


def test_valid_values_are_converted():
    cfg = validate(dict(GOOD), SCHEMA)
    assert cfg.lr_ratio == 3.0 and isinstance(cfg.lr_ratio, float)
    assert cfg.ratios == [1.0, 2.5] and cfg.page == "test/page"


def test_kernel_names_modules_and_objects_are_ignored():
    import math

    ns = dict(GOOD, In=[], Out={}, _i1="x", math=math, SCHEMA=SCHEMA, get_ipython=print)
    validate(ns, SCHEMA)


@pytest.mark.parametrize("name,value,needle", [
    ("d", 1, "below the allowed range"),
    ("d", 2.5, "expected an integer"),
    ("d", True, "expected an integer"),
    ("lr_ratio", 0.0, "below the allowed range"),
    ("lr_ratio", float("nan"), "finite"),
    ("lr_ratio", "fast", "expected a number"),
    ("model", "CAXO", "allowed choices"),
    ("ratios", [], "list has 0 items"),
    ("ratios", [1.0, -2.0], "below the allowed range"),
    ("ratios", 3.0, "expected a list"),
    ("batched", 1, "True or False"),
])
def test_bad_values_name_parameter_value_and_allowed(name, value, needle):
    with pytest.raises(ParameterError) as e:
        validate(dict(GOOD, **{name: value}), SCHEMA)
    msg = str(e.value)
    assert repr(name) in msg.replace(f"{name}[1]", name) or name in msg
    assert needle in msg and "allowed" in msg and repr(value) in msg


def test_unknown_and_missing_names():
    with pytest.raises(ParameterError, match="unknown parameter.*'lr_ratoi'"):
        validate(dict(GOOD, lr_ratoi=2.0), SCHEMA)
    bad = dict(GOOD)
    del bad["model"]
    with pytest.raises(ParameterError, match="does not set parameter.*'model'"):
        validate(bad, SCHEMA)


def test_cross_parameter_rule():
    with pytest.raises(ParameterError, match="d_h ≤ d"):
        validate(dict(GOOD, d=2, d_h=3), SCHEMA)


def test_validate_starts_the_page_ledger(tmp_path):
    validate(dict(GOOD), SCHEMA)
    assert (tmp_path / "test__page.json").exists()
    assert claims.records() == []
