"""Slash commands: one registry that dispatches, autocompletes and explains.

The plane owns the commands: each snapshot carries its registry (name,
usage, help), loaded here with `load_plane()`, and what they mean is the
plane's — `/limit`, `/new` (a new model session) and the rest are sent
exactly as typed, and the plane answers in the conversation. This client adds
only names of its own that no plane command has (`/quit`), and `/help`,
which shows that same registry here instead of asking for it. Text starting
with `/` that no entry claims also goes to the plane as typed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from plane.wire.protocol import CommandInfo


class CommandContext(Protocol):
    """What a handler may do: the main screen implements it."""

    def send_to_plane(self, text: str) -> None: ...
    def show_local(self, text: str) -> None: ...
    def quit(self) -> None: ...


Handler = Callable[[CommandContext, str], Awaitable[None] | None]

KEYS = (
    "F1 (? in the list)",
    "the keys, and what the rows' marks mean: ○ idle, ● working, ■ held, ‖ paused, * unread",
)
"""`/help`'s last line: every mark the agent list draws (`tui.widgets.agent_list`'s
`GLYPHS` and `UNREAD`, which this module cannot import: the widgets import it)."""


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

    def load_plane(self, commands: Iterable[CommandInfo]) -> None:
        """Take the plane's registry (from a snapshot) in place of the last one.
        A client command keeps its name; a plane command by the same name is
        the plane's to show, so the client's entry describes it (`/help`)."""
        for name in [n for n, c in self._commands.items() if c.handler is None]:
            del self._commands[name]
        for command in commands:
            if command.name not in self._commands:
                self.plane_command(command.name, command.usage, command.help)

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

    def completion(self, value: str) -> str | None:
        """What `value` (`/li`) completes to (`/limit `), or None."""
        matches = self.completions(value)
        if not matches or len(value) < 2:
            return None
        command = matches[0]
        takes_argument = " " in command.usage
        return f"/{command.name}{' ' if takes_argument else ''}"

    def help_text(self) -> str:
        """The commands in two columns, what F1 shows last; the conversation
        wraps each line under its second column (`Note`)."""
        connected = any(c.handler is None for c in self)
        rows = [*((c.usage, c.help) for c in self), KEYS] if connected else [KEYS]
        width = max(len(usage) for usage, _ in rows)
        lines = [f"{usage:<{width}}  {help}" for usage, help in rows]
        if not connected:
            lines.insert(0, "The plane's commands are listed once it is connected.")
        return "\n".join(lines)

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
        if argument and " " not in command.usage:  # as the plane refuses `/new extra`
            context.show_local(
                f"/{command.name} takes nothing after it: {command.usage} — "
                f"{command.help.rstrip('.')}."
            )
            return
        result = command.handler(context, argument)
        if result is not None:
            await result


def client_commands() -> Commands:
    """A registry with this client's own commands; the plane's arrive with
    its snapshot. One per app, since loading the plane's changes it."""
    commands = Commands()

    @commands.register("help", "/help", "list the commands (ctrl+n creates an agent)")
    def _help(context: CommandContext, argument: str) -> None:
        context.show_local(commands.help_text())

    @commands.register("quit", "/quit", "close this window; the plane keeps running")
    def _quit(context: CommandContext, argument: str) -> None:
        context.quit()

    return commands
