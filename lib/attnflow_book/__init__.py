"""The book's build tooling, apart from the science package ``attnflow`` (issue 22).

Sphinx extensions of the Jupyter Book build, listed in ``_config.yml``:

- ``sphinx_ext``: the claims ledger page, the errata findings, statement boxes, math and figure
  post-processing;
- ``sphinx_download``: the executed ``.ipynb`` (and exercise versions) behind each page's download
  button;
- ``sphinx_cache``: restores the claims records of pages served from the execution cache;
- ``sphinx_runs``: ``{attnflow-paper-runs}``, the recorded paper-profile runs.

They need the ``book`` extra (``pip install "attnflow[book]"``: Jupyter Book, myst-nb, Sphinx);
running a page or a downloaded notebook needs only ``attnflow``, which never imports this package.
"""
