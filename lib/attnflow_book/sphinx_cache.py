"""Sphinx side of the parallel book execution (:func:`attnflow.parallel.execute_pages`).

``make book`` first executes every page at its defaults in parallel and stores the executed
notebooks in myst-nb's jupyter-cache (``execute_notebooks: cache``) together with each page's
claims record and a content key (page source + library source). At ``builder-inited`` — after
``attnflow_book.sphinx_ext`` has emptied the claims folder of the previous build — this extension

- drops from the cache every page whose key no longer matches (a page or ``lib/`` changed since
  it was executed: jupyter-cache itself keys only on code cells, so a library change would
  otherwise serve stale outputs), and myst-nb then executes that page itself;
- copies the claims records of the pages served from the cache into the claims folder, so the
  ledger of this build lists every page exactly once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from attnflow_book.sphinx_ext import claims_folder


def _restore(app) -> None:
    from attnflow import parallel

    src = Path(app.srcdir)
    cache_path = getattr(app.config, "nb_execution_cache_path", "") or ""
    if app.config.nb_execution_mode != "cache" or not cache_path:
        return
    cache = Path(cache_path) if Path(cache_path).is_absolute() else src / cache_path
    manifest_path = cache / "attnflow-keys.json"
    if not manifest_path.exists():
        return
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    current = parallel.current_keys(root=src)
    out = claims_folder(app)
    out.mkdir(parents=True, exist_ok=True)
    stale = []
    for page, key in manifest.items():
        record = cache / "attnflow-claims" / (page.replace("/", "__") + ".json")
        if current.get(page) == key and record.exists():
            shutil.copy(record, out / record.name)
        else:
            stale.append(page)
    if stale:
        parallel.drop_from_cache(cache, stale, root=src)


def setup(app):
    app.connect("builder-inited", _restore, priority=900)  # after sphinx_ext empties the claims folder
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
