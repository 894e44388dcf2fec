"""Build and package output: every `Setting up …` kind of line folded, errors kept.

Package managers and build tools print one line per package or file with
the same verb (`Collecting`, `Downloading`, `Unpacking`, `Setting up`,
`Compiling`, `CC`, `[ 42%] Building`): those lines are one kind whatever the
name in them, so they fold by their verb, not only by their template. The
rest is treated as a log.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import template
from plane.economy.compress.formats import diagnostics, logs
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan

# `(?=(?>\S+) …)` reads the first word once: `\S+::\S+` alone backtracked over a line of
# colons in time growing with its square.
_VERB = lazy(
    r"^\s*(?:Collecting|Downloading|Using cached|Obtaining|Requirement already satisfied"
    r"|Installing collected packages|Successfully (?:installed|built|uninstalled)|Building wheel"
    r"|Created wheel|Stored in directory|Preparing metadata|Getting requirements|Attempting"
    r"|Found existing installation|Uninstalling|Looking in|Link requires|Skipping link"
    r"|Fetched|Get:\d+|Hit:\d+|Ign:\d+|Selecting previously unselected package|Preparing to unpack"
    r"|Unpacking|Setting up|Processing triggers for|Removing|Reading|Building dependency tree"
    r"|npm (?:http|info|verb|sill|timing)\b[^\n]*?(?= [^ ]*$)|Compiling|Checking|Linking"
    r"|\[ *\d+%\] (?:Building|Linking|Built)|(?:CC|CXX|LD|AR|AS|GEN)\s"
    r"|-- (?:Looking|Performing|Check|Detecting|Found)|Test +#\d+:|\d+/\d+ Test +#\d+:"
    r"|(?=(?>\S+) (?:PASSED|SKIPPED|XFAIL|XPASS))\S+::\S+ (?:PASSED|SKIPPED|XFAIL|XPASS)"
    r"|\S+ PASSED|test \S+ \.\.\. ok"
    r"|Adding|Copying|copying|creating|running|writing|byte-compiling|changing mode)"
)


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    diagnostics.fold_echo(plan)
    return logs.compress_plan(plan, verb_key)


def verb_key(line: str) -> str:
    """The verb of a package/build step line (its kind), else the line's template."""
    found = _VERB.match(line)
    if found:
        return "verb:" + template(found.group(0))
    return template(line)
