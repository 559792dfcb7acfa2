"""PPO for continuous actions as nikhilbarhate99/PPO-PyTorch writes it: an ActorCritic with a tanh actor whose
actions are drawn from MultivariateNormal(action_mean, diag(action_var)) (the variance decayed during training),
a RolloutBuffer, Monte-Carlo returns normalised, the clipped surrogate loss with MSE value loss and an entropy
bonus over K epochs, policy_old synchronised by load_state_dict, and kl_divergence between the old and new
policies logged. The environment is a NumPy point mass that must reach the origin (no gym here).
``fixed_sampling`` draws the Gaussian noise from NumPy (for comparing numbers between frameworks). PyTorch code:
run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, kl_divergence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PointMass:
    """State (x, y, vx, vy); the action is a force in [-1, 1]^2; the reward is minus the distance to the origin."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.s = np.concatenate([self.rng.uniform(-1, 1, 2), np.zeros(2)]).astype(np.float32)
        return self.s.copy()

    def step(self, action):
        a = np.clip(action, -1, 1)
        self.s[2:] = 0.8 * self.s[2:] + 0.1 * a
        self.s[:2] += self.s[2:]
        return self.s.copy(), -float(np.linalg.norm(self.s[:2]))


class RolloutBuffer:
    def __init__(self):
        self.actions = []
        self.states = []
        self.logprobs = []
        self.rewards = []
        self.state_values = []
        self.is_terminals = []

    def clear(self):
        del self.actions[:]
        del self.states[:]
        del self.logprobs[:]
        del self.rewards[:]
        del self.state_values[:]
        del self.is_terminals[:]


class ActorCritic(nn.Module):
    def __init__(self, state_dim, action_dim, action_std_init):
        super(ActorCritic, self).__init__()
        self.action_dim = action_dim
        self.action_var = torch.full((action_dim,), action_std_init * action_std_init).to(device)
        self.actor = nn.Sequential(nn.Linear(state_dim, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                                   nn.Linear(32, action_dim), nn.Tanh())
        self.critic = nn.Sequential(nn.Linear(state_dim, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                                    nn.Linear(32, 1))
        self.noise = None  # NumPy noise for fixed sampling

    def set_action_std(self, new_action_std):
        self.action_var = torch.full((self.action_dim,), new_action_std * new_action_std).to(device)

    def forward(self):
        raise NotImplementedError

    def act(self, state):
        action_mean = self.actor(state)
        cov_mat = torch.diag(self.action_var).unsqueeze(dim=0)
        dist = MultivariateNormal(action_mean, cov_mat)
        if self.noise is None:
            action = dist.sample()
        else:
            action = action_mean.detach() + torch.from_numpy(self.noise()) * self.action_var.sqrt()
        action_logprob = dist.log_prob(action)
        state_val = self.critic(state)
        return action.detach(), action_logprob.detach(), state_val.detach()

    def evaluate(self, state, action):
        action_mean = self.actor(state)
        action_var = self.action_var.expand_as(action_mean)
        cov_mat = torch.diag_embed(action_var).to(device)
        dist = MultivariateNormal(action_mean, cov_mat)
        action_logprobs = dist.log_prob(action)
        dist_entropy = dist.entropy()
        state_values = self.critic(state)
        return action_logprobs, state_values, dist_entropy, dist


class PPO:
    def __init__(self, state_dim, action_dim, lr_actor, lr_critic, gamma, K_epochs, eps_clip, action_std_init=0.6):
        self.action_std = action_std_init
        self.gamma = gamma
        self.eps_clip = eps_clip
        self.K_epochs = K_epochs
        self.buffer = RolloutBuffer()
        self.policy = ActorCritic(state_dim, action_dim, action_std_init).to(device)
        self.optimizer = torch.optim.Adam([
            {'params': self.policy.actor.parameters(), 'lr': lr_actor},
            {'params': self.policy.critic.parameters(), 'lr': lr_critic}
        ])
        self.policy_old = ActorCritic(state_dim, action_dim, action_std_init).to(device)
        self.policy_old.load_state_dict(self.policy.state_dict())
        self.MseLoss = nn.MSELoss()

    def set_action_std(self, new_action_std):
        self.action_std = new_action_std
        self.policy.set_action_std(new_action_std)
        self.policy_old.set_action_std(new_action_std)

    def decay_action_std(self, action_std_decay_rate, min_action_std):
        self.action_std = self.action_std - action_std_decay_rate
        self.action_std = round(self.action_std, 4)
        if self.action_std <= min_action_std:
            self.action_std = min_action_std
        self.set_action_std(self.action_std)

    def select_action(self, state):
        with torch.no_grad():
            state = torch.FloatTensor(state).to(device)
            action, action_logprob, state_val = self.policy_old.act(state)
        self.buffer.states.append(state)
        self.buffer.actions.append(action)
        self.buffer.logprobs.append(action_logprob)
        self.buffer.state_values.append(state_val)
        return action.detach().cpu().numpy().flatten()

    def update(self):
        # Monte Carlo estimate of returns
        rewards = []
        discounted_reward = 0
        for reward, is_terminal in zip(reversed(self.buffer.rewards), reversed(self.buffer.is_terminals)):
            if is_terminal:
                discounted_reward = 0
            discounted_reward = reward + (self.gamma * discounted_reward)
            rewards.insert(0, discounted_reward)

        # Normalizing the rewards
        rewards = torch.tensor(rewards, dtype=torch.float32).to(device)
        rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-7)

        # convert list to tensor
        old_states = torch.squeeze(torch.stack(self.buffer.states, dim=0)).detach().to(device)
        old_actions = torch.squeeze(torch.stack(self.buffer.actions, dim=0)).detach().to(device)
        old_logprobs = torch.squeeze(torch.stack(self.buffer.logprobs, dim=0)).detach().to(device)
        old_state_values = torch.squeeze(torch.stack(self.buffer.state_values, dim=0)).detach().to(device)

        # calculate advantages
        advantages = rewards.detach() - old_state_values.detach()
        with torch.no_grad():
            old_dist = self.policy_old.evaluate(old_states, old_actions)[3]

        # Optimize policy for K epochs
        losses = []
        for _ in range(self.K_epochs):
            # Evaluating old actions and values
            logprobs, state_values, dist_entropy, dist = self.policy.evaluate(old_states, old_actions)

            # match state_values tensor dimensions with rewards tensor
            state_values = torch.squeeze(state_values)

            # Finding the ratio (pi_theta / pi_theta__old)
            ratios = torch.exp(logprobs - old_logprobs.detach())

            # Finding Surrogate Loss
            surr1 = ratios * advantages
            surr2 = torch.clamp(ratios, 1 - self.eps_clip, 1 + self.eps_clip) * advantages

            # final loss of clipped objective PPO
            loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, rewards) - 0.01 * dist_entropy

            # take gradient step
            self.optimizer.zero_grad()
            loss.mean().backward()
            self.optimizer.step()
            losses.append(loss.mean().item())
        kl = kl_divergence(old_dist, dist).mean().item()

        # Copy new weights into old policy
        self.policy_old.load_state_dict(self.policy.state_dict())

        # clear buffer
        self.buffer.clear()
        return losses, kl


