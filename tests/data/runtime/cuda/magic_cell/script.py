
for step in range(40):
    loss = model(data).square().mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    print(f"step {step}: {loss.item():.4f}")
