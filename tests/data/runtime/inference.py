"""Inference only: no optimizer, no DataLoader; steps come from the outermost forward."""
import torch

model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
model.eval()
batch = torch.randn(64, 512)  # the forward clearly outweighs the argmax
with torch.no_grad():
    for _ in range(40):
        logits = model(batch)
        best = logits.argmax(dim=1).sum().item()
