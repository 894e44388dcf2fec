"""A Python module piped in with no command is read as source from its first lines,
before any format's pattern is compiled; text that only opens like Python is not."""

from __future__ import annotations

import abc
import argparse
import ast
import base64
import bisect
import subprocess
import sys
from pathlib import Path

import pytest

from plane.economy.compress import sniff
from plane.economy.compress.classify import classify

FIXTURES = Path(__file__).parent / "fixtures"
# The patterns that score each format (the structural ones, diff and HTML, run first).
SCORES = ["_SEARCH_MATCH", "_DIAG", "_LISTING", "_LOG_START", "_BUILD", "_SOURCE", "_CONFIG"]
MODULES = [abc, argparse, ast, base64, bisect]  # scored `listing` by their patterns alone


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_a_module_of_the_standard_library_is_source(module: object) -> None:
    text = Path(str(getattr(module, "__file__", ""))).read_text(encoding="utf-8")
    assert classify(text) == "source"


def test_a_module_is_classified_before_any_format_pattern_compiles() -> None:
    """In a fresh process, as `plane compress` runs: the patterns that score each format
    stay uncompiled (compiling them was most of the classifier's cost)."""
    code = (
        "import argparse, pathlib\n"
        "from plane.economy.compress import sniff\n"
        "from plane.economy.compress.classify import classify\n"
        "print(classify(pathlib.Path(argparse.__file__).read_text()))\n"
        f"print([n for n in {SCORES!r} if 'search' in vars(getattr(sniff, n))])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kind, compiled = done.stdout.splitlines()
    assert kind == "source"
    assert compiled == "[]"


@pytest.mark.parametrize(
    "text",
    [
        # Python's import trace: every line opens with `import `
        (FIXTURES / "importtime.txt").read_text(encoding="utf-8"),
        # a README with Python in a fence
        "# Use\n```python\nimport os\nimport sys\nfrom a import b\ndef f():\n    pass\n```\n",
        # a session at the prompt
        ">>> import os\n>>> import sys\n>>> from a import b\n>>> def f():\n...     pass\n",
        # Java: its imports end with `;`
        "package a;\nimport java.util.List;\nimport java.util.Map;\nimport java.io.File;\n",
        # a list that names Python's statements
        "- import os\n- import sys\n- from a import b\n- def f(): pass\n",
        # two imports and prose
        "import os\nimport sys\nThis is not a module.\n",
    ],
    ids=["import-trace", "markdown", "repl", "java", "list", "two-imports"],
)
def test_text_that_only_opens_like_python_is_scored_as_before(text: str) -> None:
    assert not sniff.plainly_python(sniff.Sample(text))
