"""The running plane's parts, as a test fixture's plane hands them out
(`RunningPlane`, `GatewayPlane`): each through the assembled runtime, never
through a private name."""

from __future__ import annotations

from typing import Any

from plane.daemon.assemble import Runtime
from plane.daemon.server import Plane
from plane.gateway.forward import Gateway
from plane.store.engine import Database


class PlaneParts:
    """What a fixture's plane offers a test, from its `plane`."""

    plane: Plane

    @property
    def runtime(self) -> Runtime:
        assert self.plane.runtime is not None, "the plane has not started"
        return self.plane.runtime

    @property
    def services(self) -> Any:
        return self.runtime.services

    @property
    def db(self) -> Database:
        """The plane's store, to read rows the plane wrote."""
        return self.runtime.db

    @property
    def crew(self) -> Any:
        return self.runtime.crew

    @property
    def rows(self) -> Any:
        return self.runtime.rows

    @property
    def scheduler(self) -> Any:
        return self.runtime.scheduler

    @property
    def gateway(self) -> Gateway:
        """The clients' LLM APIs the plane serves (`--http`)."""
        assert self.runtime.gateway is not None, "started without --http"
        return self.runtime.gateway
