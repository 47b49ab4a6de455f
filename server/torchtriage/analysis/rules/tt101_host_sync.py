"""TT101: reading a tensor's value on the host every step (``.item()``, ``.cpu()``...)."""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterator

from ...findings import Applicability, Fix, Severity
from ..fixes import call_method, replace_expression
from ..hotloops.guards import ends_the_run
from ..hotloops.finder import HotRegion
from ..hotloops.step_markers import is_loader_like
from ._helpers import is_device_move, method_name
from ._steplog import enclosing_log_call, guard_statement_fix, step_counter
from ._forward_code import forward_calls
from ._legacy_reads import legacy_scalar_read
from ._tensors import oracle
from .tt103_tensor_branch import is_branch_test
from ._other_devices import on_other_accelerator
from .base import Invalid, Report, Rule, RuleContext, Valid

_METRIC_WRITES = frozenset({"add_scalar", "add_scalars", "log", "log_metrics"})


class HostSyncInStep(Rule):
    code = "TT101"
    name = "host-sync-in-step"
    severity = Severity.WARNING
    category = "host_sync"
    summary = "A tensor value is read on the host every step (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `float(t)`)."
    why = """
        Reading a tensor's value on the CPU forces the host to wait until every
        queued kernel has finished: the GPU pipeline drains and the next step
        cannot be queued ahead. Practitioners measure roughly 1-5 ms lost per
        forced sync, every step; in a profile it shows as `aten::item` /
        `aten::_local_scalar_dense` and `cudaStreamSynchronize` with the GPU
        idle behind it. On CPU-only runs the cost is smaller but the pattern
        still blocks any future move to an accelerator. In a file that never
        uses CUDA (and that no CUDA file imports), `.cpu()` and `.numpy()` copy
        nothing and wait for nothing, so only the value reads (`.item()`,
        `.tolist()`, `float(t)`) are reported there.
    """
    fix_description = (
        "Keep running sums on the device (`total += loss.detach()`) and read them once after the "
        "loop, or read values only every N steps (`if step % 100 == 0:`)."
    )
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(); optimizer.step()
            running_loss += loss.item()
    """
    example_good = """
        running_loss = torch.zeros((), device=device)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(); optimizer.step()
            running_loss += loss.detach()
        print(running_loss.item() / len(loader))  # one sync per epoch
    """
    VALID = (
        Valid(
            """
            # a host copy only in the branch for Apple's MPS (an op it lacks): a CUDA run never takes it
            import torch

            def spectro(x, n_fft=512):
                is_mps = x.device.type == "mps"
                if is_mps:
                    x = x.cpu()
                return torch.stft(x, n_fft, window=torch.hann_window(n_fft, device=x.device), return_complex=True)

            for wav, target in loader:
                wav, target = wav.cuda(non_blocking=True), target.cuda(non_blocking=True)
                loss = (model(spectro(wav)) - target).abs().mean()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # the lengths are read while the batch is still on the host: the step copies it to the GPU below
            import torch

            def to_cuda(*tensors):
                return [t.cuda(non_blocking=True) for t in tensors]

            for x, lengths in loader:
                longest = lengths.max().item()
                steps = int(lengths.sum())
                x, lengths = to_cuda(x, lengths)
                loss = model(x[:, :longest], lengths)
                loss.backward()
                optimizer.step()

            for x, lengths in loader:
                longest = lengths.max().item()
                x, lengths = x.cuda(non_blocking=True), lengths.cuda(non_blocking=True)
                loss = model(x[:, :longest], lengths)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a normalising constant read once: the sentinel is replaced the first time
            norm_const = -1
            for x, y in loader:
                loss = criterion(model(x.cuda()), y.cuda())
                if norm_const < 0:
                    norm_const = loss.detach().mean().item()
                (loss / norm_const).backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a numpy scalar's .item(): ``astype`` is numpy's, no tensor has it
            import numpy as np

            def sparse_attention(q, k, factor):
                top = factor * np.ceil(np.log(k.size(1))).astype("int").item()
                return q @ k[:, :top].transpose(1, 2)

            for x, y in loader:
                loss = criterion(sparse_attention(model(x.cuda()), y.cuda(), 5), y.cuda())
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % log_every == 0:
                    writer.add_scalar("loss", loss.item(), step)
            """
        ),
        Valid(
            """
            for epoch in range(epochs):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                val = loss.item()   # once per epoch, after the step loop
            """
        ),
        Valid(
            """
            import numpy as np
            for x, y in loader:
                lr = float(args.lr)            # not tensors
                n = int(len(x))
                ratio = float(np.mean(weights))
                scale = np.float32(2.0).item()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # CPU-only script: .cpu() / .numpy() copy nothing and wait for nothing
            for x, y in loader:
                out = model(x)
                preds = out.argmax(1).cpu().numpy()
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            for i, (x, y) in enumerate(train_loader):
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
                print(f"loss {loss.item():.3f}")   # TT102 reports reads inside print/log calls
                if i == len(train_loader) - 1:
                    last = loss.item()
            model.cpu()
            """
        ),
        Valid(
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pack_padded_sequence

            rnn = nn.LSTM(8, 8, batch_first=True).cuda()
            for x, lengths in loader:
                x, lengths = x.cuda(non_blocking=True), lengths.cuda(non_blocking=True)
                packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True)  # the lengths must be on the host
                host = lengths.cpu().numpy()
                again = nn.utils.rnn.pack_padded_sequence(x, host, batch_first=True, enforce_sorted=False)
                loss = rnn(packed)[1][0].sum() + rnn(again)[1][0].sum()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # the .cpu() waits once; what is computed from the host copy afterwards waits for nothing
            import torch
            for x, y in loader:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                hits = out.argmax(1).eq(y).cpu()  # noqa: TT101 (the one sync, kept on purpose)
                correct = hits.sum()
                accuracy = correct.item() / len(y) + hits.float().mean().item()
            """
        ),
        Valid(
            """
            # arithmetic, comparisons and torch functions of a host copy stay on the host (torch will not mix a
            # host tensor with a device one): the reads after the one .cpu() wait for nothing
            import torch
            for image, target in loader:
                pred = model(image.cuda())
                pred.mean().backward()
                optimizer.step()
                err = torch.sum((pred[0].cpu() - target) ** 2, dim=0).sqrt()  # noqa: TT101 (the one sync)
                err = err.view(-1)
                bad = ((err > 3.0) & (err / target.norm() > 0.05)).float()
                errors.append(err.mean().item())
                outliers.append(bad.numpy())
                both = torch.cat([err, -err])
                spread.append(both.max().item())
                assert torch.sum(err > both.max()).item() == 0
            """
        ),
        Valid(
            """
            # the read runs only on the steps a flag set earlier lets through (the flag is as rare as its test)
            import torch
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                last_batch = i == len(loader) - 1
                is_console_step = (i % args.log_every == 0) or last_batch
                is_metric_step = (i % metric_every == 0) or is_console_step
                if is_metric_step:
                    losses.update(loss.item())
            """
        ),
        Valid(
            """
            # the loader's batch is on the host until the loop moves it: reading it first waits for nothing
            import torch
            for points, target, meta in loader:
                points = points.data.numpy()        # host augmentation, then back to a tensor
                points = torch.from_numpy(jitter(points))
                centers = meta["center"].numpy()    # never moved: the loader's host tensors
                points, target = points.cuda(non_blocking=True), target.long().cuda(non_blocking=True)
                loss = criterion(model(points), target)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a loop over a DataLoader draws host tensors, even where the loop itself moves none of them
            # (the model's predict moves its input): reading them waits for nothing
            import torch
            for epoch in range(10):
                for x, y in train_loader:
                    loss = criterion(model(x.cuda()), y.cuda())
                    loss.backward()
                    optimizer.step()
                    for ii, (imgs, sizes, gt_boxes) in tqdm(enumerate(val_loader)):
                        sizes = [sizes[0][0].item(), sizes[1][0].item()]
                        boxes = model.predict(imgs, [sizes])
                        all_gt += list(gt_boxes.numpy())
            """
        ),
        Valid(
            """
            # the ids a batch carries beside its images stay on the host: an element of them, paired with
            # each output, waits for nothing
            import torch
            for epoch in range(10):
                for images, image_ids in loader:
                    images = images.cuda(non_blocking=True)
                    loss = model(images).mean()
                    loss.backward()
                    optimizer.step()
                    captions = model.generate(images)
                    for caption, image_id in zip(captions, image_ids):
                        results.append({"id": image_id.item(), "caption": caption})
                    for n, (image_id, score) in enumerate(zip(image_ids, scores)):
                        ranks[n] = int(image_id)
            """
        ),
        Valid(
            """
            # a buffer read outside the forward pass (once, when printed), and a plain Python attribute in it
            import torch
            from torch import nn

            class Queue(nn.Module):
                def __init__(self, size):
                    super().__init__()
                    self.size = size
                    self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

                def extra_repr(self):
                    return f"size={self.size}, ptr={int(self.ptr)}"

                def forward(self, keys):
                    return keys[: self.size]
            """
        ),
        Valid(
            """
            # tensors a torch factory made on the host in CUDA code: .cpu() copies nothing and waits for nothing
            import torch
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                viz.line(X=torch.ones((1, 3)).cpu() * i, Y=torch.Tensor([a, b, a + b]).unsqueeze(0).cpu(), win=plot)
            """
        ),
        Valid(
            """
            # the action a policy's chooser returns to the rollout (by its name, or handed to env.step here)
            import torch

            class Agent:
                def explore(self, state):
                    with torch.no_grad():
                        action = self.policy(torch.as_tensor(state, device="cuda")).sample()
                    return action.item()

                def decide(self, state):
                    return self.policy(torch.as_tensor(state, device="cuda")).argmax().item()

                def select_action(self, state):
                    return self.policy(torch.as_tensor(state, device="cuda")).sample().item()

                def train_episode(self):
                    state, done = self.env.reset(), False
                    while not done:
                        state, reward, done, _ = self.env.step(self.explore(state))
                        greedy = self.decide(state)
                        state, reward, done, _ = self.env.step(greedy)
                        imagined, imagined_reward = self.simulate(self.select_action(state))
                        loss = self.loss(imagined, imagined_reward)
                        loss.backward()
                        self.optimizer.step()
            """
        ),
        Valid(
            """
            # the action handed to the simulator: env.step takes host arrays and numbers
            import torch

            for step in range(total_steps):
                with torch.no_grad():
                    q_values = q_network(torch.as_tensor(obs, device="cuda"))
                actions = torch.argmax(q_values, dim=1).cpu().numpy()
                clipped = actions.clip(0, n_actions - 1)
                obs, rewards, dones, infos = envs.step(clipped)
                loss = td_loss(q_network, replay.sample(32))
                loss.backward()
                optimizer.step()

            for episode in range(episodes):
                s = env.reset()
                for t in range(horizon):
                    a = policy(torch.as_tensor(s, device="cuda")).sample().item()
                    s, r, done, info = self.eval_env.step(a)
                    loss = policy.loss(s, a, r)
                    loss.backward()
                    optimizer.step()
            """
        ),
        Valid(
            """
            # a helper the step calls before it moves the batch: its reads are of host tensors
            import numpy as np
            import torch
            from .utils import to_cuda

            class Trainer:
                def __init__(self, model):
                    self.model = model.cuda()

                def mask_out(self, x, lengths):
                    pred_mask = torch.from_numpy(np.random.rand(*x.shape) <= 0.15)
                    pred_mask[x == self.pad_index] = 0
                    pred_mask = pred_mask.view(-1)
                    n = pred_mask.sum().item()
                    longest = lengths.max().item()
                    return x[:longest], pred_mask[:n]

                def mlm_step(self):
                    x, lengths = self.get_batch("train")
                    x, pred_mask = self.mask_out(x, lengths)
                    x, lengths, pred_mask = to_cuda(x, lengths, pred_mask)
                    loss = self.model(x, lengths, pred_mask)
                    loss.backward()
                    self.optimizer.step()

            trainer = Trainer()
            for batch in loader:
                trainer.mlm_step()
            """
        ),
        Valid(
            """
            # a tensor built on the host from a list: reading it waits for nothing
            import torch

            for x, sentences in loader:
                lengths = torch.LongTensor([len(s) + 2 for s in sentences])
                longest = lengths.max().item()
                loss = model(x.cuda(non_blocking=True)[:longest])
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a test on a tensor written with bool(...) is TT103's; a sample copied to the host to be saved
            import torch

            optimizer = torch.optim.Adam(netG.parameters(), fused=True)
            for steps, (x, voc) in enumerate(train_loader):
                loss = criterion(netG(voc.cuda(non_blocking=True)), x.cuda(non_blocking=True))
                if bool(loss == 0):
                    continue
                loss.backward()
                optimizer.step()
                pred_audio = netG(voc.cuda(non_blocking=True))
                pred_audio = pred_audio.squeeze().cpu()
                save_sample(root / f"generated_{steps}.wav", 22050, pred_audio)
                writer.add_audio("generated", netG(voc.cuda()).squeeze().cpu(), steps)
            """
        ),
        Valid(
            """
            # a helper's result read out, but nothing handed to the helper is a tensor
            import torch
            from utils import tally

            model = model.cuda()
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                counts = tally(names, rank)
                history.extend(counts.cpu().numpy().tolist())
            """
        ),
        Valid(
            """
            # nothing says CUDA (the device is a rank number): a copy to the host of a host tensor is free
            for x, y in loader:
                loss = model(x.to(rank)).mean()
                loss.backward()
                optimizer.step()
                history.append(loss.detach().cpu().numpy())
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # the update runs every train_freq env steps: the guard says when the training step runs, not a rare log
            import torch

            class Agent:
                def learn(self):
                    for t in range(self.total_steps):
                        obs = self.env_step(t)
                        if t > self.learning_starts and t % self.train_freq == 0:
                            loss = self.update(self.buffer.sample(32))

                def update(self, batch):
                    x, y = batch
                    loss = (self.net(x.cuda(non_blocking=True)) - y.cuda(non_blocking=True)).pow(2).mean()
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    return loss.item()
            """,
            lines=(17,),
        ),
        Invalid(
            """
            # TF32 for CUDA matmuls: the file runs on CUDA though its device is a rank number
            import torch
            torch.backends.cuda.matmul.allow_tf32 = True
            for x, y in loader:
                loss = model(x.to(rank)).mean()
                loss.backward()
                optimizer.step()
                history.append(loss.detach().cpu().numpy())
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # a step tensor gathered by a helper the analysis cannot follow, then read out to the host
            import torch
            from utils import all_gather

            model = model.cuda()
            for x, y in loader:
                losses = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True),
                                                           reduction="none")
                losses.mean().backward()
                optimizer.step()
                gathered = all_gather(losses.detach(), rank)
                history.extend(gathered.cpu().numpy().tolist())
            """,
            lines=(12,),
        ),
        Invalid(
            """
            # PyTorch 0.3 code: loss.data[0] was the .item() of its day, read every step
            import torch
            from torch.autograd import Variable
            total_loss = 0
            for x, y in loader:
                x, y = Variable(x.cuda(async=True)), Variable(y.cuda(async=True))
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total_loss += loss.data[0]
                first = x.data[0]
            """,
            lines=(11,),
        ),
        Invalid(
            """
            # a model known by its parameters going to the optimizer, whatever its name; a metric's host copy is
            # still a sync when only what the metric computes from it is saved
            import torch

            retinanet = torch.nn.DataParallel(build_retinanet()).cuda()
            optimizer = torch.optim.Adam(retinanet.parameters(), lr=1e-5)
            for iter_num, data in enumerate(dataloader_train):
                classification_loss, regression_loss = retinanet([data["img"].cuda(non_blocking=True), data["annot"]])
                loss = classification_loss.mean() + regression_loss.mean()
                loss.backward()
                optimizer.step()
                loss_hist.append(float(loss))
                _, acc, cnt, pred = accuracy(loss.detach().cpu().numpy(), data["annot"])
                save_debug_images(data, pred)
            """,
            lines=(12, 13),
        ),
        Invalid(
            """
            # a parameter kept on the module reads as a buffer does, in the score function a dispatch table picks
            import torch
            import torch.nn as nn

            class KGEModel(nn.Module):
                def __init__(self, gamma):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)

                def TransE(self, head, tail):
                    return self.gamma.item() - torch.norm(head - tail, p=1, dim=2)

                def DistMult(self, head, tail):
                    return (head * tail).sum(dim=2)

                def forward(self, head, tail):
                    model_func = {"TransE": self.TransE, "DistMult": self.DistMult}
                    if self.model_name in model_func:
                        return model_func[self.model_name](head, tail)
                    raise ValueError(self.model_name)
            """,
            lines=(11,),
        ),
        Invalid(
            """
            # an evaluation loop over zip(progress bar, loader): the loader's batches are the step's data
            import torch
            from tqdm import trange

            class Trainer:
                def evaluate(self, eval_loader):
                    with trange(len(eval_loader)) as bar:
                        for i, (data, target) in zip(bar, eval_loader):
                            val_loss = self._evaluate_batch(data, target, i)
                    return val_loss

                def _evaluate_batch(self, data, target, batch_idx):
                    with torch.no_grad():
                        X = {}
                        for k, v in data.items():
                            X[k] = v.to(self.device)
                        loss = self.loss_fn(self.model(X), target.to(self.device))
                        self.running_loss += loss.item()
                    return self.running_loss / (batch_idx + 1)
            """,
            lines=(18,),
        ),
        Invalid(
            """
            # with CUDA as the default tensor type, factories without device= make device tensors
            import torch

            torch.set_default_tensor_type("torch.cuda.FloatTensor")
            for x, y in loader:
                weights = torch.ones(len(y))
                weights[y == 0] = 0.5
                total = weights.sum().item()
                loss = criterion(model(x.cuda()), y.cuda()) / total
                loss.backward()
                optimizer.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # torchtext batches hand their fields through getattr: device tensors like any other
            for batch in train_iter:
                src = getattr(batch, "src")
                tgt = getattr(batch, "trg")
                mask = tgt.ne(pad)
                loss = criterion(model(src, tgt)[mask], tgt[mask])
                loss.backward()
                optimizer.step()
                tokens += mask.sum().item()
            """,
            lines=(9,),
        ),
        Invalid(
            """
            # read after the copy: on the device
            import torch
            for x, lengths in loader:
                x, lengths = x.cuda(), lengths.cuda()
                longest = lengths.max().item()
                loss = model(x[:, :longest], lengths)
                loss.backward()
                optimizer.step()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            # the output a helper of the class returns in a tuple, copied to the host every validation step
            import torch

            class Experiment:
                def _predict(self, x, y):
                    outputs = self.model(x.to(self.device))
                    return outputs, y

                def vali(self, loader, criterion):
                    losses = []
                    with torch.no_grad():
                        for x, y in loader:
                            outputs, y = self._predict(x, y)
                            pred = outputs.detach().cpu()
                            losses.append(criterion(pred, y))
                    return losses

            Experiment().vali(val_loader, torch.nn.MSELoss())
            model = torch.nn.Linear(4, 4).cuda()
            """,
            findings=(("14:24-14:46", "`.cpu()` on `outputs.detach()` every step forces a GPU->CPU sync: collect on the device and "
                                      "move once after the loop"),),
        ),
        Invalid(
            """
            # arithmetic of device tensors is on the device: a host copy elsewhere in the step does not move it
            import torch
            for image, target in loader:
                image, target = image.cuda(), target.cuda()
                pred = model(image)
                loss = criterion(pred, target)
                loss.backward()
                optimizer.step()
                shown = image[0].cpu()  # noqa: TT101
                err = torch.sum((pred - target) ** 2, dim=0)
                errors.append(err.mean().item())
            """,
            lines=(11,),
        ),
        Invalid(
            """
            # a name the loader's loop draws, bound again to the model's output before it is read
            import torch
            for x, y in train_loader:
                x = model(x.cuda())
                loss = criterion(x, y.cuda())
                loss.backward()
                optimizer.step()
                peak = x.max().item()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # the element of a sequence the loop made on the device is on the device
            import torch
            for images, image_ids in loader:
                images = images.cuda(non_blocking=True)
                out = model(images)
                out.mean().backward()
                optimizer.step()
                scores = out.softmax(-1).max(-1).values
                for image_id, score in zip(image_ids, scores):
                    key = image_id.item()           # the loader's ids: on the host
                    best[key] = score.item()        # the model's scores: on the device
            """,
            lines=(11,),
        ),
        Invalid(
            """
            running_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
            """,
            lines=(6,),
            fixed="""
            running_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running_loss += loss.detach()
            """,
        ),
        Invalid(
            """
            model.eval()
            correct = total = 0
            with torch.no_grad():
                for images, labels in val_loader:
                    logits = model(images)
                    correct += (logits.argmax(1) == labels).sum().item()
                    total += float(criterion(logits, labels)) * images.size(0)
            """,
            lines=(6, 7),
            fixed="""
            model.eval()
            correct = total = 0
            with torch.no_grad():
                for images, labels in val_loader:
                    logits = model(images)
                    correct += (logits.argmax(1) == labels).sum().detach()
                    total += criterion(logits, labels).detach() * images.size(0)
            """,
        ),
        Invalid(
            """
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.cuda(), target.cuda()
                output = model(data)
                loss = F.nll_loss(output, target)
                loss.backward()
                optimizer.step()
                preds = output.argmax(dim=1).cpu().numpy()
                acc = float((output.argmax(1) == target).float().mean())
            """,
            lines=(7, 8),
        ),
        Invalid(
            """
            def train_step(model, batch):
                loss = model(batch).mean()
                loss.backward()
                return loss.item()

            for batch in loader:
                history.append(train_step(model, batch))
            """,
            lines=(4,),
        ),
        Invalid(
            """
            class LitModel(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    x, y = batch
                    loss = F.cross_entropy(self(x), y)
                    self.log("train_loss", loss.item())   # pass the tensor instead
                    return loss
            """,
            lines=(5,),
        ),
        Invalid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % 1 == 0:   # every step after all
                    writer.add_scalar("train/loss", loss.item(), step)
                writer.add_scalar("train/lr", scheduler.get_last_lr()[0], step)
            """,
            lines=(6,),
        ),
        Invalid(
            """
            log_every = 50
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                writer.add_scalar("train/loss", loss.item(), step)
            """,
            lines=(6,),
            fixed="""
            log_every = 50
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % log_every == 0:
                    writer.add_scalar("train/loss", loss.item(), step)
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pack_padded_sequence

            rnn = nn.LSTM(8, 8, batch_first=True).cuda()
            for x, lengths in loader:
                x, lengths = x.cuda(non_blocking=True), lengths.cuda(non_blocking=True)
                longest = int(lengths.max().cpu())  # not lengths a packing call needs: a sync
                packed = pack_padded_sequence(x[:, :longest], lengths.cpu(), batch_first=True)
                loss = rnn(packed)[1][0].sum()
                loss.backward()
                optimizer.step()
            """,
            findings=(
                ("8:19-8:38", "`.cpu()` on `lengths.max()` every step forces a GPU->CPU sync: collect on the device and move once "
                              "after the loop"),
            ),
        ),
        Invalid(
            """
            import torch
            for x, y in loader:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                labels = y.cpu().numpy()  # moved above: this one waits
            """,
            findings=(
                ("8:14-8:21", "`.cpu()` on `y` every step forces a GPU->CPU sync: collect on the device and move once after the loop"),
            ),
        ),
        Invalid(
            """
            # a registered buffer lives on the model's device: reading it in forward syncs every step
            import torch
            from torch import nn

            class Memory(nn.Module):
                def __init__(self, k, t):
                    super().__init__()
                    self.register_buffer("params", torch.tensor([k, t]))
                    self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

                def forward(self, x):
                    k = int(self.params[0].item())
                    ptr = int(self.ptr)
                    return x * k, ptr
            """,
            findings=(
                ("12:17-12:38", "`.item()` of the buffer `self.params[0]` in `forward` syncs with the GPU on every forward pass: "
                                "keep the value on the device, or a Python copy kept beside the buffer"),
                ("13:15-13:28", "`int(...)` of the buffer `self.ptr` in `forward` syncs with the GPU on every forward pass: "
                                "keep the value on the device, or a Python copy kept beside the buffer"),
            ),
        ),
        Invalid(
            """
            # a method forward calls on its own module runs every pass too (a momentum queue's enqueue)
            import torch
            from torch import nn

            class Queue(nn.Module):
                def __init__(self, size):
                    super().__init__()
                    self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

                def forward(self, keys):
                    self._enqueue(keys)
                    return keys

                def _enqueue(self, keys):
                    ptr = int(self.queue_ptr)
                    self.queue_ptr[0] = ptr + keys.size(0)
            """,
            findings=(
                ("15:15-15:34", "`int(...)` of the buffer `self.queue_ptr` in `_enqueue` (run by `forward`) syncs with the GPU "
                                "on every forward pass: keep the value on the device, or a Python copy kept beside the buffer"),
            ),
        ),
        Invalid(
            """
            loss_ema = None
            for x, _ in loader:
                loss = model(x.cuda(non_blocking=True))
                loss.backward()
                if loss_ema is None:
                    loss_ema = loss.item()  # once: the first step
                else:
                    loss_ema = 0.9 * loss_ema + 0.1 * loss.item()  # every later step
                optimizer.step()
            """,
            findings=(
                ("8:43-8:54", "`.item()` on `loss` every step forces a GPU->CPU sync: accumulate on the device (`.detach()`) "
                              "and read it once after the loop or every N steps"),
            ),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        tensors = oracle(ctx)
        seen: set[ast.Call] = set()
        for call, region in ctx.hot.nodes(ast.Call):
            seen.add(call)
            kind = tensors.sync_kind(call, region)
            if kind is None or enclosing_log_call(ctx, call) is not None:
                continue  # printing / logging it is TT102's finding
            if _guards_the_run(ctx, call):
                continue  # a deliberate per-step check that stops a diverged run
            if kind == "bool" and is_branch_test(ctx, call):
                continue  # ``if bool(loss == 0):`` is TT103's branch on a tensor
            if _only_if_a_tensor_arrives(ctx, call, region):
                continue  # ``if isinstance(v, torch.Tensor): v = v.item()``, never handed a step tensor
            if kind == "cpu" and _cpu_branch_of_device_choice(ctx, call):
                continue  # runs only when the data is not on an accelerator: nothing to wait for
            if ctx.uses_cuda and on_other_accelerator(ctx, call):
                continue  # ``if is_mps: x = x.cpu()`` (an op MPS lacks): a branch a CUDA run never takes
            if _host_batch_before_move(ctx, call, kind):
                continue  # the loader's batch before the loop moves it to the device: already on the host
            if kind in ("cpu", "numpy", "tolist") and _lengths_for_packing(ctx, call):
                continue  # ``pack_padded_sequence`` needs its lengths on the host: a copy the library asks for
            if _feeds_env_step(ctx, call) or _returns_an_action(ctx, call):
                continue  # the action an environment's ``step`` takes on the host: a copy the simulator needs
            if kind in ("cpu", "numpy") and _feeds_a_writer(ctx, call):
                continue  # a sample saved to a file or an audio/image summary: a copy the output needs
            what = f"`{kind}(...)` of a tensor" if kind in ("float", "int", "bool") else f"`.{kind}()`"
            subject = ctx.segment(call.args[0] if kind in ("float", "int", "bool") else call.func.value)  # type: ignore[attr-defined]
            advice = (
                "collect on the device and move once after the loop"
                if kind in ("cpu", "numpy", "tolist")
                else "accumulate on the device (`.detach()`) and read it once after the loop or every N steps"
            )
            yield Report(
                call,
                f"{what} on `{subject[:40]}` every step forces a GPU->CPU sync: {advice}",
                fix=lambda call=call, region=region: _fix(ctx, call, region),
            )
        for node, region in ctx.hot.nodes(ast.Subscript) if ".data[0]" in ctx.source else ():
            scalar = legacy_scalar_read(node)
            if scalar is None or enclosing_log_call(ctx, node) is not None:
                continue  # printing / logging it is TT102's finding
            yield Report(
                node,
                f"`.data[0]` on `{ctx.segment(scalar)[:40]}` (PyTorch 0.3's `.item()`) reads the value on the host "
                "every step, a GPU->CPU sync: accumulate on the device (`.detach()`) and read it once after the loop "
                "or every N steps",
            )
        buffers = tensors.buffers  # (the oracle's: the module's registered buffers and parameters, found once)
        for call in forward_calls(ctx) if buffers else ():  # a module's forward pass: every step, whoever calls it
            kind = tensors.sync_kind(call, None)
            if kind is None or call in seen or enclosing_log_call(ctx, call) is not None or _guards_the_run(ctx, call):
                continue
            subject = call.args[0] if kind in ("float", "int", "bool") else call.func.value  # type: ignore[attr-defined]
            if _self_attribute(subject) in buffers:  # a registered buffer lives where the model does: on the GPU
                what = f"`{kind}(...)`" if kind in ("float", "int", "bool") else f"`.{kind}()`"
                function = ctx.enclosing_function(call)
                where = "`forward`" if function is None or function.name == "forward" else f"`{function.name}` (run by `forward`)"
                yield Report(
                    call,
                    f"{what} of the buffer `{ctx.segment(subject)[:40]}` in {where} syncs with the GPU on every "
                    "forward pass: keep the value on the device, or a Python copy kept beside the buffer",
                )


def _self_attribute(node: ast.AST) -> str | None:
    """``x`` for ``self.x``, ``self.x[0]``, ``self.x.data``."""
    while isinstance(node, ast.Subscript) or (isinstance(node, ast.Attribute) and not
                                              (isinstance(node.value, ast.Name) and node.value.id == "self")):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _subject_root(node: ast.AST, through_calls: bool = False) -> ast.Name | None:
    """The name an attribute or item chain starts from (``meta["center"]``, ``points.data``; with
    ``through_calls`` also method calls: ``label.long()``)."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif through_calls and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return node if isinstance(node, ast.Name) else None


