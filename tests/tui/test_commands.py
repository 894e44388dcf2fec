"""The slash-command registry: dispatch, autocomplete, /help.

The registry under test is the client's, loaded with the plane's real one
(`plane.agents.commands.registry()`, what every snapshot carries)."""

from __future__ import annotations

import pytest

from plane.agents.commands import COMMANDS as PLANE_COMMANDS
from plane.agents.commands import registry
from plane.wire.protocol import CommandInfo
from tui.commands import CommandContext, Commands, client_commands


@pytest.fixture
def COMMANDS() -> Commands:
    commands = client_commands()
    commands.load_plane(registry())
    return commands


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


async def test_limit_goes_to_the_plane_exactly_as_typed(COMMANDS: Commands) -> None:
    context = Recorder()
    for text in ("/limit", "/limit 5", "/limit  $0.25", "/limit off", "/limit abc"):
        await COMMANDS.dispatch(context, text)
    assert context.sent == ["/limit", "/limit 5", "/limit  $0.25", "/limit off", "/limit abc"]
    assert context.local == []


async def test_plain_text_and_unknown_commands_go_to_the_plane(COMMANDS: Commands) -> None:
    context = Recorder()
    await COMMANDS.dispatch(context, "what failed in the last build?")
    await COMMANDS.dispatch(context, "/frobnicate now")
    assert context.sent == ["what failed in the last build?", "/frobnicate now"]


async def test_help_is_local_and_lists_every_command(COMMANDS: Commands) -> None:
    context = Recorder()
    await COMMANDS.dispatch(context, "/help")
    assert context.sent == []
    (text,) = context.local
    for command in COMMANDS:
        assert command.usage in text and command.help in text


async def test_new_is_the_planes_new_session_and_quit_is_the_clients(COMMANDS: Commands) -> None:
    context = Recorder()
    await COMMANDS.dispatch(context, "/new")
    await COMMANDS.dispatch(context, "/quit")
    assert (context.forms, context.quits, context.sent) == (0, 1, ["/new"])


def test_the_clients_own_names_are_not_the_planes_except_help_which_shows_them() -> None:
    client = {c.name for c in client_commands()}
    assert client & set(PLANE_COMMANDS) == {"help"}


def test_every_plane_command_is_listed_with_the_planes_words(COMMANDS: Commands) -> None:
    listed = {c.name: (c.usage, c.help) for c in COMMANDS if c.handler is None}
    assert listed == {
        c.name: (c.usage, c.help) for c in PLANE_COMMANDS.values() if c.name != "help"
    }


def test_a_new_snapshot_replaces_the_planes_commands() -> None:
    commands = client_commands()
    commands.load_plane([CommandInfo(name="pause", usage="/pause", help="Pause it.")])
    commands.load_plane(registry())
    names = {c.name for c in commands}
    assert "pause" not in names and {"limit", "new", "help", "quit"} <= names


def test_before_any_snapshot_help_says_the_plane_lists_its_commands() -> None:
    assert "once it is connected" in client_commands().help_text()


def test_autocomplete_comes_from_the_registry(COMMANDS: Commands) -> None:
    assert COMMANDS.completion("/li") == "/limit "
    assert COMMANDS.completion("/he") == "/help"
    assert COMMANDS.completion("/zz") is None
    assert COMMANDS.completion("hello") is None


async def test_a_registered_handler_is_found_and_awaited() -> None:
    commands = Commands()
    seen: list[str] = []

    @commands.register("echo", "/echo TEXT", "Say it back.")
    async def _echo(context: CommandContext, argument: str) -> None:
        seen.append(argument)

    await commands.dispatch(Recorder(), "/echo  hi there ")
    assert seen == ["hi there"]
    assert [c.name for c in commands.completions("/e")] == ["echo"]


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        (
            "/quit now",
            "/quit takes nothing after it: /quit — close this window; the plane keeps running.",
        ),
        (
            "/help me",
            "/help takes nothing after it: /help — list the commands (ctrl+n creates an agent).",
        ),
    ],
)
async def test_a_client_command_given_words_it_does_not_take_is_refused_with_its_usage(
    COMMANDS: Commands, typed: str, said: str
) -> None:
    """As the plane refuses `/new extra`: what was meant is unknown, so nothing is done."""
    context = Recorder()
    await COMMANDS.dispatch(context, typed)
    assert (context.local, context.quits, context.sent) == ([said], 0, [])
