"""The profiling agent: runs INSIDE the user's interpreter.

Only the standard library and torch may be imported here, nothing else of
torchtriage: the package is loaded from its folder under a private name by
``bootstrap.py`` so that the user's interpreter needs nothing installed.  Keep
the syntax Python 3.8-compatible up to the torch import so that an interpreter
without torch gets a clear message instead of a crash.
"""
