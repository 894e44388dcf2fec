"""What the compressor outputs, pinned: speeding it up must not change a byte.

`outputs.json` holds, for each fixture (and a few made long by repeating one, as
`bench/compress_cli.py` does), the sha256 of the compressed text and of its refs.
A change meant to alter what the compressor outputs updates it on purpose:

    .venv/bin/python -m tests.plane.compress.test_outputs_unchanged
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from plane.economy.compress import compress
from tests.plane.compress.helpers import FIXTURES, HERE

PINNED = Path(__file__).with_name("outputs.json")
LONG = {"importtime.txt": 100_000, "textwrap_py.txt": 100_000, "make.txt": 60_000}


def _inputs() -> dict[str, tuple[str, str | None]]:
    found: dict[str, tuple[str, str | None]] = {}
    for path in sorted(HERE.iterdir()):
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        found[path.name] = (text, FIXTURES.get(path.name))
        found[path.name + " without its command"] = (text, None)
    for name, size in LONG.items():
        text = (HERE / name).read_text()
        long = text * (size // len(text) + 1)
        found[f"{name} repeated to {size}"] = (long[: long.rfind("\n", 0, size) + 1], None)
    return found


def _digest(text: str, command: str | None) -> list[str]:
    result = compress(text, command=command)
    refs = json.dumps(result.refs, sort_keys=True)
    return [
        hashlib.sha256(part.encode("utf-8", "surrogatepass")).hexdigest()
        for part in (result.text, refs)
    ]


@pytest.mark.parametrize("name", sorted(_inputs()))
def test_output_is_what_it_was(name: str) -> None:
    text, command = _inputs()[name]
    assert _digest(text, command) == json.loads(PINNED.read_text())[name], name


if __name__ == "__main__":
    pinned = {name: _digest(text, command) for name, (text, command) in _inputs().items()}
    PINNED.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
    sys.exit(0)
