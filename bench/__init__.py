"""The thinkgraph benchmark: orchestration cost against LangGraph's prebuilt ReAct agent.

Run it with ``python -m bench`` (or ``make bench``). Every figure comes from one run on
one machine: thinkgraph, ``langgraph.prebuilt.create_react_agent`` and a bare Python loop
do the same N reasoning cycles with a zero-latency scripted model and an instant tool,
each checkpointing to a real SQLite file with ``durability="sync"`` (the bare loop
checkpoints nothing: it is the floor). The result is a markdown table on stdout, the
goals of DESIGN.md §10 marked PASS or MISS, and ``bench/results/latest.json``.

Then the latency-bound scenarios (``--concurrency`` runs only them, ``--skip-concurrency``
leaves them out): N runs started together against a loopback OpenAI-protocol model that
takes L seconds per call, thinkgraph against a plain async LangGraph agent on
`AsyncSqliteSaver` and against bare litellm calls, each in its own process; one worker on
PostgreSQL at concurrency 1 and 50; and the wall time of ``thinkgraph run`` in a fresh
process. Between the two, the time each view takes to mask and show a reply with 200,000
secret keys (20,000 with ``--quick``), in a process of its own, and what the text policy's
parse costs per reply at 10 KB and 100 KB in each tool-call format (no worse than linear).

Modules:
    workload         the shared task: scripted replies, the ``add`` tool, the payload size
    sqlite_files     file and blob sizes of a checkpoint database
    samples          the records a measurement produces, and medians over repeats
    thinkgraph_run   thinkgraph's `Agent` on a SQLite store
    prebuilt_run     LangGraph's prebuilt ReAct agent on a `SqliteSaver`
    bare_loop        the floor: parse, call, append, no graph and no checkpoint
    suite            runs everything: the orchestration cost in this process, interleaved,
                     then the latency-bound scenarios
    report           the markdown table, the goals and the JSON file
    goals            a goal and how it is judged (PASS, MISS, n/a)
    model_server     the loopback OpenAI-protocol model with latency L (its own process)
    async_langgraph  the baseline: a two-node async StateGraph on AsyncSqliteSaver
    concurrent_run   one system's N runs at once (or the worker), in a child process
    concurrency      the latency-bound scenarios: children, timeouts, start-up times
    concurrency_report  their tables, goals and JSON
    masking          every view of a reply with many secret keys, timed in a child process
    prune            pruning 1,000 finished runs (trim, delete, VACUUM), in a child process
    parse_formats    the text policy's parse cost per reply: 10 KB and 100 KB, every format
"""
