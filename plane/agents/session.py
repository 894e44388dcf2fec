"""A new model session: the model's history saved whole, then emptied. The
conversation people read is untouched. `/new` asks for one; a turn the
provider refuses as longer than the context starts one itself, so no agent
is left failing every turn on a history grown too long."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from plane.agents.services import Services
from plane.economy.autocompact import save


@dataclass(frozen=True)
class Saved:
    messages: int
    """How many messages of the model's history were saved."""
    file: str
    """Its name under the workspace's .transcripts/."""


async def new_session(services: Services, agent: str) -> Saved | None:
    """Start `agent` on an empty history; None when it is empty already."""
    history = await services.transcript.load(agent)
    if not history:
        return None
    workspace = services.roster.get(agent).workspace
    saved = await asyncio.to_thread(save, history, workspace, services.clock.now())
    await services.transcript.replace(agent, [])
    services.session_layers.pop(agent, None)
    return Saved(len(history), saved.name)
