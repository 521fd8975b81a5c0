"""The parameter contract: unknown names, wrong types, out-of-range values give clear errors."""

import pytest

from attnflow import claims, params
from attnflow.params import DEFAULT_MAX_LEN, Param, ParameterError, Schema, validate

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


@pytest.mark.parametrize(
    "name,value,needle",
    [
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
    ],
)
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


def test_validate_starts_the_page_ledger_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path / "claims"))  # even with a claims folder set
    validate(dict(GOOD), SCHEMA)
    assert list(tmp_path.iterdir()) == []  # validation never writes a file
    assert claims.records() == [] and claims._state["page"] == "test/page"


def test_every_list_has_a_length_cap_and_long_values_are_not_echoed():
    with pytest.raises(ParameterError, match=f"list has {DEFAULT_MAX_LEN + 1} items") as e:
        validate(dict(GOOD, ratios=[1.0] * (DEFAULT_MAX_LEN + 1)), SCHEMA)
    assert f"a list of 1..{DEFAULT_MAX_LEN} items" in str(e.value)
    with pytest.raises(ParameterError) as e:
        validate(dict(GOOD, ratios=[1.0] * 20000), SCHEMA)
    assert len(str(e.value)) < 2000


def test_list_errors_name_the_item_and_a_scalar_for_a_list_says_so():
    with pytest.raises(ParameterError, match=r"item 1 \(-2.0\) below the allowed range"):
        validate(dict(GOOD, ratios=[1.0, -2.0]), SCHEMA)
    opt = Schema("t/o", optimizers=Param(list, choices=("adamw", "sgd"), item=str, doc="optimizers"))
    with pytest.raises(ParameterError) as e:
        validate({"optimizers": "adamw"}, opt)
    assert "expected a list (e.g. -p optimizers=['adamw'])" in str(e.value)
    assert "a list of 1..32 items, each one of 'adamw', 'sgd'" in str(e.value)
    with pytest.raises(ParameterError, match="item 1 \\('adam'\\) not one of the allowed choices"):
        validate({"optimizers": ["sgd", "adam"]}, opt)


def test_a_rule_that_cannot_be_evaluated_is_a_parameter_error():
    s = Schema("t/r", requires=[(lambda c: c.xs[3] > 0, "xs[3] > 0")], xs=Param(list, item=float))
    with pytest.raises(ParameterError, match="could not be evaluated: IndexError"):
        validate({"xs": [1.0]}, s)


COSTLY = Schema("t/cost", n=Param(int, 1, None, "size"), cost=(lambda c: 0.5 * c.n, "n half-seconds"))


def test_cost_warns_refuses_and_can_be_forced(monkeypatch, capsys):
    monkeypatch.delenv("ATTNFLOW_FORCE", raising=False)
    monkeypatch.delenv("ATTNFLOW_MAX_SECONDS", raising=False)
    assert COSTLY.estimate(validate({"n": 10}, COSTLY)) == 5.0
    assert capsys.readouterr().err == ""
    validate({"n": 2 * int(params.COST_WARN_S) + 2}, COSTLY)
    assert "estimated to run about" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="would run about 5.0 h on 2 CPUs \\(n half-seconds\\)"):
        validate({"n": 36000}, COSTLY)
    monkeypatch.setenv("ATTNFLOW_MAX_SECONDS", "2")
    with pytest.raises(ParameterError, match="above the limit of 2 s"):
        validate({"n": 10}, COSTLY)
    monkeypatch.setenv("ATTNFLOW_FORCE", "1")
    validate({"n": 10}, COSTLY)


def test_schema_checks_its_own_declaration():
    with pytest.raises(ValueError, match="cannot start with '_'"):
        Schema("t/x", _a=Param(int))
    with pytest.raises(TypeError, match="cost="):
        Schema("t/x", a=Param(int), cost=lambda c: 1)


def test_a_teacher_extends_a_schema_in_the_page():
    ext = SCHEMA.extend(noise=Param(float, 0, 1, "label noise"), requires=[(lambda c: c.noise < 0.5, "noise < 0.5")])
    cfg = validate(dict(GOOD, noise=0.1), ext)
    assert cfg.noise == 0.1 and cfg.page == "test/page" and "noise" not in SCHEMA.params
    with pytest.raises(ParameterError, match="noise < 0.5"):
        validate(dict(GOOD, noise=0.7), ext)
    with pytest.raises(ParameterError, match="d_h ≤ d"):  # the page's rules still hold
        validate(dict(GOOD, d=2, d_h=3, noise=0.1), ext)
    with pytest.raises(ValueError, match="already declares d"):
        SCHEMA.extend(d=Param(int))


