"""The torchtriage language server (pygls): one module per feature, thin over the core.

See :mod:`torchtriage.lsp.server` for the public contract: command names, the
``torchtriage/profileReport`` notification and its payload, code action kinds
and options.
"""
