"""Slash commands: one registry that dispatches, autocompletes and explains.

A command is a name, a usage line, a sentence of help and a handler. The
input's autocomplete and `/help` both read this registry, so a command that
exists is a command that is documented. Commands the plane owns (`/limit`)
are registered too, with a handler that sends the text as typed: the plane
parses the value and answers in the conversation; this client never does.
Text starting with `/` that no entry claims also goes to the plane as typed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from textual.suggester import Suggester


class CommandContext(Protocol):
    """What a handler may do: the main screen implements it."""

    def send_to_plane(self, text: str) -> None: ...
    def show_local(self, text: str) -> None: ...
    def open_new_agent(self) -> None: ...
    def quit(self) -> None: ...


Handler = Callable[[CommandContext, str], Awaitable[None] | None]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    """Without the slash: `limit`."""
    usage: str
    help: str
    handler: Handler | None
    """None: the plane's command, sent exactly as typed."""


class Commands:
    """The registry. `register()` is a decorator for handlers."""

    def __init__(self) -> None:
        self._commands: dict[str, SlashCommand] = {}

    def register(self, name: str, usage: str, help: str) -> Callable[[Handler], Handler]:
        def decorate(handler: Handler) -> Handler:
            self._commands[name] = SlashCommand(name, usage, help, handler)
            return handler

        return decorate

    def plane_command(self, name: str, usage: str, help: str) -> None:
        """A command the plane handles: listed and completed here, sent as typed."""
        self._commands[name] = SlashCommand(name, usage, help, None)

    def __iter__(self) -> Iterator[SlashCommand]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def find(self, text: str) -> tuple[SlashCommand, str] | None:
        """The command `text` invokes and its argument text, or None."""
        if not text.startswith("/"):
            return None
        name, _, rest = text[1:].partition(" ")
        command = self._commands.get(name)
        return (command, rest.strip()) if command else None

    def completions(self, prefix: str) -> list[SlashCommand]:
        """Commands whose `/name` starts with `prefix` (itself starting with `/`)."""
        if not prefix.startswith("/") or " " in prefix:
            return []
        return [c for c in self if f"/{c.name}".startswith(prefix)]

    def help_text(self) -> str:
        width = max(len(c.usage) for c in self)
        return "\n".join(f"{c.usage:<{width}}  {c.help}" for c in self)

    async def dispatch(self, context: CommandContext, text: str) -> None:
        """Run what `text` asks for; plain text and unknown commands go to the plane."""
        found = self.find(text)
        if found is None:
            context.send_to_plane(text)
            return
        command, argument = found
        if command.handler is None:
            context.send_to_plane(text)
            return
        result = command.handler(context, argument)
        if result is not None:
            await result


class CommandSuggester(Suggester):
    """Inline autocomplete for the input, fed by the registry."""

    def __init__(self, commands: Commands) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self._commands = commands

    async def get_suggestion(self, value: str) -> str | None:
        matches = self._commands.completions(value)
        if not matches or len(value) < 2:
            return None
        command = matches[0]
        takes_argument = " " in command.usage
        return f"/{command.name}{' ' if takes_argument else ''}"


COMMANDS = Commands()


COMMANDS.plane_command(
    "limit", "/limit [amount|off]", "Show or set this agent's daily ceiling (the plane answers)."
)
COMMANDS.plane_command(
    "new", "/new", "Start a new session for the model; its history is saved (the plane does it)."
)


@COMMANDS.register("help", "/help", "List the commands.")
def _help(context: CommandContext, argument: str) -> None:
    context.show_local(COMMANDS.help_text())


@COMMANDS.register("new", "/new", "Create an agent (also ctrl+n).")
def _new(context: CommandContext, argument: str) -> None:
    context.open_new_agent()


@COMMANDS.register("quit", "/quit", "Close this window; the plane keeps running.")
def _quit(context: CommandContext, argument: str) -> None:
    context.quit()
