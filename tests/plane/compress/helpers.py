"""Shared helpers for the compression tests: the fixtures are real outputs made on this machine.

Each fixture under fixtures/ was produced by running the command named in
FIXTURES on a Debian machine with Python 3.11 (gcc, make, git, ls, ps, grep,
pip, pydoc): small, real, and ours.
"""

from __future__ import annotations

import random
from pathlib import Path

from plane.economy.compress import Compressed, compress, expand
from plane.economy.compress.plan import Plan

HERE = Path(__file__).parent / "fixtures"

FIXTURES = {
    "gcc.txt": "gcc -Wall -Wextra -c bad.c -o /dev/null",
    "make.txt": "make",
    "traceback.txt": "python3 -c 'def f(n): ...'",
    "importtime.txt": "python3 -X importtime -c 'import json, argparse'",
    "git_diff.txt": "git diff",
    "ls_l.txt": "ls -l /usr/bin | head -300",
    "ps.txt": "ps aux",
    "grep_n.txt": "grep -rn -C2 import /usr/lib/python3.11/json/*.py",
    "textwrap_py.txt": "cat /usr/lib/python3.11/textwrap.py",
    "pip_wheel.txt": "pip wheel -v --no-build-isolation --no-deps -w wh .",
    "pip_list.json.txt": "pip list --format=json | python3 -m json.tool",
    "files.csv.txt": "python3 walk_to_csv.py",
    "progress.txt": "python3 download.py",
    "pydoc_textwrap.html.txt": "python3 -m pydoc -w textwrap; cat textwrap.html",
    "readme.md.txt": "cat README.md",
    "debconf.conf.txt": "cat /etc/debconf.conf",
    "git_diff_repeated.txt": "git diff",
    "numpy_array.txt": "python -c 'import numpy as np; print(np.linspace(-3, 3, 240)…)'",
    "metadata.txt": (
        "cat site-packages/httpx-0.28.1.dist-info/METADATA"
        " site-packages/click-8.5.1.dist-info/METADATA 2>/dev/null | head -150"
    ),
    "book_js.txt": "head -n 100 book-a0b12cfe.js",
    "book_js_functions.txt": "sed -n '104,155p;348,357p' book-a0b12cfe.js",
    "botocore_service.json.txt": (
        "zcat botocore/data/marketplace-entitlement/2017-01-11/service-2.json.gz"
        " | python3 -m json.tool"
    ),
    "rustdoc_how_to_write.html.txt": "cat rustdoc/how-to-write-documentation.html",
    "man_find.txt": "man -P cat find | col -b | head -700",
    "rustc_imports.txt": (
        "rustc --edition 2021 --crate-type lib --emit=metadata -o /dev/null lib.rs"
    ),
    "gpp_macro_notes.txt": "g++ -std=c++17 -Wall -fsyntax-only -x c++ m.c",
    "dpkg_grep.txt": "grep -E ' (status|configure) ' /var/log/dpkg.log | tail -300",
    "shortlog.txt": "git shortlog -sne HEAD",
    "ruff_json.txt": (
        "ruff check --no-cache --isolated --select ALL --output-format json textwrap.py"
    ),
    "unittest_json.txt": "python -m unittest -v test.test_json",
    "ip_json.txt": "ip -j -p addr; ip -j -p route; ip -j -p link",
    "selector_attribute_js.txt": (
        "cat /usr/lib/node_modules/npm/node_modules/postcss-selector-parser/dist/selectors/"
        "attribute.js"
    ),
    "ruff_full.txt": (
        "ruff check --no-cache --isolated --select ALL --output-format full textwrap.py"
    ),
    "pip_inspect_meta.json.txt": (
        "pip inspect --local | python3 -c 'import json, sys; m = json.load(sys.stdin)"
        '["installed"][2]["metadata"]; print(json.dumps({k: m[k] for k in'
        ' ("name", "version", "summary", "description")}, indent=2))\''
    ),
    "pip_download_harness.json.txt": (
        'python3 -c \'import json, subprocess as s; r = s.run(["python", "-m", "pip",'
        ' "download", "--retries", "8", "--index-url", "http://127.0.0.1:9/simple",'
        ' "-d", "./pvd", "platformdirs", "requests"], capture_output=True, text=True);'
        ' print(json.dumps({"returncode": r.returncode, "stdout": r.stdout,'
        ' "stderr": r.stderr}, indent=2))\''
    ),
    "grep_self.txt": (
        'grep -rn "raise \\|self\\.[a-z_]* = " /usr/lib/python3.11/shlex.py'
        " /usr/lib/python3.11/netrc.py /usr/lib/python3.11/getopt.py"
    ),
    "python_defs.txt": (
        "grep -h '^    def ' /usr/lib/python3.11/shlex.py /usr/lib/python3.11/netrc.py"
        " /usr/lib/python3.11/textwrap.py /usr/lib/python3.11/getopt.py"
    ),
}


def fixture(name: str) -> str:
    return (HERE / name).read_bytes().decode("utf-8", "surrogateescape")


def run(name: str) -> tuple[str, Compressed]:
    text = fixture(name)
    return text, compress(text, command=FIXTURES[name])


def kept_lines(result: Compressed) -> list[str]:
    """The lines of a compressed text that are not markers."""
    return [line for line in result.text.split("\n") if "ref:k_" not in line]


def round_trips(text: str, result: Compressed) -> bool:
    return expand(result.text, result.refs.__getitem__) == text


def grep_defs() -> str:
    """`grep -rn 'def '` over the standard library's email package, run here:
    dozens of files, each with a few matches (search output past its budget)."""
    import email
    import subprocess

    tree = Path(email.__file__).parent
    done = subprocess.run(
        ["grep", "-rn", "--include=*.py", "def ", "."], cwd=tree, capture_output=True, text=True
    )
    return done.stdout


def random_folds(rng: random.Random, lines: list[str], starts: list[int], ends: list[int]) -> Plan:
    """One to three folds near the statements' edges (`starts`, `ends`: 0-based
    first lines and 1-based last lines), each off by a line now and then: the
    shapes a Python fold plan must prove or refuse."""
    plan = Plan(lines, comment="...  # ")
    for _ in range(rng.randint(1, 3)):
        a = rng.choice(starts) + rng.choice((0, 0, 0, -1, 1))
        b = rng.choice([e for e in ends if a < e <= a + 40] or [len(lines)])
        b += rng.choice((0, 0, 0, -1, 1))
        kind = rng.choice(("body", "comments", "docstring"))
        plan.fold(max(a, 0), min(b, len(lines)), kind, kind == "body")
    return plan
