"""The thinkgraph benchmark: orchestration cost against LangGraph's prebuilt ReAct agent.

Run it with ``python -m bench`` (or ``make bench``). Every figure comes from one run on
one machine: thinkgraph, ``langgraph.prebuilt.create_react_agent`` and a bare Python loop
do the same N reasoning cycles with a zero-latency scripted model and an instant tool,
each checkpointing to a real SQLite file with ``durability="sync"`` (the bare loop
checkpoints nothing: it is the floor). The result is a markdown table on stdout, the
goals of DESIGN.md §10 marked PASS or MISS, and ``bench/results/latest.json``.

Modules:
    workload         the shared task: scripted replies, the ``add`` tool, the payload size
    sqlite_files     file and blob sizes of a checkpoint database
    samples          the records a measurement produces, and medians over repeats
    thinkgraph_run   thinkgraph's `Agent` on a SQLite store
    prebuilt_run     LangGraph's prebuilt ReAct agent on a `SqliteSaver`
    bare_loop        the floor: parse, call, append, no graph and no checkpoint
    suite            runs everything in the same process, interleaved
    report           the markdown table, the goals and the JSON file
"""
