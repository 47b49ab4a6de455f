"""Which code runs once per training or eval step.

In: a ``ModuleIndex`` (and what other project files say, through ``project_view``).  Out: ``HotLoops``, the
regions rules ask about (``regions``).  ``finder`` is the entry point; ``step_loops``, ``step_markers``,
``loop_kinds``, ``guards`` and ``epochs`` hold the judgements it is made of; ``reuse`` keeps the result across edits.
"""
