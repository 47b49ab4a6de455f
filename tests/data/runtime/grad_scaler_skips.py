"""Mixed precision with a GradScaler that skips every other optimizer step (inf gradients);
one .item() per iteration marks iterations."""
import torch

model = torch.nn.Linear(32, 32)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=1)
x = torch.randn(8, 32)
for step in range(30):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    if step % 2:
        loss = loss * float("inf")  # overflow: the scaler skips opt.step() this iteration
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    marker = loss.item()
