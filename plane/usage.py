"""A command line said wrong, in one line: argparse without the usage block.

Shared by the `plane` command's full parser and its light entry point for
the compression commands, which must not import the rest of the CLI."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

EXIT_USAGE = 2
"""The command line itself is wrong (argparse's code)."""

_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")
"""A word argparse reads as a negative number, not an option (as its own pattern)."""


def described(help: str) -> str:
    """A command's line in `plane --help` as the first line of its own
    `--help`: `run the plane …` → `Run the plane ….`"""
    return help[:1].upper() + help[1:] + ("" if help.endswith(".") else ".")


if TYPE_CHECKING:
    _Commands = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _Commands = argparse._SubParsersAction


class DescribedCommands(_Commands):
    """Subcommands whose own `--help` begins with their line in the list
    (`help=`), unless they are given a `description=` of their own: argparse
    shows the line only in the parent's list, and `plane send --help` began
    with its usage, nothing said of what it does."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if kwargs.get("help") and not kwargs.get("description"):
            kwargs["description"] = described(kwargs["help"])
        return super().add_parser(name, **kwargs)


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a bad command line said in one line (not the usage
    block), and each subcommand's `--help` beginning with what it does."""

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("action", DescribedCommands)
        return super().add_subparsers(**kwargs)

    _words: Sequence[str] = ()
    """What this parser was given to read, to explain what it refuses."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._words = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        for word in extras:
            if word == "--":
                break  # what follows is a value
            if word.startswith("-") and word != "-" and not _NEGATIVE.match(word):
                self._none_such("option", word.split("=", 1)[0], self._option_strings())
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A mistyped command is one line naming the nearest, where argparse
        listed every command."""
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            # `plane --tcpp x status`: the mistyped option left its value to be
            # read as the command; the option is what was said wrong.
            for word in self._unknown_options(before=value):
                self._none_such("option", word, self._option_strings())
            self._none_such("command", value, list(action.choices))
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):
            # `plane gateway env --clent x demo`: a mistyped option, not a
            # value taken for one, when an option is near it.
            for word in self._unknown_options():
                self._nearest_option(word)
            message += self._taken_for_an_option()
        self._refuse(f"{message} (see `{self.prog} --help`).")

    def _unknown_options(self, before: str | None = None) -> list[str]:
        """The names of the options given that this parser has none of
        (`--tcpp=x` as `--tcpp`), up to the word `before` or `--`."""
        unknown = []
        for word in self._words:
            if word in ("--", before):
                break
            name = word.split("=", 1)[0]
            if word.startswith("-") and word != "-" and not _NEGATIVE.match(word):
                if not any(o.startswith(name) for o in self._option_strings()):
                    unknown.append(name)
        return unknown

    def _nearest_option(self, word: str) -> None:
        """Refuse `word` as a mistyped option if one is near it."""
        import difflib

        if difflib.get_close_matches(word, self._option_strings(), n=1):
            self._none_such("option", word, self._option_strings())

    def _none_such(self, kind: str, word: str, known: list[str]) -> NoReturn:
        """`no command 'stauts' (did you mean status?)`: the nearest name, else
        where the names are."""
        import difflib  # here: only a wrong command line pays for it

        near = difflib.get_close_matches(word, known, n=1)
        hint = f"(did you mean {near[0]}?)" if near else f"(see `{self.prog} --help`)."
        self._refuse(f"no {kind} {word!r} {hint}")

    def _refuse(self, line: str) -> NoReturn:
        with contextlib.suppress(OSError):
            print(f"{self.prog}: {line}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)

    def _taken_for_an_option(self) -> str:
        """argparse reads a lone word that starts with `-` as an option, so
        `plane send demo -x` was "required: text" though a text was given:
        say which word was taken for an option, and how to give it as a value."""
        if "--" in self._words:
            return ""
        for word in self._words:
            name = word.split("=", 1)[0]
            if word.startswith("-") and not any(o.startswith(name) for o in self._option_strings()):
                return f" ({word!r} was read as an option: put `--` before a value starting '-')"
        return ""

    def _option_strings(self) -> list[str]:
        """Its options' names: a word one of them starts with is an option (abbreviated)."""
        return list(self._option_string_actions)
