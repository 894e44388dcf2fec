"""Where alerts go: one receiver a URL (a webhook, or an ntfy topic), each
with its own queue and task, so a slow or dead one never delays a turn nor
the other. An alert not delivered after its retries, or one a full queue
cannot take, is written to the plane's log with its sentence."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp

from plane.config import NotifyConfig
from plane.daemon.alert import TAGS, Alert
from plane.daemon.alert_unsent import unsent
from plane.providers import connections
from plane.tasks import cancel

log = logging.getLogger(__name__)

QUEUE_LIMIT = 1000
BACKOFF_CAP_S = 30.0


class Receiver:
    """One URL, its queue and the task that sends to it."""

    def __init__(self, url: str, ntfy: bool, config: NotifyConfig, backoff_s: float) -> None:
        self.url = url
        self.ntfy = ntfy
        self._retries = config.retries
        self._backoff_s = backoff_s
        self._timeout = aiohttp.ClientTimeout(connect=config.timeout_s, sock_read=config.timeout_s)
        self._client: aiohttp.ClientSession | None = None
        """Made at the first alert (aiohttp makes it on a running loop)."""
        self.queue: asyncio.Queue[Alert] = asyncio.Queue(QUEUE_LIMIT)
        self.task: asyncio.Task[None] | None = None

    def put(self, alert: Alert) -> None:
        try:
            self.queue.put_nowait(alert)
        except asyncio.QueueFull:
            log.error("alert not sent to %s (%d waiting): %s", self.url, QUEUE_LIMIT, alert.text)

    async def run(self) -> None:
        while True:
            alert = await self.queue.get()
            try:
                await self._deliver(alert)
            except asyncio.CancelledError:
                unsent(log, alert.text, self.url)
                raise
            finally:
                self.queue.task_done()

    async def _deliver(self, alert: Alert) -> None:
        why = ""
        for attempt in range(self._retries + 1):
            if attempt:
                await asyncio.sleep(min(BACKOFF_CAP_S, self._backoff_s * 2 ** (attempt - 1)))
            try:
                status = await self._post(alert)
            except aiohttp.ClientError as error:
                why = f"{type(error).__name__} {error}".strip()
            else:
                if 200 <= status < 300:
                    return
                why = f"HTTP {status}"
            log.warning("alert to %s, try %d: %s", self.url, attempt + 1, why)
        log.error(
            "alert not delivered to %s after %d tries (%s): %s",
            self.url,
            self._retries + 1,
            why,
            alert.text,
        )

    async def _post(self, alert: Alert) -> int:
        """The receiver's HTTP status."""
        if self._client is None:
            # Proxies from the environment, as a webhook far away may need; TLS as the providers'.
            self._client = aiohttp.ClientSession(
                timeout=self._timeout,
                trust_env=True,
                connector=aiohttp.TCPConnector(ssl=connections.tls_context()),
            )
        if self.ntfy:
            headers = {
                "Title": alert.title,
                "Tags": TAGS[alert.kind],
                "Content-Type": "text/plain; charset=utf-8",
            }
            if alert.links is not None:
                headers["Actions"] = alert.links.ntfy()
            sent = self._client.post(self.url, data=alert.text.encode(), headers=headers)
        else:
            body, kind = (
                connections.json_body(alert.payload()),
                {"Content-Type": "application/json"},
            )
            sent = self._client.post(self.url, data=body, headers=kind)
        async with sent as answer:
            await answer.read()
            return answer.status

    async def aclose(self, grace_s: float) -> None:
        """Deliver what is queued within `grace_s`; log what is left."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), grace_s)
        while not self.queue.empty():
            unsent(log, self.queue.get_nowait().text, self.url)
        try:
            if self.task is not None:
                await cancel(self.task)
        finally:
            if self._client is not None:
                await self._client.close()
