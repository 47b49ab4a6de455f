"""``fix --verify``: each fix the tool would make, measured on real runs against the script as it is.

Host-free: :func:`verify_fixes` runs the rounds through a ``run_one`` the host
gives it; :func:`verify_document` turns the result into verify.json
(VERIFY_SCHEMA.md), :mod:`.text` into the terminal table.
"""

from .document import VERIFY_JSON, load_schema, verify_document, write_verification
from .measure import Verification, verify_fixes

__all__ = ["VERIFY_JSON", "Verification", "load_schema", "verify_document", "verify_fixes", "write_verification"]
