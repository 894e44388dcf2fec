"""`plane web`'s server asks the plane's token of every request, on a real
aiohttp listener (the browser itself is tests/e2e/test_web.py)."""

import subprocess
import sys

import httpx
from aiohttp import web

from plane.cli.web_server import COOKIE, TokenServer

TOKEN = "s3cret-token"


async def _listening(tmp_path):  # type: ignore[no-untyped-def]
    server = TokenServer("true", TOKEN, host="127.0.0.1", port=1)
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def test_every_path_wants_the_token_and_the_address_token_becomes_a_cookie(tmp_path):
    runner, url = await _listening(tmp_path)
    try:
        async with httpx.AsyncClient() as client:
            for path in ("/", "/ws", "/static/js/textual.js", "/download/x", "/?token=wrong"):
                refused = await client.get(url + path)
                assert refused.status_code == 401, path
                assert "textual" not in refused.text.lower()
        async with httpx.AsyncClient(cookies={COOKIE: "wrong"}) as wrong:
            assert (await wrong.get(url + "/")).status_code == 401
        async with httpx.AsyncClient() as client:
            let_in = await client.get(url + f"/?token={TOKEN}&fontsize=14")
            assert let_in.status_code == 302
            assert let_in.headers["location"] == "/?fontsize=14"  # the token left the address
            cookie = let_in.headers["set-cookie"]
            assert f"{COOKIE}={TOKEN}" in cookie
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie

        async with httpx.AsyncClient(cookies={COOKIE: TOKEN}) as trusted:
            page = await trusted.get(url + "/")
            assert page.status_code == 200 and "textual-terminal" in page.text
            script = await trusted.get(url + "/static/js/textual.js")
            assert script.status_code == 200
    finally:
        await runner.cleanup()


def test_plane_help_names_web_and_metrics():
    said = subprocess.run(
        [sys.executable, "-m", "plane", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "web " in said and "the TUI in a browser" in said
    assert "/metrics" in said
    serve = subprocess.run(
        [sys.executable, "-m", "plane", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "/metrics for Prometheus" in " ".join(serve.split())
