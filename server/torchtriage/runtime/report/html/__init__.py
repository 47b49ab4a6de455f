"""report.html rendering: a report.json document -> one self-contained page."""

from .render import render_html

__all__ = ["render_html"]
