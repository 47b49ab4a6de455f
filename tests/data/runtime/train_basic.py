"""Tiny training loop: helper with operator-slot matmul, .item() every step."""
import torch


def helper(a, b):
    c = a @ b
    return c * 2


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 256)
    w = torch.randn(256, 2048)  # big enough for frame samples to land in the matmul
    for step in range(20):
        y = model(x)
        z = helper(y, w)
        loss = z.square().mean()
        loss.backward()
        value = loss.item()
        opt.step()
        opt.zero_grad()
    print("done", value > 0)


if __name__ == "__main__":
    main()
