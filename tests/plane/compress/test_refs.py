"""The ref store: content-addressed, kept at least the ttl, gone after it, survives restarts."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from plane.economy.compress import compress, inbox
from plane.economy.compress.markers import expand, ref_for
from plane.economy.compress.refs import RefStore, UnknownRef
from tests.plane.compress.helpers import fixture


class StepClock:
    """Just enough of a clock for the store: `now()`, moved by hand."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment

    async def sleep_until(self, when: datetime) -> None:  # pragma: no cover - unused here
        raise NotImplementedError


def test_put_get_and_unknown_ref(tmp_path: Path) -> None:
    with RefStore(tmp_path / "refs.db") as store:
        store.put({ref_for("hello"): "hello"})
        assert store.get(ref_for("hello")) == "hello"
        with pytest.raises(UnknownRef) as caught:
            store.get("k_AAAAAAAAAA")
    assert isinstance(caught.value, KeyError), "an UnknownRef is a KeyError"
    assert "Unknown or expired ref 'k_AAAAAAAAAA'" in str(caught.value)


def test_kept_for_the_ttl_and_never_less(tmp_path: Path) -> None:
    clock = StepClock()
    store = RefStore(tmp_path / "refs.db", ttl_seconds=3600, clock=clock)
    ref = ref_for("chunk")
    store.put({ref: "chunk"})
    clock.moment += timedelta(seconds=3600)
    assert store.get(ref) == "chunk"  # exactly the ttl old: still there
    clock.moment += timedelta(seconds=1)
    with pytest.raises(UnknownRef):
        store.get(ref)
    assert store.expire() == 1
    store.close()


def test_putting_again_refreshes_the_time(tmp_path: Path) -> None:
    clock = StepClock()
    store = RefStore(tmp_path / "refs.db", ttl_seconds=60, clock=clock)
    ref = ref_for("again")
    store.put({ref: "again"})
    clock.moment += timedelta(seconds=50)
    store.put({ref: "again"})
    clock.moment += timedelta(seconds=50)
    assert store.get(ref) == "again"
    store.close()


def test_identical_chunks_are_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "refs.db"
    with RefStore(path) as store:
        for _ in range(3):
            store.put({ref_for("same"): "same", ref_for("other"): "other"})
    rows = sqlite3.connect(path).execute("SELECT count(*) FROM refs").fetchone()[0]
    assert rows == 2


def test_survives_a_restart_and_round_trips_any_text(tmp_path: Path) -> None:
    text = fixture("ls_l.txt") + "\udcff odd bytes \ud800 and a lone surrogate\n"
    result = compress(text, command="ls -l")
    assert result.refs
    with RefStore(tmp_path / "refs.db") as store:
        store.put(result.refs)
    with RefStore(tmp_path / "refs.db") as reopened:
        assert expand(result.text, reopened.get) == text


def test_uses_wal(tmp_path: Path) -> None:
    with RefStore(tmp_path / "refs.db") as store:
        store.put({ref_for("x"): "x"})
        with sqlite3.connect(tmp_path / "refs.db") as other:  # WAL is the file's own mode
            mode = other.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_ttl_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        RefStore(tmp_path / "refs.db", ttl_seconds=0)


# The inbox: what `plane compress` posts from a shell, taken in by the store.


def test_a_store_opened_later_takes_in_what_was_posted(tmp_path: Path) -> None:
    path = tmp_path / "refs.db"
    text = fixture("ls_l.txt") + "\udcff odd bytes \ud800 and a lone surrogate\n"
    result = compress(text, command="ls -l")
    inbox.post(inbox.of(path), result.refs)
    with RefStore(path) as store:
        assert expand(result.text, store.get) == text
    assert not list(inbox.of(path).iterdir())  # taken in, then deleted


def test_an_open_store_takes_in_what_is_posted_after_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "refs.db"
    with RefStore(path) as store:
        inbox.post(inbox.of(path), {ref_for("later"): "later"})
        assert store.get(ref_for("later")) == "later"
        with pytest.raises(UnknownRef):
            store.get(ref_for("never posted"))


def test_the_ttl_counts_from_the_post_not_from_the_taking_in(tmp_path: Path) -> None:
    clock = StepClock()
    path = tmp_path / "refs.db"
    posted = clock.moment.timestamp()
    inbox.post(inbox.of(path), {ref_for("old"): "old"}, now=posted - 3601)
    inbox.post(inbox.of(path), {ref_for("fresh"): "fresh"}, now=posted - 3599)
    with RefStore(path, ttl_seconds=3600, clock=clock) as store:
        assert store.get(ref_for("fresh")) == "fresh"
        with pytest.raises(UnknownRef):
            store.get(ref_for("old"))


def test_taking_in_keeps_a_refs_latest_time(tmp_path: Path) -> None:
    clock = StepClock()
    path = tmp_path / "refs.db"
    with RefStore(path, ttl_seconds=60, clock=clock) as store:
        store.put({ref_for("both"): "both"})
        inbox.post(inbox.of(path), {ref_for("both"): "both"}, now=clock.moment.timestamp() - 50)
        assert store.take_in()
        clock.moment += timedelta(seconds=30)  # 30 s after the put, 80 after the post
        assert store.get(ref_for("both")) == "both"
