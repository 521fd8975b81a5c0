"""``attnflow params PAGE`` and the run folders of the console entry point (issue 25)."""

from __future__ import annotations

from attnflow import cli, cli_export, runner

PAGE = "sharpening/lemma1_rescaling"


def test_params_prints_names_types_ranges_defaults_and_profiles(capsys):
    assert cli_export.main(["params", PAGE]) == 0
    out = capsys.readouterr().out
    line = next(i for i, t in enumerate(out.splitlines()) if t.strip().startswith("lr_qk:"))
    lr = out.splitlines()[line : line + 2]
    assert "(0.0, 100.0]" in lr[0] and "type float" in lr[1] and "default 1.0" in lr[1]
    t_max = next(t for t in out.splitlines() if "default 20.0" in t and "smoke" in t)
    assert "smoke 2.0" in t_max and "paper 20.0" in t_max
    assert "profile smoke: t_max=2.0, n_times=20" in out


def test_params_unknown_page_is_one_line_on_stderr(capsys):
    assert cli_export.main(["params", "no/such_page"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "no/such_page" in captured.err


def test_run_folder_is_the_runners_per_variant_folder(tmp_path, monkeypatch):
    """The entry point adds no --output of its own (it named the folder after the first word);
    the runner's folder is runs/<page> for the defaults, runs/<page>-<hash> per variant."""
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(cli_export, "prepare_installed", lambda: tmp_path / "site-packages" / "attnflow" / "_book")
    monkeypatch.setattr(cli, "main", lambda argv: seen.append(list(argv)) or 0)
    argv = ["run", PAGE, "--profile", "smoke", "-p", "lr_qk=0.5"]
    assert cli_export.main(argv) == 0 and seen == [argv]

    root = runner.book_root()
    folder = runner.output_folder
    smoke = runner.load_profile("smoke", PAGE, root)
    base = folder(None, root, PAGE)
    assert base == tmp_path / "runs" / "sharpening__lemma1_rescaling"
    variants = [
        folder(None, root, PAGE, smoke),
        folder(None, root, PAGE, {**smoke, "lr_qk": 0.5}),
        folder(None, root, PAGE, {"lr_qk": 0.5}),
        folder(None, root, PAGE, {"lr_qk": 0.25}),
    ]
    assert len(set(variants)) == 4 and base not in variants
    for v in variants:
        assert v.parent == base.parent and v.name.startswith(base.name + "-")
        assert len(v.name) == len(base.name) + 9 and int(v.name[-8:], 16) >= 0
    # the same values in another order: the same folder
    assert folder(None, root, PAGE, {"n_times": 20, "t_max": 2.0}) == folder(None, root, PAGE, smoke)