def _host_batch_before_move(ctx: RuleContext, call: ast.Call, kind: str) -> bool:
    """The value read is (an item of) what a loop draws from its loader, read before the name is
    bound again, in a loop that moves some of what it draws to the device (``x = x.cuda()``) or that
    iterates a DataLoader (the model's ``predict(imgs)`` moves its input): the loader hands over host
    tensors, so reading them waits for nothing (``points.data.numpy()`` for host augmentation,
    ``meta["center"].numpy()`` of a batch whose inputs alone are moved).  An element an inner loop
    pairs with each output (``for caption, img_id in zip(captions, image_ids)``) is followed back to
    the sequence the batch loop drew."""
    subject = call.args[0] if kind in ("float", "int", "bool") and call.args else getattr(call.func, "value", None)
    root = _subject_root(subject) if subject is not None else None
    if root is None:
        return False
    name = root.id
    node: ast.AST | None = ctx.parents.get(call)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            drawn = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            if name in drawn:
                host_batch = _moves_a_drawn_name(node, drawn) or is_loader_like(node.iter, set())
                if host_batch and not _rebound_before(ctx, node, name, call):
                    return True
                # ``for caption, img_id in zip(captions, image_id):`` inside the batch loop: an element of the
                # batch's ``image_id``, which the outer loop draws
                zipped = _zipped_source(node.target, node.iter, name)
                if zipped is None or _rebound_before(ctx, node, name, call):
                    return False
                name = zipped
        node = ctx.parents.get(node)
    return False


