"""The gateway: agents the plane does not run (Claude Code, Codex, Aider),
metered and capped on the way to their provider.

    keys      a key per gateway agent, kept hashed in the home
    wire      the APIs clients speak: what a call asks and used, refusals in their shape
    routing   who sent a call (key, session) and where it goes (URL, key, headers)
    compress  tool results inside requests, through the plane's compressor (opt-in)
    forward   the one class that authenticates, gates, meters and forwards a call
    cli       `plane key` and `plane gateway env`
"""
