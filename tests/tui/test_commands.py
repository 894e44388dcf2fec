"""The slash-command registry: dispatch, autocomplete, /help."""

from __future__ import annotations

from tui.commands import COMMANDS, Commands, CommandSuggester


class Recorder:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.local: list[str] = []
        self.forms = 0
        self.quits = 0

    def send_to_plane(self, text: str) -> None:
        self.sent.append(text)

    def show_local(self, text: str) -> None:
        self.local.append(text)

    def open_new_agent(self) -> None:
        self.forms += 1

    def quit(self) -> None:
        self.quits += 1


async def test_limit_goes_to_the_plane_exactly_as_typed() -> None:
    context = Recorder()
    for text in ("/limit", "/limit 5", "/limit  $0.25", "/limit off", "/limit abc"):
        await COMMANDS.dispatch(context, text)
    assert context.sent == ["/limit", "/limit 5", "/limit  $0.25", "/limit off", "/limit abc"]
    assert context.local == []


async def test_plain_text_and_unknown_commands_go_to_the_plane() -> None:
    context = Recorder()
    await COMMANDS.dispatch(context, "what failed in the last build?")
    await COMMANDS.dispatch(context, "/frobnicate now")
    assert context.sent == ["what failed in the last build?", "/frobnicate now"]


async def test_help_is_local_and_lists_every_command() -> None:
    context = Recorder()
    await COMMANDS.dispatch(context, "/help")
    assert context.sent == []
    (text,) = context.local
    for command in COMMANDS:
        assert command.usage in text and command.help in text


async def test_new_and_quit_are_the_clients() -> None:
    context = Recorder()
    await COMMANDS.dispatch(context, "/new")
    await COMMANDS.dispatch(context, "/quit")
    assert (context.forms, context.quits, context.sent) == (1, 1, [])


async def test_autocomplete_comes_from_the_registry() -> None:
    suggester = CommandSuggester(COMMANDS)
    assert await suggester.get_suggestion("/li") == "/limit "
    assert await suggester.get_suggestion("/he") == "/help"
    assert await suggester.get_suggestion("/zz") is None
    assert await suggester.get_suggestion("hello") is None


async def test_a_registered_handler_is_found_and_awaited() -> None:
    commands = Commands()
    seen: list[str] = []

    @commands.register("echo", "/echo TEXT", "Say it back.")
    async def _echo(context: Recorder, argument: str) -> None:
        seen.append(argument)

    await commands.dispatch(Recorder(), "/echo  hi there ")
    assert seen == ["hi there"]
    assert [c.name for c in commands.completions("/e")] == ["echo"]
