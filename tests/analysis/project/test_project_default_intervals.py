"""Issue 25: a logging guard whose interval is a command-line option defaulting to 1 in another file
(``if iter % args.print_every == 0:`` with ``--print_every`` default 1 in ``parser/parser_kgat.py``): in a
default run it holds on every step, so what it logs is read every step.  An invented project, no code of
any labelled repository; the same guard with a default of 100 is the look-alike that stays rare."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

PARSER = """
    import argparse


    def parse_args():
        parser = argparse.ArgumentParser()
        parser.add_argument("--print_every", type=int, default={every})
        parser.add_argument("--lr", type=float, default=1e-3)
        return parser.parse_args()
"""
TRAIN = """
    import logging
    import torch
    from parser.parser_kgat import parse_args


    def main(model, loader):
        args = parse_args()
        model.cuda()
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, fused=True)
        for it, (users, items) in enumerate(loader, 1):
            loss = model(users.cuda(non_blocking=True), items.cuda(non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if it % args.print_every == 0:
                logging.info("Iter {:04d} | Iter Loss {:.4f}".format(it, loss.item()))
"""


def _findings(every: int) -> set[tuple[int, str]]:
    files = {"parser/__init__.py": "", "parser/parser_kgat.py": PARSER.replace("{every}", str(every)), "main.py": TRAIN}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    return {(f.span.line, f.code) for f in proj.analyze("main.py")}


def test_an_interval_defaulting_to_one_logs_every_step() -> None:
    assert (16, "TT102") in _findings(1)


def test_an_interval_defaulting_to_a_hundred_stays_rare() -> None:
    assert (16, "TT102") not in _findings(100)


def test_the_language_servers_view_gives_the_same_findings() -> None:
    from torchtriage.analysis.engine import IncrementalAnalyzer

    files = {"parser/__init__.py": "", "parser/parser_kgat.py": PARSER.replace("{every}", "1"), "main.py": TRAIN}
    proj = Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())
    alone = IncrementalAnalyzer("main.py").analyze(textwrap.dedent(TRAIN).lstrip("\n"), project=proj.view("main.py"))
    assert {(f.span.line, f.code) for f in alone} == {(f.span.line, f.code) for f in proj.analyze("main.py")}
