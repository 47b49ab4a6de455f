import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
model = torch.nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(dataset, batch_size=32, num_workers=4)

for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    total = loss.item()
