"""fp16 autocast with a GradScaler that skips every other optimizer step (inf gradients); one .item() per step."""
import argparse

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
DTYPE = torch.float16 if device == "cuda" else torch.bfloat16


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**4, growth_interval=1)
    x = torch.randn(2048, 1024, device=device)
    for step in range(args.steps):
        with torch.autocast(device, dtype=DTYPE):
            loss = model(x).float().pow(2).mean()
        if step % 2:
            loss = loss * float("inf")  # overflow: the scaler skips opt.step() this iteration
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        marker = loss.item()


if __name__ == "__main__":
    main()
