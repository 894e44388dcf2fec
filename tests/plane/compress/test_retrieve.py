"""retrieve by every mode, from a store reopened as after a plane restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plane.economy.compress import compress
from plane.economy.compress.formats import jsondoc
from plane.economy.compress.markers import ref_for
from plane.economy.compress.refs import RefStore, UnknownRef
from plane.economy.compress.retrieve import retrieve
from plane.errors import ToolError

LOG = "\n".join(f"line {n}: {'ERROR disk full' if n % 4 == 0 else 'ok'}" for n in range(1, 11))
DOC = json.dumps({"a": {"b/c": [10, {"d~e": "deep"}]}, "s": "text"})


@pytest.fixture
def store(tmp_path: Path):
    with RefStore(tmp_path / "refs.db") as first:
        first.put({ref_for(LOG): LOG, ref_for(DOC): DOC})
    with RefStore(tmp_path / "refs.db") as reopened:  # a restart between put and retrieve
        yield reopened


def test_whole(store: RefStore) -> None:
    assert retrieve(store, ref_for(LOG)) == LOG


def test_lines(store: RefStore) -> None:
    assert retrieve(store, ref_for(LOG), lines="2:3") == "line 2: ok\nline 3: ok"
    assert retrieve(store, ref_for(LOG), lines="9:") == "line 9: ok\nline 10: ok"
    assert retrieve(store, ref_for(LOG), lines=":1") == "line 1: ok"


def test_chars(store: RefStore) -> None:
    assert retrieve(store, ref_for(LOG), chars="1:6") == "line 1"


def test_pointer(store: RefStore) -> None:
    ref = ref_for(DOC)
    assert retrieve(store, ref, pointer="/a/b~1c/1/d~0e") == "deep"
    assert retrieve(store, ref, pointer="/a/b~1c/0") == "10"
    assert json.loads(retrieve(store, ref, pointer="")) == json.loads(DOC)


def test_grep(store: RefStore) -> None:
    found = retrieve(store, ref_for(LOG), grep=r"ERROR")
    assert found.split("\n") == ["4:line 4: ERROR disk full", "8:line 8: ERROR disk full"]
    assert retrieve(store, ref_for(LOG), grep="nothing here") == "No line matches 'nothing here'."


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lines": "x"}, "lines must look like A:B"),
        ({"lines": "\u0661:\u0662"}, "lines must look like A:B"),
        ({"chars": "\uff11:\uff13"}, "chars must look like A:B"),
        ({"lines": "5:2"}, "is empty"),
        ({"lines": "40:50"}, "starts after the end"),
        ({"chars": "0:3"}, "is empty"),
        ({"grep": "("}, "not a valid regular expression"),
        ({"lines": "1:2", "grep": "x"}, "Choose one of"),
    ],
)
def test_bad_arguments_are_refused_in_one_sentence(
    store: RefStore, kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        retrieve(store, ref_for(LOG), **kwargs)


@pytest.mark.parametrize(
    ("pointer", "message"),
    [
        ("a", "starts with '/'"),
        ("/zz", "No key 'zz'"),
        ("/a/b~1c/7", "is not an index"),
        ("/s/x", "neither an object nor an array"),
    ],
)
def test_bad_pointers(store: RefStore, pointer: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        retrieve(store, ref_for(DOC), pointer=pointer)


def test_pointer_into_text_that_is_not_json(store: RefStore) -> None:
    with pytest.raises(ToolError, match="not JSON"):
        retrieve(store, ref_for(LOG), pointer="/a")


def test_unknown_ref(store: RefStore) -> None:
    with pytest.raises(UnknownRef):
        retrieve(store, "k_0000000000")


def test_pointer_into_a_run_of_items_a_marker_stands_for(tmp_path: Path) -> None:
    array = json.dumps([{"id": n, "name": f"pkg{n}"} for n in range(40)], indent=2)
    result = compress(array, command="cat packages.json")
    with RefStore(tmp_path / "refs.db") as store:
        store.put(result.refs)
        [items] = [chunk for chunk in result.refs.values() if '"pkg20"' in chunk]
        ref = ref_for(items)
        first = jsondoc.HEAD  # the items before it are shown
        assert json.loads(retrieve(store, ref, pointer="/0")) == {
            "id": first,
            "name": f"pkg{first}",
        }
        assert retrieve(store, ref, pointer="/1/name") == f"pkg{first + 1}"
    members = '  "a": 1,\n  "b": {"c": [true, null]},'
    lines = '{"event": "start"}\n{"event": "stop", "code": 3}\n'
    with RefStore(tmp_path / "refs.db") as store:
        store.put({ref_for(members): members, ref_for(lines): lines})
        assert retrieve(store, ref_for(members), pointer="/b/c/0") == "true"
        assert retrieve(store, ref_for(lines), pointer="/1/code") == "3"
