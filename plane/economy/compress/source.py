"""Source code: signatures kept, long bodies elided, the result still parses.

An agent reading a file first needs its shape: imports, types, the signature
of every function and method. Bodies longer than a few lines are replaced by
one comment line (`...  # [… body, 40 lines ref:…]` in Python, `// […]` in
brace languages), so Python stays valid Python (checked with `ast`) and brace
languages keep balanced braces. Containers (classes, impl blocks, modules,
`describe(...)` suites) are entered, not elided, so their methods show.
"""

from __future__ import annotations

from plane.economy.compress import mixed, source_braces, source_python
from plane.economy.compress.plan import Plan


def compress(lines: list[str], command: str | None = None) -> Plan:
    if source_python.looks_python(lines, command):
        plan = source_python.compress(lines)
        return plan if plan is not None else mixed.compress(lines)
    return source_braces.compress(lines)
