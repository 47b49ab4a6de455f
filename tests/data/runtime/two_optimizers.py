"""Two optimizers step every iteration; one .item() per iteration marks iterations."""
import torch

encoder = torch.nn.Linear(32, 32)
decoder = torch.nn.Linear(32, 32)
opt_a = torch.optim.SGD(encoder.parameters(), lr=0.01)
opt_b = torch.optim.Adam(decoder.parameters(), lr=0.01)
x = torch.randn(8, 32)
for step in range(30):
    loss = decoder(encoder(x)).pow(2).mean()
    loss.backward()
    opt_a.step()
    opt_b.step()
    opt_a.zero_grad()
    opt_b.zero_grad()
    marker = loss.item()