def test_literal_names():
    assert params.literal_names("a = 1  # one\n\nb = [1, -2.5]  # x = y 'q'\nc: int = 3\n") == ["a", "b", "c"]
    assert params.literal_names("a = 1\nimport os\n") is None
    assert params.literal_names("a = f(1)\n") is None
    assert params.literal_names("a = (\n") is None


def _kernel_ns(history, **values):
    """A namespace as IPython's globals look: In (the cells run, the current one last), get_ipython."""
    return dict(values, In=[""] + history, Out={}, get_ipython=lambda: None)


PARAM_CELL = "d = 4\nd_h = 2\nlr_ratio = 3\nmodel = 'FAFO'\nratios = [1, 2.5]\nbatched = True\n"
VALIDATE_CELL = "cfg = params.validate(globals(), SCHEMA)"


def test_in_a_live_kernel_only_the_parameters_cell_counts():
    # a full run left page variables behind (literals among them); then cells 1-2 are re-run
    rest = ["import numpy as np", "MODEL_COLORS = {'a': 1}", "alpha = 0.5", "claims.finish()"]
    ns = _kernel_ns(
        [PARAM_CELL, VALIDATE_CELL, *rest, PARAM_CELL.replace("d = 4", "d = 5"), VALIDATE_CELL],
        MODEL_COLORS={"a": 1},
        alpha=0.5,
        drift=[0.1],
        **dict(GOOD, d=5),
    )
    assert validate(ns, SCHEMA).d == 5
    # papermill's injected cell follows the parameters cell: both count
    injected = "# Parameters\nd = 6\n"
    ns = _kernel_ns([PARAM_CELL, injected, VALIDATE_CELL], **dict(GOOD, d=6))
    assert validate(ns, SCHEMA).d == 6
    # a typo in the parameters cell is still an unknown parameter
    ns = _kernel_ns([PARAM_CELL + "lr_ratoi = 2\n", VALIDATE_CELL], lr_ratoi=2, **GOOD)
    with pytest.raises(ParameterError, match="unknown parameter.*'lr_ratoi'"):
        validate(ns, SCHEMA)
    # only the validation cell re-run after other cells: the declared names are used
    ns = _kernel_ns([PARAM_CELL, VALIDATE_CELL, "alpha = 0.5", "x = np.ones(3)", VALIDATE_CELL], alpha=0.5, **GOOD)
    assert validate(ns, SCHEMA).model == "FAFO"


def test_a_rule_violation_shows_the_values_it_names():
    s = Schema(
        "t/named",
        requires=[(lambda c: c.batch_size <= c.n_train, "batch_size ≤ n_train")],
        batch_size=Param(int),
        n_train=Param(int),
        seq_len=Param(int),
    )
    with pytest.raises(ParameterError) as e:
        validate({"batch_size": 5, "n_train": 3, "seq_len": 8}, s)
    assert str(e.value).endswith("received batch_size=5, n_train=3")


@pytest.mark.parametrize("raw", ["abc", "-5", "nan", "inf", ""])
def test_a_bad_cost_limit_is_refused_by_name(raw, monkeypatch):
    """ATTNFLOW_MAX_SECONDS that is not a positive number: a named ParameterError, not an internal error."""
    from attnflow import params as P

    monkeypatch.setenv("ATTNFLOW_MAX_SECONDS", raw)
    with pytest.raises(P.ParameterError, match="ATTNFLOW_MAX_SECONDS"):
        P.cost_limit()
    monkeypatch.setenv("ATTNFLOW_MAX_SECONDS", "60")
    assert P.cost_limit() == 60.0


def test_a_refused_value_removes_the_previous_runs_config():
    """After a validation error the old ``cfg`` stayed live in the kernel, so the next cells ran on
    the previous values (issue 25, item 10): it is removed and the error says so."""
    ns = dict(GOOD)
    ns["cfg"] = validate(dict(GOOD), SCHEMA)
    ns["other"] = validate({"x": 1}, Schema("test/other", x=Param(int)))  # another page's: kept
    ns["d"] = 99
    with pytest.raises(ParameterError, match=r"d.*99.*the previous run's `cfg` is removed"):
        validate(ns, SCHEMA)
    assert "cfg" not in ns and ns["other"].x == 1
    ns["d"] = 4
    assert validate(ns, SCHEMA).d == 4
