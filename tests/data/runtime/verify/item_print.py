"""A small regression whose every step prints the loss tensor and reads it with .item(): `fix --verify`'s
logging case.  On a CPU the printing is what costs; on a GPU each line also waits for the step."""
import torch

torch.manual_seed(0)
data = torch.randn(4096, 16)
target = data @ torch.randn(16, 1) + 0.1 * torch.randn(4096, 1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(400):
    index = torch.randint(0, 4096, (64,))
    x, y = data[index], target[index]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("loss", loss)
    print(f"step {step}: {loss.item():.4f}")
