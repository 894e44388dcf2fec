"""`plane COMMAND --help` says what the command does, in a line, and what
each of its arguments is: a command or option added without words is caught
here, not by the next newcomer."""

import argparse
from collections.abc import Iterator

import pytest

from plane.cli.program import parser
from tests.support.command import plane_cli


def commands(
    top: argparse.ArgumentParser, name: str = "plane"
) -> Iterator[tuple[str, argparse.ArgumentParser, str | None]]:
    """Every command under `top` (`plane gateway env` too): its name, its
    parser, and its line in its parent's list of commands."""
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for word, command in action.choices.items():
                yield f"{name} {word}", command, listed.get(word)
                yield from commands(command, f"{name} {word}")


EVERY = sorted((name, command, listed) for name, command, listed in commands(parser()))


def test_every_command_is_walked():
    names = [name for name, _, _ in EVERY]
    assert {"plane serve", "plane gateway env", "plane edit", "plane compress"} <= set(names)


@pytest.mark.parametrize(("name", "command", "listed"), EVERY, ids=[n for n, _, _ in EVERY])
def test_every_command_says_what_it_does_and_what_each_argument_is(name, command, listed):
    assert listed, f"`plane --help` lists {name} without a line"
    assert command.description, f"`{name} --help` says nothing of what it does"
    unsaid = [
        "/".join(action.option_strings) or action.dest
        for action in command._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        and not action.help
    ]
    assert not unsaid, f"`{name} --help` leaves unsaid: {', '.join(unsaid)}"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["serve"], "Run the plane in the foreground"),
        (["status"], "The day and its spend, and each agent's state, spend and ceiling."),
        (["send"], "Post a message (or /limit …) to an agent as the operator"),
        (["edit"], "--model MODEL the model it runs on"),
        (["ledger"], "--json as JSON"),
    ],
)
def test_a_command_s_help_begins_with_what_it_does(tmp_path, args, said):
    shown = plane_cli(tmp_path, *args, "--help")
    assert shown.returncode == 0
    assert said in " ".join(shown.stdout.split())  # as argparse wraps it, whatever the width


def test_plane_help_says_where_the_config_is_read_and_the_files_are_kept(tmp_path):
    """A newcomer's first questions: which agents.yaml, and where is everything."""
    home = tmp_path / "home"
    shown = plane_cli(home, "--help")
    assert shown.returncode == 0
    said = " ".join(shown.stdout.split())
    assert "The plane reads ./agents.yaml where it starts, else " in said
    # argparse wraps a long path at its hyphens: compared without the breaks
    squeezed = "".join(shown.stdout.split())
    assert f"keepswhatitwritesin{home}($PLANE_HOME)" in squeezed


def test_serve_help_names_every_api_the_gateway_speaks(tmp_path):
    shown = plane_cli(tmp_path, "serve", "--help")
    said = " ".join(shown.stdout.split())
    assert "(Anthropic Messages, OpenAI Chat Completions and Responses)" in said
