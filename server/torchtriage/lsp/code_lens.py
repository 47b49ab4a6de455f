"""Code lenses on step-loop headers: profile the script, and the last profile's verdict."""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

from lsprotocol import types

from ..analysis import parse_source
from ..analysis.context import ModuleContext
from ..analysis.notebooks import build_virtual_module
from ..findings import Finding
from .diagnostics import DiagnosticsEngine
from .documents import DocumentState, DocumentStore
from .texts import EditorTexts

PROFILE_TITLE = "▶ Profile this script"


def step_loop_lines(source: str) -> list[int]:
    """1-based header lines of the step loops in a module (none if it does not parse)."""
    tree = parse_source(source)
    if isinstance(tree, Finding):
        return []
    return [region.header_line for region in ModuleContext(source=source, tree=tree).hot.step_loops]


def _loops_per_target(state: DocumentState, texts: list[tuple[str, str]]) -> dict[str, list[int]]:
    if not state.notebook:
        uri, text = texts[0]
        return {uri: step_loop_lines(text)}
    joined = build_virtual_module([text for _, text in texts])
    result: dict[str, list[int]] = {uri: [] for uri, _ in texts}
    for line in step_loop_lines(joined.source):
        cell, local = joined.to_cell(line)
        result[texts[cell][0]].append(local)
    return result


class CodeLenses:
    """A "Profile this script" lens on each step-loop header, and the last profile's verdict beside it."""

    def __init__(self, store: DocumentStore, engine: DiagnosticsEngine, texts: EditorTexts, executor: Executor) -> None:
        self.store = store
        self.engine = engine
        self.texts = texts
        self.executor = executor

    async def lenses(self, params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        state = self.store.get(uri)
        if state is None:
            return []
        await self.engine.current(state)
        if uri not in state.targets:
            return []
        generation = state.generation
        texts = [(target_uri, text) for target_uri, _, text in self.texts.snapshot(state)]
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        loops = await loop.run_in_executor(self.executor, _loops_per_target, state, texts)
        if generation == state.generation:
            for target_uri, lines in loops.items():
                if target_uri in state.targets:
                    state.targets[target_uri].step_loops = lines
        lines = state.targets[uri].step_loops if uri in state.targets else []
        result = []
        for line in lines:
            where = types.Range(start=types.Position(line=line - 1, character=0), end=types.Position(line=line - 1, character=0))
            result.append(
                types.CodeLens(range=where, command=types.Command(title=PROFILE_TITLE, command="torchtriage.profile", arguments=[state.uri]))
            )
            if state.profile is not None:
                summary = state.profile
                result.append(
                    types.CodeLens(
                        range=where,
                        command=types.Command(
                            title=summary.lens_title, command="torchtriage.showReport", arguments=[summary.report_path]
                        ),
                    )
                )
        return result
