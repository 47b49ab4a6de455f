"""agent.json -> ``ProfileData``: the recorded time, syncs and memory charged to source lines.

In: the agent's records (``agent/wire.py``).  Out: a ``results.ProfileData``.  ``lines`` is the entry
point (``build_profile``); ``samples`` places work the event tree can only name by function.
"""
