"""What is written to which agent, without an app: the rules the main
screen's composer follows as agents are shown, renamed and go away."""

from __future__ import annotations

from tui.drafts import Drafts


def test_each_agents_text_comes_back_when_it_is_shown_again() -> None:
    drafts = Drafts()
    assert drafts.shown("alice", "") is None
    assert drafts.shown("bob", "to alice") == ""
    assert drafts.shown("alice", "to bob") == "to alice"
    assert drafts.kept == {"bob": "to bob"}


def test_text_to_an_agent_that_went_away_stays_and_is_held_back_once() -> None:
    drafts = Drafts()
    drafts.shown("bob", "")
    drafts.shown("alice", "to bob")
    assert drafts.went_away("alice", "was deleted", "to alice")
    assert drafts.shown("bob", "to alice") == "to bob\nto alice", "both kept, neither sent"
    said = drafts.held_back("bob")
    assert said == "That was written to alice, which was deleted: Enter again sends it to bob."
    assert drafts.held_back("bob") is None, "Enter again sends it"


def test_nothing_is_held_back_once_the_operator_moved_on_or_cleared_it() -> None:
    drafts = Drafts()
    drafts.shown("alice", "")
    assert not drafts.went_away("alice", "was deleted", "  "), "no text: nothing to keep"
    drafts.shown("bob", "")
    drafts.went_away("bob", "is no longer on the plane", "to bob")
    drafts.cleared()
    assert drafts.held_back("carol") is None
    drafts.shown("carol", "again")
    drafts.went_away("carol", "was deleted", "again")
    drafts.shown("dave", "again")
    drafts.shown("erin", "to dave")
    assert drafts.held_back("erin") is None


def test_a_draft_follows_a_rename_and_a_refused_message_comes_back() -> None:
    drafts = Drafts()
    drafts.shown("alice", "")
    drafts.shown("bob", "to alice")
    drafts.renamed("alice", "alma")
    assert drafts.kept == {"alma": "to alice"}
    drafts.renamed("bob", "bert")
    assert drafts.writing_to == "bert"
    assert drafts.refused("bert", "too long"), "the composer takes it back"
    assert not drafts.refused("carol", "never got")
    assert not drafts.refused("alma", "refused"), "a draft of its own is not overwritten"
    assert drafts.kept == {"alma": "to alice", "carol": "never got"}