def _zipped_source(target: ast.expr, iterable: ast.expr, name: str) -> str | None:
    """The name of the sequence whose elements a loop binds to ``name`` through ``zip(...)`` /
    ``enumerate(...)`` (``for a, b in zip(xs, ys)``: ``ys`` for ``b``), if it is a plain name."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and not iterable.keywords):
        return None
    if isinstance(target, ast.Name) and target.id == name:
        return None  # the whole tuple, not one sequence's element
    if not isinstance(target, (ast.Tuple, ast.List)):
        return None
    if iterable.func.id == "enumerate" and len(iterable.args) == 1 and len(target.elts) == 2:
        element = target.elts[1]
        if isinstance(element, ast.Name):
            return iterable.args[0].id if element.id == name and isinstance(iterable.args[0], ast.Name) else None
        return _zipped_source(element, iterable.args[0], name)
    if iterable.func.id == "zip" and len(iterable.args) == len(target.elts):
        for element, sequence in zip(target.elts, iterable.args):
            if isinstance(element, ast.Name) and element.id == name:
                return sequence.id if isinstance(sequence, ast.Name) else None
    return None


def _moves_a_drawn_name(loop: ast.For | ast.AsyncFor, drawn: set[str]) -> bool:
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and is_device_move(node):
                receiver = _subject_root(node.func.value, through_calls=True) if isinstance(node.func, ast.Attribute) else None
                if receiver is not None and receiver.id in drawn:
                    return True
    return False


def _rebound_before(ctx: RuleContext, loop: ast.For | ast.AsyncFor, name: str, call: ast.Call) -> bool:
    """``name`` is assigned in the loop's body before the read (not by the statement making it:
    ``points = points.data.numpy()``)."""
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store) \
                    and (node.lineno, node.col_offset) < (call.lineno, call.col_offset):
                owner = ctx.enclosing_statement(node)
                if not (isinstance(owner, ast.Assign) and any(call is n for n in ast.walk(owner.value))):
                    return True
    return False


_PACKERS = frozenset({"pack_padded_sequence"})  # torch.nn.utils.rnn: lengths must be on the CPU


def _lengths_for_packing(ctx: RuleContext, call: ast.Call) -> bool:
    """The host copy is the ``lengths`` of a ``pack_padded_sequence`` call: passed straight
    (``pack_padded_sequence(x, lengths.cpu())``) or through a name assigned in the same function
    (``lengths = lengths.cpu().numpy()`` ... ``pack_padded_sequence(x, lengths)``)."""
    node: ast.AST = call
    parent = ctx.parents.get(node)
    while isinstance(parent, ast.Attribute) or (isinstance(parent, ast.Call) and parent.func is node):
        node, parent = parent, ctx.parents.get(parent)  # the end of ``.cpu().numpy()`` / ``.cpu().int()``
    if isinstance(parent, ast.keyword):
        packer = ctx.parents.get(parent)
        return parent.arg == "lengths" and isinstance(packer, ast.Call) and _is_packer(packer)
    if isinstance(parent, ast.Call) and _is_packer(parent):
        return len(parent.args) > 1 and parent.args[1] is node
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        name = parent.targets[0].id
        scope = ctx.enclosing_function(call) or ctx.tree
        for other in ast.walk(scope):
            if isinstance(other, ast.Call) and _is_packer(other):
                lengths = other.args[1] if len(other.args) > 1 else next((k.value for k in other.keywords if k.arg == "lengths"), None)
                if isinstance(lengths, ast.Name) and lengths.id == name:
                    return True
    return False


_ENV = re.compile(r"(^|_)envs?($|_)|^env", re.IGNORECASE)  # ``env``, ``envs``, ``self.train_env``, ``eval_envs``
_WRITER = re.compile(r"^(save|write|imwrite|imsave)(_|$)|_(save|write)$|^save_|^add_(audio|image|images|video|figure)$")
_HOPS = 3  # names followed from the read to the call that takes it (``actions`` -> ``clipped_actions``)


def _feeds_env_step(ctx: RuleContext, call: ast.Call) -> bool:
    """The value read is the action handed to an environment's ``step`` (``env.step(a.item())``, or
    ``actions = q.argmax(1).cpu().numpy()`` ... ``envs.step(clipped_actions)`` in the same function, up to three
    names apart): simulators take host arrays and numbers, so the copy is the one the rollout needs."""
    return _feeds(ctx, call, _is_env_step)


# ``act``, ``explore``, ``select_action``, ``get_action``, ``pick_action_and_get_log_probabilities`` (not ``action_loss``)
_ACTION_CHOOSER = re.compile(r"^(act|explore|exploit)($|_)|(^|_)(select|choose|get|pick|sample|take|predict)_actions?($|_)",
                             re.IGNORECASE)


def _returns_an_action(ctx: RuleContext, call: ast.Call) -> bool:
    """The value read is what a policy's action chooser returns (``return action.item()`` in ``explore``,
    ``select_action``, ``act``): the action the rollout hands to its environment, a copy the simulator needs.
    A function of such a name, or one whose result this file hands to an environment's ``step``."""
    statement = ctx.enclosing_statement(call)
    function = ctx.enclosing_function(call)
    if not isinstance(statement, ast.Return) or function is None:
        return False
    if _ACTION_CHOOSER.search(function.name):
        return True
    for site in ctx.nodes_of(ast.Call):
        callee = site.func.attr if isinstance(site.func, ast.Attribute) else getattr(site.func, "id", None)  # type: ignore[attr-defined]
        if callee == function.name and _feeds_env_step(ctx, site):  # type: ignore[arg-type]
            return True
    return False


