"""Output folders: where a run writes, the test-write before the kernel starts, and the
rename-into-place of the notebook and the claims record (both or neither) at the end."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from attnflow.runner.errors import PageFailed, RunError


def output_folder(output: str | Path | None, root: Path, key: str, params: Mapping[str, Any] | None = None) -> Path:
    """``--output``, else ``runs/<page>`` in the current folder; a run with overrides gets its own
    ``runs/<page>-<hash of the values>`` so that variants of a page do not overwrite each other."""
    if output:
        return Path(os.path.abspath(Path(output).expanduser()))
    name = key.replace("/", "__")
    if params:
        blob = json.dumps(dict(params), sort_keys=True, default=repr).encode()
        name += "-" + hashlib.sha256(blob).hexdigest()[:8]
    return Path(os.path.abspath(Path.cwd() / "runs" / name))


def prepare_output(out_dir: Path, names: Sequence[str]) -> tuple[Path, list[Path]]:
    """Create (if needed) and test-write the output folder; returns the run's temporary folder
    inside it and the folders created here (removed again if nothing is kept)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise RunError(f"the output folder {out_dir} is a file, not a folder; pass --output DIR")
    created: list[Path] = []
    d = out_dir
    while not d.exists():
        created.append(d)
        d = d.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".attnflow-run-", dir=out_dir))
        probe = tmp / "write-test"
        probe.write_bytes(b"attnflow")
        probe.unlink()
    except OSError as err:
        remove_created(created)
        raise RunError(
            f"cannot write to the output folder {out_dir} ({err.strerror or err}); "
            "pass --output DIR with a writable folder"
        ) from None
    for n in names:
        if (out_dir / n).is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
            remove_created(created)
            raise RunError(f"a folder is in the way of the output file {out_dir / n}; remove it or pass --output DIR")
    return tmp, created


def remove_created(created: list[Path]) -> None:
    for d in created:  # deepest first; only empty folders
        with contextlib.suppress(OSError):
            d.rmdir()


def move_into_place(
    record: Path, nb_tmp: Path, final_claims: Path, final_nb: Path, key: str, out_dir: Path
) -> tuple[bool, bool]:
    """Rename the claims record and the notebook into place, one right after the other, or
    neither (PageFailed); an earlier run's file that this run did not produce is removed, so it
    cannot pose as this run's. Returns (claims kept, notebook kept)."""
    got_claims, got_nb = record.exists(), nb_tmp.exists()
    moved: list[Path] = []
    try:
        if got_claims:
            os.replace(record, final_claims)
            moved.append(final_claims)
        if got_nb:
            os.replace(nb_tmp, final_nb)
        for stale, fresh in ((final_claims, got_claims), (final_nb, got_nb)):
            if not fresh and (got_claims or got_nb) and stale.is_file():
                stale.unlink()
    except OSError as err:
        for m in moved:
            with contextlib.suppress(OSError):
                m.unlink()
        raise PageFailed(
            f"{key}: cannot save the results into {out_dir} ({err.strerror or err}); nothing was kept"
        ) from None
    return got_claims, got_nb
