"""The gateway: agents the plane does not run (Claude Code, Codex, Aider),
metered and capped on the way to their provider.

    keys       a key per gateway agent, kept hashed in the home
    wire       the APIs clients speak: what a call used, refusals in their shape
    asked      what a request asks for, as far as its cost goes (n, limits, unseen context)
    estimate   what a call will likely cost, and the most it can
    learned    what an agent's calls really cost, kept in the store
    standing   an agent's day and its calls in flight, weighed: the verdict on a call
    admission  admits a call (waiting for calls in flight) or refuses it, in dollars
    refused    a call answered with an error of the client's API
    routing    who sent a call (key, session) and where it goes (URL, key, headers)
    compress   tool results inside requests, through the plane's compressor (opt-in)
    charges    what a call is charged when it settles, priced before any lock
    forward    the one class that authenticates, admits, meters and forwards a call
    cli        `plane key` and `plane gateway env`
"""
