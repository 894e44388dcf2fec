"""An agent's model session: what its worker keeps of it between turns
(`Session`), and a new one started (`new_session`).

A new session is the model's history saved whole, then emptied; the
conversation people read is untouched. `/new` asks for one; a turn the
provider refuses as longer than the context starts one itself, so no agent
is left failing every turn on a history grown too long. Its first turn finds
the history empty, and takes the session's prompt sections anew."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from plane.economy.autocompact import Breaker, save
from plane.history.transcript import Transcript


@dataclass
class Session:
    """One agent's session as its worker keeps it: per agent, so a rename
    keeps it and a delete ends it with the worker."""

    layers: tuple[str, ...] | None = None
    """The extra system-prompt sections, fixed for the session (None: taken
    at the next turn)."""
    breaker: Breaker = field(default_factory=Breaker)
    """Auto-compact's: three failed summaries in a row and the agent stops trying."""


@dataclass(frozen=True)
class Saved:
    messages: int
    """How many messages of the model's history were saved."""
    file: str
    """Its name under the workspace's .transcripts/."""


async def new_session(
    transcript: Transcript, agent: str, workspace: Path, now: datetime
) -> Saved | None:
    """Start `agent` on an empty history; None when it is empty already."""
    history = await transcript.load(agent)
    if not history:
        return None
    saved = await asyncio.to_thread(save, history, workspace, now)
    await transcript.replace(agent, [])
    return Saved(len(history), saved.name)
