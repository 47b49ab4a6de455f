"""A diagnosed run -> report.json, report.html and the terminal summary.

In: a ``results.ProfileData`` and the static findings.  Out: the run folder's documents
(``writer.write_reports``; report.json is a public contract: REPORT_SCHEMA.md, report_schema.json) and
rich renderables for the terminal (``summary``).  ``html/`` renders a report.json document alone.
"""
