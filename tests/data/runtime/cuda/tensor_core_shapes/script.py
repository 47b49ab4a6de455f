"""bf16 matmuls whose sizes are not multiples of 8 (a 30,001-word vocabulary, a 1,023-wide hidden layer): TTR601."""
import argparse

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
VOCAB = 30001
BATCH = 4096 if device == "cuda" else 64


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(768, 1023), nn.GELU(), nn.Linear(1023, VOCAB)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
    x = torch.randn(BATCH, 768, device=device)
    y = torch.randint(0, VOCAB, (BATCH,), device=device)
    for step in range(args.steps):
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(x)
        loss = nn.functional.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
