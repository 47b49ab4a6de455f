"""The project model: several files analysed as one program, purely statically.

In: the project's files and settings.  Out: per file, a ``ProjectView`` (what the rest of the project tells
it: per-step callees, resolved devices and defaults).  ``program`` is the entry point; ``modules`` resolves
the project's own imports, ``call_graph`` and ``links`` solve which functions run per step.
"""