def _feeds_a_writer(ctx: RuleContext, call: ast.Call) -> bool:
    """The host copy is what a sample is saved or logged as (``audio = netG(voc).squeeze().cpu()`` then
    ``save_sample(path, sr, audio)`` or ``writer.add_audio(tag, audio, ...)``): files and image or audio
    summaries take host data, so the copy is the one the output needs.  Only the copy itself, or a name bound
    to it (not to what a metric computes from it: ``_, acc, n, pred = accuracy(out.cpu().numpy(), ...)``)."""
    statement = ctx.enclosing_statement(call)
    if isinstance(statement, ast.Assign) and not _copy_chain(statement.value, call):
        return _feeds(ctx, call, _is_writer, follow_names=False)
    return _feeds(ctx, call, _is_writer)


def _copy_chain(value: ast.AST, call: ast.Call) -> bool:
    """``value`` is ``call`` under tensor methods, attributes and indexing (``x.cpu().numpy()[0]``)."""
    while value is not call:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            value = value.func.value
        elif isinstance(value, (ast.Attribute, ast.Subscript)):
            value = value.value
        else:
            return False
    return True


def _feeds(ctx: RuleContext, call: ast.Call, consumer: Callable[[ast.AST], bool], follow_names: bool = True) -> bool:
    """The value ``call`` reads reaches a call ``consumer`` accepts in the same function: as its argument, or
    (``follow_names``) through the names its statement binds, up to three assignments apart."""
    scope = ctx.enclosing_function(call) or ctx.tree
    key = ("tt101-takers", consumer.__name__)
    found = ctx.memo.get(key)
    if found is None:  # the module's takers of this kind, once per analysis, with their functions
        found = ctx.memo[key] = [(n, ctx.enclosing_function(n)) for n in ctx.nodes_of(ast.Call) if consumer(n)]
    takers = [n for n, function in found if scope is ctx.tree or function is scope]  # type: ignore[union-attr]
    if not takers:
        return False
    arguments = [a for t in takers for a in (*t.args, *(k.value for k in t.keywords))]  # type: ignore[attr-defined]
    if any(call is n for a in arguments for n in ast.walk(a)):
        return True
    names = _bound_by_statement_of(ctx, call) if follow_names else set()
    for _ in range(_HOPS):
        if not names:
            return False
        if any(isinstance(n, ast.Name) and n.id in names for a in arguments for n in ast.walk(a)):
            return True
        names = {t.id for node in ast.walk(scope) if isinstance(node, ast.Assign)
                 and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value))
                 for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)} - names
    return False


