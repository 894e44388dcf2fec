"""The providers the agents call, built once at start-up, and the embedded
model among them, started only when an agent uses it.

Every agent counts as a user of its provider, those created from the
keyboard too: a key they need that is missing stops the plane before the
embedded model is started. The embedded model is also started later, by the
first agent created on it: it is offered to new agents (it needs no key), so
an agent put on it has to be able to take turns.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from plane.agents.roster import Roster
from plane.config import EMBEDDED, Config
from plane.providers.base import Provider
from plane.providers.connections import Connect
from plane.providers.local import EmbeddedModel
from plane.providers.pool import build_providers, embedded_providers, refuse_missing_keys


class Providers:
    def __init__(self, config: Config, connectors: Mapping[str, Connect] | None = None) -> None:
        self._config = config
        self._connectors = connectors
        self.by_name: dict[str, Provider] = {}
        """What the agents' calls go through (`Services.providers`): the
        embedded model's join once it starts."""
        self.model: EmbeddedModel | None = None
        """The embedded model, once started."""
        self._starting = asyncio.Lock()
        """Two agents created on the embedded model at once start it once."""

    async def build(self, roster: Roster) -> dict[str, Provider]:
        """One provider per name agents.yaml gives (an unused one without its
        key left out), the embedded model started first when an agent uses it."""
        agents = {spec.name: spec.provider for spec in roster}
        refuse_missing_keys(self._config, agents)
        if any(self._config.providers[name].kind == EMBEDDED for name in agents.values()):
            await self._start()
        self.by_name.update(
            build_providers(
                self._config, embedded=self.model, connectors=self._connectors, agents=agents
            )
        )
        return self.by_name

    async def ready(self, provider: str) -> None:
        """A new agent's provider, ready before the agent exists: the
        embedded model, when no agent used it at start-up, starts now. Its
        failure to start is the request's error, and no agent is made."""
        if provider in self.by_name or self._config.providers[provider].kind != EMBEDDED:
            return
        async with self._starting:
            if provider not in self.by_name:
                self.by_name.update(embedded_providers(self._config, await self._start()))

    def embedded_address(self) -> tuple[str, str | None] | None:
        """The embedded model's base URL and key, while it runs (the gateway's upstream)."""
        model = self.model
        if model is None or not model.base_url:
            return None
        return model.base_url, model.api_key

    async def _start(self) -> EmbeddedModel:
        if self.model is None:
            # One core stays free for the plane, its clients and the shell:
            # llama.cpp's threads spin-wait, and fighting for cores is slower.
            threads = max(1, min(4, (os.cpu_count() or 2) - 1))
            self.model = EmbeddedModel(threads=threads)
        await self.model.start()
        return self.model

    async def aclose(self) -> None:
        """Every provider's connections closed, then the embedded model stopped."""
        for provider in self.by_name.values():
            await provider.aclose()
        if self.model is not None:
            await self.model.stop()
