"""The agents' tools, and the registry the turn loop calls them through.

registry.py    TOOLS, CORE, specs(), select_for_session(), call()
base.py        Tool, ToolContext (what a tool may ask of the plane), ToolResult
arguments.py   the model's JSON → validated arguments, or a sentence why not
schema.py      pydantic models → the JSON schemas the model sees, byte-stable
workspace.py   locate(): the one confinement walk for every path, by descriptors
process.py     child processes: timeout, output cap, scrubbed env, through the launcher
sandbox.py     the launcher: Landlock, no capabilities, the plane's home out of reach
tree.py        the launcher's PID namespace (or subreaper): a command's tree ends with it
capture.py     head-and-tail output capture with a marker for the cut
shell.py       run_command
files.py       read_file, write_file, list_files
search.py      grep (the search runs in scan.py, in a child process)
scan.py        the walk and line reader shared by the file tools; stdlib only
schedule.py    schedule_turn
asks.py        set_own_limit, budget_status, ask_scout, retrieve
patch.py       apply_patch (heavy), on unidiff.py
"""
