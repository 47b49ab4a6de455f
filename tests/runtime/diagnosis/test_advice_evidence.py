"""Which static findings a verdict quotes as evidence, and how."""

from __future__ import annotations

from torchtriage.runtime.diagnosis.crosslink import StaticLink, link_evidence


def _link(code: str, line: int, share: float, category: str = "data_loading") -> StaticLink:
    return StaticLink(
        code=code, name=code.lower(), path="/w/train.py", line=line, end_line=line, message=f"{code} message",
        category=category, self_us_per_step=share * 10_000, line_share=share, category_share=0.9,
    )


def test_duplicates_collapse_and_the_cause_is_quoted_on_cpu() -> None:
    links = [_link("TT301", 56, 0.002), _link("TT301", 56, 0.002), _link("TT302", 51, 0.0)]
    texts = [e.text for e in link_evidence(links, "data_loading", device="cpu")]
    assert texts == ["TT302 at train.py:51 points at the cause: TT302 message"]


def test_costly_lines_come_first_and_cuda_rules_count_on_cuda() -> None:
    links = [_link("TT302", 51, 0.0), _link("TT301", 56, 0.002), _link("TT303", 50, 0.0), _link("TT305", 60, 0.2)]
    texts = [e.text for e in link_evidence(links, "data_loading", device="cuda")]
    assert texts[0].startswith("TT305 at train.py:60 costs 20% of step time")
    assert len(texts) == 3 and all("points at the cause" in t for t in texts[1:])


def test_only_the_verdict_category_is_quoted() -> None:
    links = [_link("TT101", 10, 0.3, "host_sync"), _link("TT201", 11, 0.0, "memory")]
    assert [e.line for e in link_evidence(links, "host_sync")] == [10]
    assert [e.line for e in link_evidence(links, "memory_growth")] == [11]
