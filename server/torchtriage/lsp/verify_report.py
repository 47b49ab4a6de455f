"""``torchtriage.verifyFixes`` / ``torchtriage.applyVerifiedFixes``: verify.json as a payload, and its fix as edits.

``torchtriage.verifyFixes [{uri, repeat?}]`` runs ``python -m torchtriage fix --verify`` on the
document's script; its result (and the ``torchtriage/verifyReport`` notification) is the
verify.json document (``runtime/verify/document.py``) with ``uri`` and ``verifyJson`` (its path)
added.  ``torchtriage.applyVerifiedFixes [{uri, verifyJson}]`` applies the fixes that help:
``combined`` when it helps, else the helping fix with the largest speed-up, and only while the
editor's text is the text that was verified (:func:`stale_reason`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pygls.exceptions import JsonRpcInvalidParams

from ..analysis.fixes import apply_edits
from ..analysis.text import line_offsets, span_offsets
from ..findings import Edit, Span

VERIFY_REPORT = "torchtriage/verifyReport"
VERIFY_JSON = "verify.json"
REPEAT_LIMITS = (1, 100)


def verify_options(arguments: list[Any] | None) -> list[str]:
    """CLI options from the command's ``{uri, repeat}`` argument."""
    value = arguments[0] if arguments else None
    if not isinstance(value, dict) or value.get("repeat") is None:
        return []
    repeat = value["repeat"]
    low, high = REPEAT_LIMITS
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not low <= repeat <= high:
        raise JsonRpcInvalidParams(f"expected `repeat` to be an integer from {low} to {high}")
    return ["--repeat", str(repeat)]


def verify_path_argument(arguments: list[Any] | None) -> Path:
    """The ``verifyJson`` of a ``{uri, verifyJson}`` argument: a path or a file URI."""
    value = arguments[0] if arguments else None
    path = value.get("verifyJson") if isinstance(value, dict) else None
    if not isinstance(path, str) or not path:
        raise JsonRpcInvalidParams("expected `verifyJson`, the path of the verify.json that torchtriage.verifyFixes returned")
    return Path(unquote(urlparse(path).path)) if path.startswith("file:") else Path(path)


def load_verification(path: Path) -> dict[str, Any]:
    """The verify.json document at ``path`` (InvalidParams when it cannot be read)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JsonRpcInvalidParams(f"cannot read {path}: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("script"), str) or not isinstance(document.get("fixes"), list):
        raise JsonRpcInvalidParams(f"{path} is not a verify.json document")
    return document


def verify_payload(uri: str, path: Path) -> dict[str, Any]:
    """The verifyReport payload: the verify.json document, its ``uri`` and its path."""
    return {**load_verification(path), "uri": uri, "verifyJson": str(path)}


def chosen_fix(document: dict[str, Any]) -> dict[str, Any] | None:
    """What applying the verified fixes writes: ``combined`` when it helps, else the fix that helps
    with the largest speed-up (as ``fix --verify --apply`` chooses); None when no fix helps."""
    combined = document.get("combined")
    if isinstance(combined, dict) and combined.get("helps"):
        return combined
    helping = [fix for fix in document.get("fixes") or [] if isinstance(fix, dict) and fix.get("helps")]
    return max(helping, key=lambda fix: float(fix.get("speedup") or 0.0), default=None)


def verify_summary(document: dict[str, Any]) -> str:
    """One line for the end of the progress: what helps, or that nothing does."""
    baseline = document.get("baseline") or {}
    if baseline.get("step_time_ms") is None:
        return f"the script did not record its steps ({baseline.get('status') or 'failed'})"
    fix = chosen_fix(document)
    if fix is None:
        return "no fix makes the step measurably faster"
    return f"{fix['code']} helps: {float(fix.get('speedup') or 0.0):.1f}× faster"


def fix_edits(fix: dict[str, Any]) -> list[Edit]:
    """The fix's edits (verify.json: 1-based lines and character columns, end exclusive)."""
    try:
        return [Edit(Span(int(e["line"]), int(e["column"]), int(e["end_line"]), int(e["end_column"])), str(e["content"]))
                for e in fix.get("edits") or []]
    except (KeyError, TypeError, ValueError) as exc:
        raise JsonRpcInvalidParams(f"malformed edit in verify.json: {exc}") from exc


def effective_edits(text: str, edits: list[Edit]) -> list[Edit]:
    """The edits ``apply_edits`` writes into ``text``: an edit overlapping a later one is dropped,
    as the verified text was made (a combination's overlapping edits: of two on the same range, the first)."""
    offsets = line_offsets(text)
    ordered = sorted(((*span_offsets(offsets, e.span), e) for e in edits), key=lambda item: (item[0], item[1]), reverse=True)
    kept, last_start = [], len(text) + 1
    for start, end, edit in ordered:  # the order and the rule of ``apply_edits``
        if end > last_start:
            continue
        kept.append(edit)
        last_start = start
    return kept


def stale_reason(document: dict[str, Any], fix: dict[str, Any], editor_text: str) -> str | None:
    """Why the fix's edits may not be applied to the editor's text (None: they may): the editor's
    text is not the script on disk, or the script on disk is not the text that was verified."""
    script = Path(document["script"])
    try:
        on_disk = script.read_text(encoding="utf-8")
    except OSError:
        return f"{script} no longer exists"
    if editor_text != on_disk:
        return f"the editor's text of {script.name} is not the script that was verified (it has unsaved edits or changed on disk)"
    from ..runtime.verify.document import unified_diff

    edits = fix_edits(fix)
    if unified_diff(script, on_disk, apply_edits(on_disk, edits)) != fix.get("diff"):
        return f"{script.name} changed since its fixes were verified"
    return None


__all__ = [
    "VERIFY_JSON", "VERIFY_REPORT", "chosen_fix", "effective_edits", "fix_edits", "load_verification", "stale_reason",
    "verify_options", "verify_path_argument", "verify_payload", "verify_summary",
]