def numpy_weights(module, rng, scale=0.3):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def main(updates=6, episodes_per_update=4, max_ep_len=20, seed=0, K_epochs=8, fixed_sampling=False):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = PointMass(seed)
    ppo_agent = PPO(4, 2, lr_actor=3e-3, lr_critic=1e-2, gamma=0.95, K_epochs=K_epochs, eps_clip=0.2,
                    action_std_init=0.5)
    if fixed_sampling:
        numpy_weights(ppo_agent.policy, rng)
        ppo_agent.policy_old.load_state_dict(ppo_agent.policy.state_dict())
        ppo_agent.policy_old.noise = lambda: rng.standard_normal(2).astype(np.float32)
    returns, losses, kls = [], [], []
    for update in range(updates):
        total = 0.0
        for _ in range(episodes_per_update):
            state = env.reset()
            for t in range(1, max_ep_len + 1):
                action = ppo_agent.select_action(state)
                state, reward = env.step(action)
                ppo_agent.buffer.rewards.append(reward)
                ppo_agent.buffer.is_terminals.append(t == max_ep_len)
                total += reward
        update_losses, kl = ppo_agent.update()
        losses.append(update_losses[-1])
        kls.append(kl)
        ppo_agent.decay_action_std(0.05, 0.1)
        returns.append(total / episodes_per_update)
        print(f"Update : {update} \t Average Reward : {returns[-1]:.3f} \t KL : {kl:.4f} \t "
              f"action std : {ppo_agent.action_std}")
    return {"returns": returns, "losses": losses, "kls": kls, "action_std": ppo_agent.action_std}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--updates", type=int, default=6)
    args = parser.parse_args()
    main(args.updates)
