"""Source code: signatures kept, long bodies elided, the result still parses.

An agent reading a file first needs its shape: imports, types, the signature
of every function and method. Bodies longer than a few lines are replaced by
one comment line (`...  # [… body, 40 lines ref:…]` in Python, `// […]` in
brace languages), so Python stays valid Python (checked with `ast`) and brace
languages keep balanced braces. Containers (classes, impl blocks, modules,
`describe(...)` suites) are entered, not elided, so their methods show.
Python the parser rejects (a fragment, Python 2) is read as a document with
code in it, through the context: that reading never hands the same text back.
(The parser is asked only where the line scanner that reads Python's statements
is not sure: see source_python.)
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import source_python
from plane.economy.compress.plan import Plan


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    if source_python.looks_python(lines, context.command):
        plan = source_python.compress(lines)
        return plan if plan is not None else context.compress(lines, "mixed")
    from plane.economy.compress.formats import source_braces  # not loaded for Python

    return source_braces.compress(lines)
