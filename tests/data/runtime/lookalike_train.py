"""Softmax and matmul chains that are not attention: a classifier with an MLP head, plain SGD."""
import torch
import torch.nn.functional as F

torch.set_num_threads(1)


def mlp(x, w1, w2):
    h = torch.relu(x @ w1.transpose(-2, -1))
    return h @ w2


def main():
    torch.manual_seed(0)
    w1 = torch.randn(256, 128, requires_grad=True)
    w2 = torch.randn(256, 10, requires_grad=True)
    opt = torch.optim.SGD([w1, w2], lr=0.01)
    x = torch.randn(512, 128)
    y = torch.randint(0, 10, (512,))
    for step in range(30):
        logits = mlp(x, w1, w2)
        probs = F.softmax(logits, dim=-1)
        loss = F.nll_loss(probs.clamp_min(1e-6).log(), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