def _is_writer(node: ast.AST) -> bool:
    """``save_sample(path, sr, audio)``, ``imageio.imwrite(path, img)``, ``writer.add_audio(...)``, ``np.save(...)``."""
    if not (isinstance(node, ast.Call) and (node.args or node.keywords)):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return bool(_WRITER.search(name))


def _is_env_step(node: ast.AST) -> bool:
    """``env.step(...)``, ``self.envs.step(...)``, ``train_env.step(...)`` with an argument."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"
            and (node.args or node.keywords)):
        return False
    receiver = node.func.value
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return bool(_ENV.search(name))


def _bound_by_statement_of(ctx: RuleContext, call: ast.Call) -> set[str]:
    """The names the assignment holding ``call`` binds (``a = m.sample().item()``: ``a``)."""
    statement = ctx.enclosing_statement(call)
    if not isinstance(statement, ast.Assign):
        return set()
    return {n.id for target in statement.targets for n in ast.walk(target) if isinstance(n, ast.Name)}


def _is_packer(call: ast.Call) -> bool:
    func = call.func
    return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in _PACKERS


def _guards_the_run(ctx: RuleContext, call: ast.Call) -> bool:
    """``loss_value = loss.item()`` tested by ``if not math.isfinite(loss_value): ...; sys.exit(1)``
    (or the read inside such a test): the sync is the point of the check, which ends a diverged run."""
    statement = ctx.enclosing_statement(call)
    if isinstance(statement, ast.If) and ends_the_run(ctx, statement.body, statement.test):
        return any(node is call for node in ast.walk(statement.test))
    if not (
        isinstance(statement, ast.Assign) and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name) and statement.value is call
    ):
        return False
    name = statement.targets[0].id
    body = getattr(ctx.parents.get(statement), "body", None)
    if not isinstance(body, list) or statement not in body:
        return False
    for later in body[body.index(statement) + 1 :]:
        if isinstance(later, ast.If) and ends_the_run(ctx, later.body, later.test):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(later.test)):
                return True
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(later)):
            return False
    return False


def _only_if_a_tensor_arrives(ctx: RuleContext, call: ast.Call, region: HotRegion) -> bool:
    """A read under ``if isinstance(v, torch.Tensor):`` in a function other project files call
    per step, none of whose per-step call sites hands it step data (``update(loss=loss.item())``)."""
    if not region.hot_path or region.via is not None:
        return False
    entry = next((e for e in ctx.hot_entries if e.func is region.node), None)
    if entry is None or entry.batch:
        return False
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, ast.If) and _is_tensor_check(ctx, ancestor.test):
            return True
        if ancestor is region.node:
            break
    return False


def _is_tensor_check(ctx: RuleContext, test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
        and len(test.args) == 2 and (ctx.qualname(test.args[1]) or "").endswith("Tensor")
    )


def _moves_to_accelerator(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "to")
        for n in ast.walk(node)
    )


def _tests_for_gpu(test: ast.expr) -> bool:
    """``if use_cuda:``, ``if args.gpu:``, ``if torch.cuda.is_available():``."""
    words = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
    words += [n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)]
    return any("cuda" in w.lower() or "gpu" in w.lower() for w in words)


def _cpu_branch_of_device_choice(ctx: RuleContext, call: ast.Call) -> bool:
    """``x.cuda(gpu) if on_gpu else x.cpu()`` (or the same as an if statement): the ``.cpu()``
    branch is the one taken when nothing runs on the GPU."""
    child: ast.AST = call
    for parent in ctx.ancestors(call):
        if isinstance(parent, ast.IfExp):
            if child is parent.orelse:
                return _moves_to_accelerator(parent.body) or _tests_for_gpu(parent.test)
        elif isinstance(parent, ast.If):
            if any(child is stmt for stmt in parent.orelse):
                # only a test about the device: ``if is_transformer: ... .to(device) else: ... .cpu()``
                # chooses a model, not a device
                return _tests_for_gpu(parent.test)
            return False
        elif isinstance(parent, ast.stmt) and not isinstance(
            parent, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)
        ):
            return False
        child = parent
    return False


def _fix(ctx: RuleContext, call: ast.Call, region: HotRegion) -> Fix | None:
    """Accumulate on the device, or (for a per-step metrics write) write every N steps."""
    statement = ctx.enclosing_statement(call)
    if isinstance(statement, ast.AugAssign) and _is_accumulated(ctx, call, statement):
        if method_name(call) == "item":
            transform = lambda e: call_method(e.func.value, "detach")  # type: ignore[attr-defined]  # noqa: E731
        else:
            transform = lambda e: call_method(e.args[0].value, "detach")  # type: ignore[attr-defined]  # noqa: E731
        return replace_expression(
            ctx, call, transform, "Accumulate on the device with .detach() (read once after the loop)", Applicability.UNSAFE
        )
    counter = step_counter(ctx, region)
    if (
        counter is not None
        and isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and method_name(statement.value) in _METRIC_WRITES
        and ctx.dotted(statement.value.func.value) not in ("self", None)  # type: ignore[attr-defined]
    ):
        return guard_statement_fix(ctx, statement, counter, "write metrics")
    return None


def _is_accumulated(ctx: RuleContext, call: ast.Call, statement: ast.AugAssign) -> bool:
    """``total += loss.item()`` / ``total += loss.item() * n``: the read only feeds arithmetic."""
    if not isinstance(statement.op, (ast.Add, ast.Sub)) or method_name(call) not in ("item", None):
        return False
    if method_name(call) is None and not (isinstance(call.func, ast.Name) and call.func.id == "float"):
        return False
    node: ast.AST = call
    while node is not statement.value:
        parent = ctx.parents.get(node)
        if not isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            return False
        node = parent
    return True
