"""Diagnostic for one GPU session (put this folder first on PYTHONPATH, set TT_DIAG_OUT): when the profiling agent looks
for the recorded steps in the event tree, write what it was given and where every ``ProfilerStep#N`` node sits."""

import json
import os

OUT = os.environ.get("TT_DIAG_OUT")


def _patch(step_timeline) -> None:  # type: ignore[no-untyped-def]
    original = step_timeline.StepTimeline._find_steps

    def find_steps(self, roots, hints=None):  # type: ignore[no-untyped-def]
        original(self, roots, hints)
        found = []
        stack = [(r, ()) for r in roots]
        while stack:
            node, path = stack.pop()
            name = node.name
            if name.startswith("ProfilerStep#"):
                found.append({"name": name, "start": node.start_time_ns, "end": node.end_time_ns, "tid": node.start_tid,
                              "ancestors": list(path)})
            stack.extend((kid, path + (f"{node.tag.value}:{name}:{node.start_time_ns}:{node.end_time_ns}",)) for kid in node.children)
        with open(OUT, "w", encoding="utf-8") as handle:
            json.dump({"hints": hints, "steps": [(s.index, s.start_ns, s.end_ns) for s in self.steps], "all": found,
                       "roots": len(roots)}, handle, indent=1)

    step_timeline.StepTimeline._find_steps = find_steps


class _AfterImport:
    """Patch the agent's step_timeline (imported as ``_torchtriage_agent.step_timeline``) once it is loaded."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if not name.endswith("step_timeline"):
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):  # type: ignore[no-untyped-def]
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if OUT:
    import sys

    sys.meta_path.insert(0, _AfterImport())
