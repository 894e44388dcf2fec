"""`plane web`'s server on a real aiohttp listener: the printed address
becomes a session, the page is titled, port 0 picks a port (the attacks on
it are tests/attack/test_web_sessions.py; the browser itself is
tests/e2e/test_web.py)."""

import asyncio
import shlex
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from plane.cli.web_server import COOKIE, WebServer
from tests.support.command import plane_cli, process_environment
from tests.support.fixtures_plane import CONFIG
from tests.support.local_http import local_client

TOKEN = "link-token"
PLANE_TOKEN = "the-planes-own-token"


async def test_the_printed_address_becomes_a_session_and_every_path_wants_one() -> None:
    server = WebServer("true", TOKEN, tabs=2, title="plane — box", host="127.0.0.1", port=0)
    runner = await server.listen()
    url = server.public_url
    try:
        assert server.port != 0 and url == f"http://127.0.0.1:{server.port}"
        async with local_client() as client:
            for path in ("/", "/ws", "/static/js/textual.js", "/download/x", "/?token=wrong"):
                refused = await client.get(url + path)
                assert refused.status_code == 401, path
                assert "textual" not in refused.text.lower()
            let_in = await client.get(url + f"/?token={TOKEN}&fontsize=14")
        assert let_in.status_code == 302
        assert let_in.headers["location"] == "/?fontsize=14"  # the token left the address
        cookie = let_in.headers["set-cookie"]
        session = let_in.cookies[COOKIE]
        assert len(session) >= 40 and session not in (TOKEN, PLANE_TOKEN)
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie

        async with local_client(cookies={COOKIE: session}) as signed_in:
            page = await signed_in.get(url + "/")
            assert page.status_code == 200 and "textual-terminal" in page.text
            assert "<title>plane — box</title>" in page.text
            assert f'"ws://127.0.0.1:{server.port}/ws"' in page.text  # the address asked for
            assert (await signed_in.get(url + "/static/js/textual.js")).status_code == 200
            # Asked by another name for the same place, the page's websocket follows it.
            named = await signed_in.get(url + "/", headers={"Host": f"localhost:{server.port}"})
            assert f'"ws://localhost:{server.port}/ws"' in named.text
            odd = await signed_in.get(url + "/", headers={"Host": 'x"><script>'})
            assert odd.status_code == 200 and 'x"><script>' not in odd.text
    finally:
        await runner.cleanup()


def test_plane_help_names_web_its_port_0_and_metrics(tmp_path: Path) -> None:
    said = plane_cli(tmp_path, "--help").stdout
    assert "web " in said and "the TUI in a browser" in said
    assert "/metrics" in said
    web = plane_cli(tmp_path, "web", "--help").stdout
    assert "0 picks a free one" in web and "--tabs" in web
    serve = plane_cli(tmp_path, "serve", "--help").stdout
    assert "/metrics for Prometheus" in " ".join(serve.split())


@pytest.mark.slow
async def test_stopping_plane_web_ends_each_open_tab_as_it_stops(tmp_path: Path) -> None:
    """ctrl+c on `plane web` with a tab open: the tab's websocket is closed
    (a close frame, so its page says the session ended) and its TUI quits,
    as the server stops. Left to the connection's end, the tab's TUI ran on
    for its heartbeat (about 18 s) and ctrl+c seemed to hang; then the
    connection dropped with no close frame."""
    tui = shlex.join([sys.executable, "-P", "-m", "tui", "--socket", str(tmp_path / "none.sock")])
    server = WebServer(tui, TOKEN, tabs=2, title="plane", host="127.0.0.1", port=0)
    runner = await server.listen()
    stopping: asyncio.Task[None] | None = None
    try:
        async with local_client() as client:
            session = (await client.get(f"{server.public_url}/?token={TOKEN}")).cookies[COOKIE]
        headers = {"Cookie": f"{COOKIE}={session}", "Origin": server.public_url}
        async with aiohttp.ClientSession() as browser:
            tab = await browser.ws_connect(
                f"{server.public_url}/ws?width=80&height=24", headers=headers
            )
            drawn = await asyncio.wait_for(tab.receive(), 60)  # the TUI is up: it draws
            assert drawn.type == aiohttp.WSMsgType.BINARY
            stopping = asyncio.create_task(runner.cleanup())
            while (said := await asyncio.wait_for(tab.receive(), 90)).type not in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.CLOSING,
            ):
                pass  # what the TUI drew meanwhile
            assert said.type == aiohttp.WSMsgType.CLOSE, said  # not a connection dropped
            await asyncio.wait_for(stopping, 90)
    finally:
        if stopping is None:
            await runner.cleanup()


@pytest.mark.slow
def test_plane_web_says_when_it_started_the_plane(tmp_path: Path, scripted_llm) -> None:
    """With no plane running, `plane web` starts one in the background, as
    `plane` does, and says so before its address: its next line says the
    plane keeps running after it, news to whoever did not know one started."""
    (tmp_path / "agents.yaml").write_text(CONFIG.replace("{base_url}", scripted_llm.base_url))
    home = tmp_path / "home"
    web = subprocess.Popen(
        [sys.executable, "-m", "plane", "web", "--port", "0"],
        cwd=tmp_path,
        env=process_environment(PLANE_HOME=str(home)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert web.stdout is not None
        first, second = web.stdout.readline(), web.stdout.readline()
    finally:
        web.terminate()
        web.wait(timeout=30)
        plane_cli(home, "stop")
    assert first == (
        "No plane was running: started one in the background (`plane stop` stops it).\n"
    ), first
    assert second.startswith("The TUI in a browser: http://127.0.0.1:"), second
