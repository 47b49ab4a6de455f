"""GPU idle gaps on a CUDA profile built in the tests (cuda_trace.py): the CPU line and event in each,
evidence on the verdict of their line, and TTR604 where nothing else explains them."""

from __future__ import annotations

from typing import Any

import pytest

from torchtriage.runtime.attribution.lines import build_profile
from torchtriage.runtime.diagnosis.bottleneck import diagnose

from cuda_trace import LOG_BODY


def test_gaps_name_the_cpu_line_and_event_in_each(raw: dict[str, Any]) -> None:
    profile = build_profile(raw)
    big = [g for g in profile.gpu_gaps if g.duration_us >= 5000]
    assert [g.step for g in big] == [0, 1, 2] and all(g.duration_us == pytest.approx(5100) for g in big)
    step1 = big[1]
    assert (step1.line, step1.cpu, step1.exact, step1.probes) == (13, "sleep", True, 4)  # the long sleep of step 1
    for gap in (big[0], big[2]):  # log_metrics' own Python: the probes know the function, the samples the line
        assert (gap.function, gap.line, gap.exact, gap.probes) == ("log_metrics", LOG_BODY, True, 4)
    assert {g.next_kernel for g in big} == {"vectorized_elementwise_kernel"}


def test_gaps_are_evidence_on_the_verdict_of_their_line_and_a_finding_where_unexplained(raw: dict[str, Any]) -> None:
    diagnosis = diagnose(build_profile(raw))
    assert diagnosis.bottleneck.kind == "host_sync"
    assert any("The GPU is idle" in e.text for e in diagnosis.bottleneck.evidence)
    [python] = [v for v in diagnosis.secondary if v.kind == "python_overhead"]
    gap_lines = [e.line for e in python.evidence if e.text.startswith("GPU idle")]
    assert sorted(gap_lines) == [13, LOG_BODY, LOG_BODY]
    ttr604 = {f.span.line: f for f in diagnosis.runtime_findings if f.code == "TTR604"}
    assert set(ttr604) == {13, LOG_BODY}  # line 12's sync is TTR101's business
    assert "3.40 ms per step (40%)" in ttr604[LOG_BODY].message and "(log_metrics)" in ttr604[LOG_BODY].message
