"""What readers take away (issue 25): download links that save the notebook."""

from __future__ import annotations

from attnflow_book.sphinx_download import add_download_attributes

# What sphinx-book-theme's render_link_button writes for a header button.
BUTTON = """<a href="../_notebooks/book/focus_dilution/escape.ipynb" target="_blank"
   class="btn btn-sm btn-download-ipynb-button"
   title="Download the executed notebook"
   data-bs-placement="bottom" data-bs-toggle="tooltip"
>"""
OTHER = '''<a href="https://github.com/x" target="_blank"
   class="btn btn-sm btn-repository-button"'''


def test_download_buttons_get_a_download_attribute_and_other_links_do_not():
    out = add_download_attributes(BUTTON + "\n" + OTHER)
    assert (
        '<a href="../_notebooks/book/focus_dilution/escape.ipynb" download\n'
        '   class="btn btn-sm btn-download-ipynb-button"' in out
    )
    assert OTHER in out  # the repository link is unchanged
    assert add_download_attributes(out) == out  # idempotent


def test_a_download_takes_its_outputs_from_the_jupyter_cache(tmp_path):
    """In cache mode the parser's notebook has no outputs; the executed one in the cache does
    (issue 25, item 1): the download is merged with it."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from attnflow_book.sphinx_download import with_cached_outputs

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"), nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    executed = nbformat.reads(nbformat.writes(nb), as_version=4)
    executed.cells[1].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
    executed.cells[1].execution_count = 1
    cache = tmp_path / "cache"
    get_cache(str(cache)).cache_notebook_bundle(CacheBundleIn(executed, uri="t.ipynb"), check_validity=False)
    page = tmp_path / "page.ipynb"
    nbformat.write(nb, page)
    assert with_cached_outputs(page, cache)
    assert nbformat.read(page, as_version=4).cells[1].outputs[0]["data"]["text/plain"] == "2"
    other = tmp_path / "other.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("2 + 2")]), other)
    assert not with_cached_outputs(other, cache)  # no cached twin: left without outputs
