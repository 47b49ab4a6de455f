"""Profile a script: run it under the agent in a child process, then attribute, diagnose and write.

In: a script, its arguments and ``RunOptions``.  Out: a ``ProfiledRun`` and a run folder.  ``runner`` owns the
child process; ``finish`` turns its outcome into the run folder; ``repeats`` runs a ``--repeat N`` series.
"""
