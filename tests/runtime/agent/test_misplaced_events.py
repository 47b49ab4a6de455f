"""Events torch's profiler tree puts under a GPU kernel: the agent still finds and walks them.

On an H200 (torch 2.11, 2026-11-28) the event tree of examples/big_matmul.py hung ``ProfilerStep#5`` under
a GEMM kernel of the step before: the kernel's span (GPU time) enclosed the optimizer hook that called
``prof.step()``, and the tree nests by time.  The run kept 3 of 30 recorded steps in one run and 29 in
another.  These trees copy that shape (names and nesting from the H200 run, times shortened) with
plain objects standing in for torch's tree nodes, which only a GPU run makes."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from torchtriage.runtime.agent.event_tree import KINETO, PY_CALL, TORCH_OP, with_misplaced
from torchtriage.runtime.agent.step_timeline import StepTimeline


@dataclass
class Node:
    name: str
    kind: int
    start_time_ns: int
    end_time_ns: int
    children: list[Any] = field(default_factory=list)
    start_tid: int = 1

    @property
    def tag(self) -> SimpleNamespace:
        return SimpleNamespace(value=self.kind)


def h200_tree() -> list[Node]:
    """big_matmul's tree around steps 4-6: step 5 begins inside step 4's optimizer hook, which sits under a kernel."""
    step5 = Node("ProfilerStep#5", TORCH_OP, 2_580, 4_520)
    hook = Node("session.py(130): _on_step", PY_CALL, 2_450, 2_650, [Node("profiler.py(884): step", PY_CALL, 2_500, 2_590, [step5])])
    kernel = Node("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_ffma", KINETO, 1_990, 2_700, [hook])
    launch = Node("cudaLaunchKernel", KINETO, 1_980, 1_985, [Node("void at::native::reduce_kernel", KINETO, 1_990, 2_000)])
    wrapper = Node("optimizer.py(512): wrapper", PY_CALL, 1_980, 2_670, [launch, kernel])
    step4 = Node("ProfilerStep#4", TORCH_OP, 0, 2_580)
    step6 = Node("ProfilerStep#6", TORCH_OP, 4_520, 6_600)
    main = Node("big_matmul.py(38): main", PY_CALL, 0, 7_000, [step4, wrapper, step6])
    return [main]


def test_a_step_under_a_kernel_is_found_with_and_without_the_agents_clock_hints() -> None:
    for hints in (None, [(-100, 10), (2_500, 2_590), (4_400, 4_530)]):
        timeline = StepTimeline.__new__(StepTimeline)
        timeline._find_steps(h200_tree(), hints)
        assert [s.index for s in timeline.steps] == [4, 5, 6], hints


def test_a_kernels_children_join_its_parent_a_runtime_calls_kernels_stay_under_it() -> None:
    [main] = h200_tree()
    [wrapper] = [n for n in main.children if n.name.startswith("optimizer.py")]
    nodes, moved = with_misplaced(wrapper.children)
    assert moved and [n.name for n in nodes] == ["cudaLaunchKernel", wrapper.children[1].name, "session.py(130): _on_step"]
    assert with_misplaced(main.children) == (main.children, False)  # nothing misplaced: the same list, no copy
