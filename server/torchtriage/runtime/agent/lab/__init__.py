"""The lab's side of the agent: one configuration of the user's script, measured, then stopped.

Runs inside the user's interpreter like the rest of the agent (stdlib and torch only).  In: the lab
settings in ``TORCHTRIAGE_AGENT``.  Out: agent.json's ``lab`` key (``wire``).
"""
