"""Build hook: the wheel carries the book (pages, profiles, bibliography, stand-in data).

``pyproject.toml`` holds the metadata. This file only extends ``build_py`` so that a wheel built
from the repository (``pip wheel .``, ``python -m build``) holds ``attnflow/_book/`` with
``_toc.yml``, ``book/`` and ``data/`` (see ``attnflow.resources``); ``attnflow pages`` and
``attnflow run PAGE`` then work after ``pip install`` in any folder. Editable installs skip the
copy: they use the checkout itself.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BOOK_FILES = ("_toc.yml", "book", "data")  # = attnflow.resources.BOOK_FILES
SKIP = shutil.ignore_patterns("*.ipynb", "__pycache__", ".*", "_build", "*.pyc")


class build_py_with_book(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "attnflow" / "_book"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name in BOOK_FILES:
            src = HERE / name
            if not src.exists():
                raise SystemExit(f"setup.py: {src} is missing; the wheel must carry the book (attnflow.resources)")
            if src.is_dir():
                shutil.copytree(src, dest / name, ignore=SKIP)
            else:
                shutil.copy2(src, dest / name)


setup(cmdclass={"build_py": build_py_with_book})
