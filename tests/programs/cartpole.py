"""A stand-in for ``gymnasium.make('CartPole-v1')`` (no gym on the test machines): CartPole-v1's dynamics
(Barto, Sutton & Anderson 1983, as gymnasium writes them), its reset / step API (5-tuple steps), its
``spec.reward_threshold`` and its termination rules. Plain NumPy; no torch."""

import math
import types

import numpy as np


class CartPole:
    spec = types.SimpleNamespace(reward_threshold=475.0)

    def __init__(self, max_episode_steps=500):
        self.max_episode_steps = max_episode_steps
        self.rng = np.random.default_rng(0)
        self.state, self.t = np.zeros(4), 0

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state, self.t = self.rng.uniform(-0.05, 0.05, 4), 0
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1  # pole mass 0.1, half length 0.5, total mass 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self.state, self.t = np.array([x, x_dot, theta, theta_dot]), self.t + 1
        terminated = bool(abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360)
        return self.state.astype(np.float32), 1.0, terminated, self.t >= self.max_episode_steps, {}


def make(name, render_mode=None):
    if name != "CartPole-v1":
        raise ValueError(f"only CartPole-v1 is provided, not {name}")
    return CartPole()
