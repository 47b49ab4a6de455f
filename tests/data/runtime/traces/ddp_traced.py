"""Two DDP ranks on CPU (gloo) that record their own traces with plain torch.profiler into one folder (tests/runtime/analyze).

    python ddp_traced.py --tb DIR [--slow-rank K --slow-ms M] [--world N]

Starts N (2) processes of itself on 127.0.0.1 (a tcp:// store on a free port), each running a tiny
DDP model under ``profile(schedule=schedule(wait=1, warmup=1, active=4, repeat=1), with_stack=True,
on_trace_ready=tensorboard_trace_handler(DIR))``: one ``<host>_<pid>.<ms>.pt.trace.json`` per rank,
with ``distributedInfo`` in its header.  Rank K sleeps M ms in every step (a straggler).
"""

import argparse
import os
import socket
import subprocess
import sys
import time

STEPS = 8


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank, world_size=args.world)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
    delay = args.slow_ms / 1000.0 if args.rank == args.slow_rank else 0.0
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=4, repeat=1), with_stack=True,
                 on_trace_ready=tensorboard_trace_handler(args.tb)) as prof:
        for _ in range(STEPS):
            if delay:
                time.sleep(delay)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tb", required=True)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--rank", type=int, default=-1)
    parser.add_argument("--init", default="")
    args = parser.parse_args()
    if args.rank >= 0:
        rank_main(args)
        return
    init = f"tcp://127.0.0.1:{free_port()}"
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--rank", str(rank), "--init", init])
             for rank in range(args.world)]
    codes = [p.wait(timeout=120) for p in procs]
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
