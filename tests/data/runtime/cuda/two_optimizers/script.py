"""Two optimizers step every iteration on the GPU; one .item() per iteration marks iterations."""
import argparse

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    encoder = torch.nn.Linear(1024, 1024).to(device)
    decoder = torch.nn.Linear(1024, 1024).to(device)
    opt_a = torch.optim.SGD(encoder.parameters(), lr=0.01)
    opt_b = torch.optim.Adam(decoder.parameters(), lr=0.01)
    x = torch.randn(1024, 1024, device=device)
    for step in range(args.steps):
        loss = decoder(encoder(x)).pow(2).mean()
        loss.backward()
        opt_a.step()
        opt_b.step()
        opt_a.zero_grad()
        opt_b.zero_grad()
        marker = loss.item()


if __name__ == "__main__":
    main()
