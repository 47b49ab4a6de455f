"""Traces recorded elsewhere -> the run folder ``torchtriage profile`` writes (``torchtriage analyze``).

In: a chrome trace from ``torch.profiler`` (``export_chrome_trace``, or a
``tensorboard_trace_handler`` logdir), plain or gzipped, read one event at a
time.  Out: the agent's wire records (``agent/wire.py``) built from the trace's
events, then ``ProfileData``, report.json and report.html through the same host
code as a profiled run.  Modules, in data-flow order: ``inputs`` (which file),
``reader`` (streaming JSON), ``events`` (compact records, steps, threads;
``opfacts``: the operator arguments the pattern rules use), ``ordering`` (time
order in bounded memory), ``frames`` and ``callsites`` (user code and calling
lines), ``steps``, ``tables``, ``device``, ``sweep`` (the attribution; its
``patterns`` watch, with ``pattern_nodes``, gathers the pattern rules' facts), ``raw`` (the
agent.json-shaped record), ``pattern_block`` (the watch's shapes, device facts
and patterns, handed on) and ``analyze`` (the entry point).  No torch needed.
"""
