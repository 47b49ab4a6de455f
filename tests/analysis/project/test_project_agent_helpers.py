"""Issue 25: a reinforcement-learning agent whose episode loop trains only through its own helper
(``if self.is_update(): self.learn()``), which calls a shared ``update_params(optim, loss)`` in another
file.  An invented project, no code of any labelled repository: the episode loop is a CUDA training loop,
and ``learn`` and the replay memory's ``sample`` it calls run every step."""

from __future__ import annotations

import textwrap

from torchtriage.analysis.project.program import Project

UTILS = """
    def update_params(optim, loss):
        optim.zero_grad()
        loss.backward()
        optim.step()
"""
MEMORY = """
    import numpy as np
    import torch


    class Memory:
        def __init__(self, device):
            self.device = device
            self.states = np.zeros((1000, 4), dtype=np.float32)

        def sample(self, batch_size):
            idx = np.random.randint(0, 1000, size=batch_size)
            return torch.FloatTensor(self.states[idx]).to(self.device)

"""
AGENT = """
    import torch
    from memory import Memory
    from utils import update_params


    class Agent:
        def __init__(self, env, net):
            self.env = env
            self.device = torch.device("cuda")
            self.net = net.to(self.device)
            self.optim = torch.optim.Adam(self.net.parameters(), fused=True)
            self.memory = Memory(self.device)
            self.steps = 0
            self.update_interval = 4

        def train_episode(self):
            done = False
            state = self.env.reset()
            while not done:
                state, reward, done, _ = self.env.step(self.env.action_space.sample())
                self.steps += 1
                if self.is_update():
                    self.learn()

        def is_update(self):
            return self.steps % self.update_interval == 0

        def learn(self):
            batch = self.memory.sample(32)
            loss = self.net(batch).mean()
            mean_q = loss.detach().item()
            update_params(self.optim, loss)
            return mean_q
"""
FILES = {"utils.py": UTILS, "memory.py": MEMORY, "agent.py": AGENT}


def _findings(path: str) -> set[tuple[int, str]]:
    proj = Project((name, name, textwrap.dedent(text).lstrip("\n")) for name, text in FILES.items())
    return {(f.span.line, f.code) for f in proj.analyze(path)}


def test_the_episode_loop_trains_through_its_own_helper() -> None:
    agent = _findings("agent.py")
    assert (19, "TT504") in agent  # the episode loop: a CUDA training loop in fp32
    assert (31, "TT101") in agent  # learn() runs every step


def test_the_memory_learn_samples_is_per_step_code() -> None:
    assert (12, "TT301") in _findings("memory.py")  # the sampled batch's blocking copy
