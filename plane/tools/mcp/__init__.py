"""MCP servers as tools: an agent's servers, run confined, their tools offered
to its model by name (`server.tool`), their list fixed for a session.

    names       how a server's tool is named in an allowlist and to a model
    transport   the server's process: confined, bounded, ended with its tree
    link        one server for one session: start, list, call, stop
    results     what a tool call returned, as the text a model reads
    sessions    each agent's servers and frozen tool list, per session
"""
