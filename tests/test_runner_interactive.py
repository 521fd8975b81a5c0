"""Interactive use (issue 12.3): after a full run, a reader changes a value and re-runs cells 1-2
in the same live kernel; nothing is written into the working folder."""

import json

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from attnflow import runner

PAGE = "sharpening/lemma1_rescaling"


@pytest.mark.notebook
def test_rerunning_the_first_two_cells_in_a_live_kernel_works(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNFLOW_CLAIMS_DIR", raising=False)
    _, path = runner.resolve_page(PAGE)
    page = jupytext.read(path)
    code = [c for c in page.cells if c.cell_type == "code"]
    later = [  # what the rest of a page leaves in the kernel: literals, arrays, modules
        "import numpy as np\nMODEL_COLORS = {'CACO': 'C0'}\nalpha = 0.5\ndrift = np.zeros(3)",
        "from attnflow import claims\nclaims.check('A2', 1.0, 1.0, atol=0.1, what='a check')",
        "print(json.dumps({'lr_qk': cfg.lr_qk, 'd': cfg.d}))",
    ]
    nb = nbformat.v4.new_notebook(cells=[code[0], code[1]] + [nbformat.v4.new_code_cell(s) for s in later])
    nb.cells[4].source = "import json\n" + nb.cells[4].source
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    work = tmp_path / "work"
    work.mkdir()
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work)}})
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):  # the full run
            client.execute_cell(cell, i)
        nb.cells[0].source = nb.cells[0].source.replace("lr_qk = 1.0", "lr_qk = 0.5")
        assert "lr_qk = 0.5" in nb.cells[0].source
        client.execute_cell(nb.cells[0], 0)  # the reader's change, then cells 1-2 again
        client.execute_cell(nb.cells[1], 1)
        client.execute_cell(nb.cells[4], 4)
        out = json.loads(nb.cells[4].outputs[-1]["text"].strip().splitlines()[-1])
        assert out == {"lr_qk": 0.5, "d": 4}
        nb.cells[0].source += "\nmy_value = 3  # not declared by the page's schema\n"
        client.execute_cell(nb.cells[0], 0)
        with pytest.raises(Exception, match="unknown parameter.*'my_value'"):
            client.execute_cell(nb.cells[1], 1)
    assert list(work.iterdir()) == []  # no _build/claims in the working folder
