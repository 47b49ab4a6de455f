"""Two nodes simulated on the loopback address: two `torchtriage profile` processes, one rank each.

Each node's run folder covers the ranks that node launched (its ``rank<k>/`` folders, its combined
report); the world is the two together.  Rank 1 (node 1) is slowed: node 0's rank waits for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from dist_support import SCRIPT, free_port, report
from run_support import FAST

from torchtriage.runtime.report.writer import load_schema

pytestmark = pytest.mark.slow


def test_two_nodes_on_loopback_each_report_their_own_ranks(tmp_path: Path) -> None:
    port = free_port()
    nodes = []
    for node in (0, 1):
        out = tmp_path / f"node{node}"
        command = [
            sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(out), *FAST,
            "--nproc-per-node", "1", "--nnodes", "2", "--node-rank", str(node), "--master-addr", "127.0.0.1",
            "--master-port", str(port), str(SCRIPT), "--", "--slow-rank", "1", "--slow-ms", "30",
        ]
        nodes.append((out, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)))
    for out, proc in nodes:
        stdout, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stdout + stderr
    schema = load_schema()
    for node, (out, _) in enumerate(nodes):
        combined = report(out)
        jsonschema.validate(combined, schema)
        ranks = combined["ranks"]
        assert ranks["covered"] == [node] and ranks["shown_rank"] == node  # its own rank, and only it
        assert ranks["world_size"] == 2 and ranks["nnodes"] == "2" and ranks["node_rank"] == node
        assert [p.name for p in out.glob("rank*")] == [f"rank{node}"]
        assert ranks["stragglers"] == [] and "at least 2 ranks" in ranks["straggler_rule"]["note"]
        [entry] = ranks["per_rank"]
        meta = json.loads((out / f"rank{node}" / "agent.json").read_text())["meta"]["rank"]
        assert meta["node_rank"] == node and meta["local_rank"] == 0 and meta["master"] == f"127.0.0.1:{port}"
        [trace] = (out / "tb" / out.name).iterdir()
        assert trace.name.endswith(f"_{node}.pt.trace.json.gz")
    rank0, rank1 = (report(out)["ranks"]["per_rank"][0] for out, _ in nodes)
    # the slowed rank on node 1 loads data; node 0's rank spends that time waiting in the all-reduce
    assert rank1["data_loading_share"] > 0.4 and rank0["communication_share"] > 0.4
    # rank 0's all-reduce is in flight while it waits for rank 1 to arrive (30 ms of loading); rank 1's only transfers
    assert rank0["communication"]["in_flight_ms"] - rank1["communication"]["in_flight_ms"] > 15
