"""The lines of a text that match a regular expression. Standard library only, on purpose.

`retrieve` with `grep` runs this file as a child process (`python -I -c <this file>
'<json>'`, the text handed over as an open descriptor), as `grep` runs scan.py: a
regular expression can backtrack for hours, and in a thread it would hold the
interpreter all that while (the plane's every agent and client with it); a
thread cannot be stopped, and a process can. `plane retrieve` from a shell
calls `matching` directly: there, Ctrl-C is the operator's.
"""

from __future__ import annotations

import json
import os
import re
import sys

MAX_LINES = 500


def matching(content: str, pattern: str) -> str:
    """Lines matching `pattern`, each with its 1-based line number."""
    regex = re.compile(pattern)
    found = [f"{n}:{line}" for n, line in enumerate(content.split("\n"), 1) if regex.search(line)]
    if not found:
        return f"No line matches {pattern!r}."
    if len(found) > MAX_LINES:
        more = len(found) - MAX_LINES
        found = [*found[:MAX_LINES], f"… {more} more matching lines; narrow the pattern."]
    return "\n".join(found)


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    with os.fdopen(request["fd"], "rb") as given:
        content = given.read().decode("utf-8", "surrogatepass")
    sys.stdout.buffer.write(matching(content, request["pattern"]).encode("utf-8", "replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
