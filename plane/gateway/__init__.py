"""The gateway: agents the plane does not run, metered and capped on the way
to their provider.

    keys      a key per gateway agent, kept hashed in the home
    wire      the APIs clients speak: requests, usage, refusals in their shape
    forward   one class that authenticates, gates, meters and forwards a call
"""
