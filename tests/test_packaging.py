"""The package layout: every source package is listed in pyproject.toml, so a
non-editable `pip install .` ships it (a missing entry only shows up there)."""
import os

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) reads pyproject.toml")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_package_folder_is_declared():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        tool = tomllib.load(f)["tool"]["setuptools"]
    declared = set(tool["packages"])
    mapping = tool["package-dir"]
    found = set()
    for package, folder in mapping.items():
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            if "__init__.py" in files:
                rel = os.path.relpath(dirpath, os.path.join(ROOT, folder))
                found.add(package if rel == "." else package + "." + rel.replace(os.sep, "."))
    # Subpackages of fusegrad/ that are themselves mapped elsewhere don't exist on disk there.
    assert found == declared
