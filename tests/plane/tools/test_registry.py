"""The registry: the one door for tool calls, the specs, the diet."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

import plane
from plane.errors import LedgerError, ToolError
from plane.tools import registry
from plane.tools.registry import CORE, TOOLS, call, select_for_session, specs
from tests.support.fixtures_plane import StartPlane

from .conftest import FakeContext

# call: everything the model can get wrong comes back as one sentence


async def test_an_unknown_tool_is_named_with_the_ones_that_exist(ctx: FakeContext):
    result = await call("rm_rf", "{}", ctx)
    assert not result.ok
    assert result.text.startswith(
        "There is no tool named 'rm_rf' here; the tools are: run_command,"
    )


async def test_a_tool_outside_the_session_cannot_be_called_by_name(ctx: FakeContext):
    session = ("read_file", "budget_status")
    result = await call("run_command", '{"command": "touch pwned"}', ctx, available=session)
    assert (result.ok, result.text) == (
        False,
        "There is no tool named 'run_command' here; the tools are: read_file, budget_status.",
    )
    assert not (ctx.workspace / "pwned").exists()
    assert (await call("budget_status", "{}", ctx, available=session)).ok


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (
            '{"path": "a.txt",}',
            "The arguments for read_file are not valid JSON (Expecting property name enclosed in "
            "double quotes at character 17); send one JSON object. "
            "Its arguments: path (required), offset, limit.",
        ),
        (
            '["a.txt"]',
            "The arguments for read_file must be a JSON object, not an array. "
            "Its arguments: path (required), offset, limit.",
        ),
        (
            '{"path": 7}',
            "Invalid arguments for read_file: `path` should be a valid string (got 7). "
            "Its arguments: path (required), offset, limit.",
        ),
        (
            '{"path": "a.txt", "offset": "third"}',
            "Invalid arguments for read_file: `offset` should be a valid integer, unable to parse "
            'string as an integer (got "third"). Its arguments: path (required), offset, limit.',
        ),
        (
            '{"path": "a.txt", "lines": 5}',
            "Invalid arguments for read_file: `lines` is not an argument of read_file. "
            "Its arguments: path (required), offset, limit.",
        ),
        (
            "{}",
            "Invalid arguments for read_file: `path` is required. "
            "Its arguments: path (required), offset, limit.",
        ),
    ],
)
async def test_bad_arguments_become_one_clear_sentence(ctx: FakeContext, arguments, says):
    result = await call("read_file", arguments, ctx)
    assert (result.ok, result.text) == (False, says)


async def test_many_problems_are_all_named_up_to_a_few(ctx: FakeContext):
    arguments = json.dumps({f"x{n}": n for n in range(8)})
    result = await call("read_file", arguments, ctx)
    assert "`path` is required; `x0` is not an argument" in result.text
    assert "; 4 more." in result.text


async def test_arguments_encoded_twice_are_understood(ctx: FakeContext, workspace: Path):
    (workspace / "a.txt").write_text("hi\n")
    result = await call("read_file", json.dumps(json.dumps({"path": "a.txt"})), ctx)
    assert (result.ok, result.text) == (True, "hi")


async def test_numeric_strings_are_accepted_for_numbers(ctx: FakeContext, workspace: Path):
    (workspace / "a.txt").write_text("1\n2\n3\n")
    result = await call("read_file", '{"path": "a.txt", "offset": "2", "limit": "1"}', ctx)
    assert result.text == "2\n[lines 2–2 of 3; read on with offset=3]"


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (
            '{"in_seconds": 1' + "0" * 5000 + ', "note": "n"}',
            "The arguments for schedule_turn hold a number too long to read (over 4,300 "
            "digits); send one JSON object with the number written shorter. "
            "Its arguments: in_seconds, at, note (required).",
        ),
        (
            '{"in_seconds": "1' + "0" * 5000 + '", "note": "n"}',
            "Invalid arguments for schedule_turn: `in_seconds` unable to parse input string as "
            'an integer, exceeded maximum size (got "1' + "0" * 57 + "…). "
            "Its arguments: in_seconds, at, note (required).",
        ),
        (
            '{"note": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "The arguments for schedule_turn are nested too deeply to read; send one flat JSON "
            "object. Its arguments: in_seconds, at, note (required).",
        ),
    ],
    ids=["5001-digit number", "5001-digit string", "nested 100,000 deep"],
)
async def test_arguments_python_cannot_read_are_one_clear_sentence(
    ctx: FakeContext, arguments, says, caplog: pytest.LogCaptureFixture
):
    with caplog.at_level(logging.ERROR, logger="plane.tools.registry"):
        result = await call("schedule_turn", arguments, ctx)
    assert (result.ok, result.text) == (False, says)
    assert caplog.records == [], "a bad argument is the model's, not a bug of the plane"
    assert ctx.asked == []


def _swap(monkeypatch: pytest.MonkeyPatch, name: str, **changes) -> None:
    tools = dict(TOOLS)
    tools[name] = dataclasses.replace(tools[name], **changes)
    monkeypatch.setattr(registry, "TOOLS", MappingProxyType(tools))


async def test_a_tool_that_runs_too_long_is_stopped(
    ctx: FakeContext, monkeypatch: pytest.MonkeyPatch
):
    stopped = asyncio.Event()

    async def slow_budget() -> str:
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()
        return "never"

    monkeypatch.setattr(ctx, "budget_status", slow_budget)
    _swap(monkeypatch, "budget_status", timeout_s=0.2)
    result = await call("budget_status", "{}", ctx)
    assert (result.ok, result.text) == (
        False,
        "budget_status was stopped after 0.2s without finishing.",
    )
    assert stopped.is_set()


async def test_a_tool_error_from_the_plane_reaches_the_model(
    ctx: FakeContext, monkeypatch: pytest.MonkeyPatch
):
    async def held(question: str, paths: list[str]) -> str:
        raise ToolError("The scout is held over its ceiling until 00:00 UTC (3h 12m).")

    monkeypatch.setattr(ctx, "ask_scout", held)
    result = await call("ask_scout", '{"question": "q"}', ctx)
    assert (result.ok, result.text) == (
        False,
        "The scout is held over its ceiling until 00:00 UTC (3h 12m).",
    )


async def test_a_bug_in_a_tool_is_a_clear_error_and_is_logged(
    ctx: FakeContext, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    async def broken() -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(ctx, "budget_status", broken)
    with caplog.at_level(logging.ERROR, logger="plane.tools.registry"):
        result = await call("budget_status", "{}", ctx)
    assert (result.ok, result.text) == (
        False,
        "budget_status failed unexpectedly (RuntimeError: boom); the plane has logged it.",
    )
    (record,) = caplog.records
    assert record.exc_info and record.exc_info[0] is RuntimeError
    assert "budget_status" in record.getMessage() and "demo" in record.getMessage()


async def test_money_that_cannot_be_recorded_is_not_swallowed(
    ctx: FakeContext, monkeypatch: pytest.MonkeyPatch
):
    async def unrecorded(question: str, paths: list[str]) -> str:
        raise LedgerError("the ledger could not record the scout's call")

    monkeypatch.setattr(ctx, "ask_scout", unrecorded)
    with pytest.raises(LedgerError):
        await call("ask_scout", '{"question": "q"}', ctx)


# specs: the same bytes every time, in every process


def _spec_bytes(names) -> str:
    return json.dumps([dataclasses.asdict(spec) for spec in specs(names)])


def test_specs_are_byte_identical_across_processes_and_hash_seeds():
    program = (
        "import dataclasses, json\n"
        "from plane.tools.registry import TOOLS, specs\n"
        "print(json.dumps([dataclasses.asdict(s) for s in specs(reversed(list(TOOLS)))]))\n"
    )
    outputs = set()
    for seed in ("1", "2"):
        completed = subprocess.run(
            [sys.executable, "-c", program],
            cwd=Path(plane.__file__).parents[1],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(completed.stdout.strip())
    assert outputs == {_spec_bytes(TOOLS)}


def test_specs_come_in_registry_order_once_each():
    names = [spec.name for spec in specs(["grep", "read_file", "grep", "run_command"])]
    assert names == ["run_command", "read_file", "grep"]


def test_specs_cannot_be_changed_by_a_caller():
    (first,) = specs(["read_file"])
    first.parameters["properties"].clear()
    (again,) = specs(["read_file"])
    assert "path" in again.parameters["properties"]


def test_specs_of_an_unknown_tool_is_a_programming_error():
    with pytest.raises(KeyError, match="no such tools: nope"):
        specs(["read_file", "nope"])


def test_every_schema_is_lean_strict_and_documented():
    for spec in specs(TOOLS):
        schema = spec.parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert '"title":' not in json.dumps(schema)
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
            assert "anyOf" not in prop and prop.get("default", 0) is not None
        model = TOOLS[spec.name].args
        required = [n for n, f in model.model_fields.items() if f.is_required()]
        assert schema.get("required", []) == required
        assert spec.description == TOOLS[spec.name].description
        assert 40 < len(spec.description) < 600


# the diet


def test_core_tools_are_the_light_ones_and_include_the_planes_asks():
    assert CORE == (
        "run_command",
        "read_file",
        "write_file",
        "list_files",
        "grep",
        "schedule_turn",
        "set_own_limit",
        "budget_status",
        "ask_scout",
        "retrieve",
    )
    assert all(not TOOLS[name].keywords for name in CORE)
    heavy = [name for name in TOOLS if name not in CORE]
    assert heavy == ["apply_patch"]


@pytest.mark.parametrize(
    ("message", "heavy"),
    [
        ("What failed in the last build?", False),
        ("", False),
        ("Please PATCH the parser", True),
        ("apply these patches", True),
        ("refactoring the ledger", True),
        ("edit the README", True),
        ("I edited it; check", True),
        ("show me the diffs", True),
        ("dispatch the nightly job", False),  # "patch" inside a word
        ("open it in your editor", False),
        ("a diff-based review", True),
    ],
)
def test_heavy_tools_load_when_the_founding_message_mentions_them(message: str, heavy: bool):
    expected = (*CORE, "apply_patch") if heavy else CORE
    assert select_for_session(None, message) == expected


def test_the_allowlist_filters_core_and_heavy_alike_in_registry_order():
    allowed = ["apply_patch", "read_file", "no_such_tool", "budget_status"]
    assert select_for_session(allowed, "edit the file") == (
        "read_file",
        "budget_status",
        "apply_patch",
    )
    assert select_for_session(allowed, "hello") == ("read_file", "budget_status")
    assert select_for_session(["read_file"], "patch it") == ("read_file",)
    assert select_for_session([], "patch it") == ()
    assert select_for_session(iter(["grep"]), "x") == ("grep",)


async def test_a_turn_offered_the_same_tools_as_the_last_is_not_handed_a_new_copy(
    start_plane: StartPlane, monkeypatch: pytest.MonkeyPatch
):
    """The registry copies its specs for each caller (above); the plane's
    toolbox asks once per set of tools, and its turns and providers only read
    them: a copy each turn cost 7% of a metered call's CPU."""
    from plane.agents.toolbox import Selection, Tooling

    made: list[tuple[str, ...]] = []

    def counted(names):
        made.append(tuple(names))
        return specs(names)

    plane = await start_plane()
    monkeypatch.setattr(registry, "specs", counted)
    tooling = Tooling(plane.services, plane.scheduler.book)
    first = tooling.specs(Selection(("read_file", "grep")))
    assert tooling.specs(Selection(("read_file", "grep"))) is first
    assert [s.name for s in tooling.specs(Selection(("grep",)))] == ["grep"]
    assert made == [("read_file", "grep"), ("grep",)]
