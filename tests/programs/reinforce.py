"""pytorch/examples reinforcement_learning/reinforce.py (REINFORCE on CartPole): the policy, select_action and
finish_episode are the original code. Changed, data only: ``gymnasium.make('CartPole-v1')`` is the NumPy
stand-in in cartpole.py (no gym here); the module-level setup moved into ``main()`` with the original flags as
defaults, and ``count(1)`` is bounded by ``episodes``. ``fixed_sampling`` draws actions by inverse CDF from
NumPy uniforms and turns dropout off (for comparing numbers between frameworks)."""

import argparse
from collections import deque
from itertools import count

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

import cartpole as gym
from common import numpy_init


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(128, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = deque()
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.appendleft(R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def numpy_sampling(rng):
    """A Categorical whose samples come from NumPy uniforms (inverse CDF): the same actions in both frameworks."""
    class NumpyCategorical(Categorical):
        def sample(self, sample_shape=torch.Size()):
            u = torch.from_numpy(rng.random(self.probs.shape[:-1]).astype(np.float32)).unsqueeze(-1)
            return (u > self.probs.detach().cumsum(-1)[..., :-1]).long().sum(-1)
    return NumpyCategorical


def main(episodes=12, gamma=0.99, seed=543, log_interval=4, fixed_sampling=False):
    global args, env, policy, optimizer, eps, Categorical
    args = argparse.Namespace(gamma=gamma, seed=seed, render=False, log_interval=log_interval)
    render_mode = "human" if args.render else None
    env = gym.make('CartPole-v1', render_mode=render_mode)
    env.reset(seed=args.seed)
    torch.manual_seed(args.seed)
    policy = Policy()
    if fixed_sampling:
        numpy_init(policy, seed, scale=0.1)
        policy.dropout.p = 0.0
        Categorical = numpy_sampling(np.random.default_rng(seed))
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()

    running_reward = 10
    rewards, losses = [], []
    for i_episode in count(1):
        state, _ = env.reset()
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            state, reward, terminated, truncated, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if terminated or truncated:
                break

        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        finish_episode()
        rewards.append(ep_reward)
        if i_episode % args.log_interval == 0:
            print(f'Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}')
        if running_reward > env.spec.reward_threshold or i_episode == episodes:
            break
    return {"rewards": rewards, "running_reward": running_reward,
            "weight": policy.affine2.weight.detach().numpy().copy()}


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='PyTorch REINFORCE example')
    parser.add_argument('--episodes', type=int, default=12)
    main(parser.parse_args().episodes)
