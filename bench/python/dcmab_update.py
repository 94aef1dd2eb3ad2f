"""The same DCMAB update as bench/bench_learner.cc, in Python PyTorch (Debian's python3-torch),
as the baseline the C++ learner is compared with. One intra-op thread, N = L = 3, actor
300-300, critic 100-100, Adam, grad clip 0.5, tau 0.01, gamma 0.99. Written the way MADDPG
reference code is: a minibatch per agent, the target actions of every agent recomputed for
each agent's critic target.

Usage: python3 bench/python/dcmab_update.py [batch ...]   (prints ms per update)
"""
import sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
N, L = 3, 3
S = 2 * N * L + L * (L + 2)  # 33
A_IN = 2 * N * L + L + 2     # 23


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(A_IN, 300), nn.Linear(300, 300), nn.Linear(300, 1)

    def forward(self, x):
        return torch.tanh(self.l3(F.relu(self.l2(F.relu(self.l1(x))))))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(S + N * L, 100), nn.Linear(100 + N * L, 100), nn.Linear(100, 1)

    def forward(self, s, a):
        h = F.relu(self.l1(s))
        return self.l3(F.relu(self.l2(torch.cat([h, a], 1))))


def actor_inputs(s):
    B = s.shape[0]
    g = s[:, :2 * N * L]
    x = s[:, 2 * N * L:].reshape(B, L, L + 2)
    return torch.cat([g.unsqueeze(1).expand(B, L, 2 * N * L), x], 2).reshape(B * L, A_IN)


actors = [Actor() for _ in range(N)]
actor_t = [Actor() for _ in range(N)]
critics = [Critic() for _ in range(N)]
critic_t = [Critic() for _ in range(N)]
for t, s in zip(actor_t + critic_t, actors + critics):
    t.load_state_dict(s.state_dict())
aopt = [torch.optim.Adam(a.parameters(), 1e-3) for a in actors]
copt = [torch.optim.Adam(c.parameters(), 1e-3) for c in critics]


def update(batch):
    s, d, a, r, s2, d2, done = batch
    B = s.shape[0]
    for i in range(N):
        with torch.no_grad():
            in2 = actor_inputs(s2)
            a2 = torch.cat([actor_t[o](in2).reshape(B, L) for o in range(N)], 1)
            y = r[:, i:i + 1] + 0.99 * (1 - done) * critic_t[i](torch.cat([s2, d2], 1), a2)
        q = critics[i](torch.cat([s, d], 1), a)
        loss = F.mse_loss(q, y)
        copt[i].zero_grad(); loss.backward()
        nn.utils.clip_grad_norm_(critics[i].parameters(), 0.5); copt[i].step()
        own = actors[i](actor_inputs(s)).reshape(B, L)
        joint = torch.cat([a[:, :i * L], own, a[:, (i + 1) * L:]], 1)
        aloss = -critics[i](torch.cat([s, d], 1), joint).mean()
        aopt[i].zero_grad(); aloss.backward()
        nn.utils.clip_grad_norm_(actors[i].parameters(), 0.5); aopt[i].step()
        with torch.no_grad():
            for tnet, net in ((actor_t[i], actors[i]), (critic_t[i], critics[i])):
                for tp, p in zip(tnet.parameters(), net.parameters()):
                    tp.mul_(0.99).add_(p, alpha=0.01)


for B in [int(x) for x in sys.argv[1:]] or [256, 32]:
    batch = (torch.rand(B, S), torch.rand(B, N * L), torch.rand(B, N * L), torch.rand(B, N),
             torch.rand(B, S), torch.rand(B, N * L), (torch.arange(B) % 3 == 2).float().unsqueeze(1))
    for _ in range(5):
        update(batch)
    n = max(20, int(2000 / B))
    t0 = time.perf_counter()
    for _ in range(n):
        update(batch)
    ms = (time.perf_counter() - t0) / n * 1e3
    print(f"python_dcmab_update batch={B} {ms:.2f} ms")
