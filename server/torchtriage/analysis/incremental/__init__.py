"""Parse a module in pieces and re-parse only what an edit touched.

In: source text and the previous version's parse.  Out: a stdlib ``ast.Module`` whose unchanged statements
are the previous objects, so results kept on them (``memo``) survive the edit.  ``reparse`` is the entry
point; ``chunks`` and ``nested`` split top-level and long-block statements; ``levels`` and ``walks`` keep
walk orders per statement.
"""
