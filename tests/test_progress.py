"""Progress bars: quiet in tests and builds; under the runner they report to its status file."""

from attnflow import progress


def test_quiet_under_pytest():
    assert progress.quiet()
    bar = progress.progress(range(3))
    assert bar.disable and list(bar) == [0, 1, 2]


def test_under_the_runner_the_latest_line_goes_to_the_status_file(tmp_path, monkeypatch, capsys):
    status = tmp_path / "progress"
    monkeypatch.setenv(progress.FILE_ENV, str(status))
    seen = []
    for _ in progress.progress(range(50), desc="training", mininterval=0):
        seen.append(progress.read_status(status))
    line = seen[-1]
    assert line.startswith("training:") and "49/50" in line and "\n" not in line
    captured = capsys.readouterr()
    assert "training" not in captured.out + captured.err  # nothing in the notebook's streams


def test_the_status_writer_keeps_only_the_last_line(tmp_path):
    w = progress._StatusWriter(str(tmp_path / "s"))
    w.write("\rstep 1")
    w.write("\rstep 2\n")
    w.write("")
    assert progress.read_status(tmp_path / "s") == "step 2"
    assert progress.read_status(tmp_path / "missing") == ""
    w2 = progress._StatusWriter(str(tmp_path / "no" / "such" / "dir" / "s"))
    w2.write("x")  # best effort: never raises


def test_a_closed_bar_clears_the_status(tmp_path, monkeypatch):
    status = tmp_path / "progress"
    monkeypatch.setenv(progress.FILE_ENV, str(status))
    bar = progress.progress(range(5), desc="phase", mininterval=0)
    for _ in bar:
        pass
    assert progress.read_status(status) == ""  # leave=False: nothing stale for the next cell
