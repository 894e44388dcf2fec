"""A command line said wrong, in one line: argparse without the usage block.

Shared by the `plane` command's full parser and its light entry point for
the compression commands, which must not import the rest of the CLI."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import NoReturn

EXIT_USAGE = 2
"""The command line itself is wrong (argparse's code)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a bad command line said in one line (not the usage block)."""

    def error(self, message: str) -> NoReturn:
        with contextlib.suppress(OSError):
            print(f"{self.prog}: {message} (see `{self.prog} --help`).", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
