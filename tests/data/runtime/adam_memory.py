"""A wide MLP trained with Adam on a tiny batch: Adam's two moments outweigh everything else in memory."""
import torch

torch.set_num_threads(1)


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(4, 2048)
    for step in range(20):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
