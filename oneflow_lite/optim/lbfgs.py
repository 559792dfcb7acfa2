"""``flow.optim.LBFGS``: limited-memory BFGS with an optional strong-Wolfe line search (PyTorch's
algorithm, a port of minFunc / torch7's ``optim.lbfgs``, with its defaults, state and stopping rules)."""

from __future__ import annotations

import math
import numbers

from oneflow_lite.autograd.grad_mode import enable_grad, no_grad
from oneflow_lite.functional import cat, zeros
from oneflow_lite.optim.optimizer import Optimizer, capturing, check_lr, check_number, value_of


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``, ``g2``, clamped to
    ``bounds`` (default: between x1 and x2); the middle of the bounds when the cubic has no minimum."""
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


class _Bracket:
    """The line search's interval: step lengths ``t``, losses ``f``, flat gradients ``g`` and slopes
    ``gtd`` at its ends (one end when a point already satisfies the strong Wolfe conditions)."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def low_high(self):
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)

    def set(self, i, t, f, g, gtd):
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd


def _find_bracket(obj_func, x, t, d, f, g, gtd, c1, c2, max_ls):
    """Phase 1 of the strong Wolfe line search: grow ``t`` (cubic extrapolation) until an interval holds a
    point that satisfies the conditions. Returns ``(bracket, done, iterations, evaluations)``."""
    f_new, g_new = obj_func(x, t, d)
    evals, ls_iter = 1, 0
    gtd_new = g_new.dot(d).item()
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            return _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]), False, \
                ls_iter, evals
        if abs(gtd_new) <= -c2 * gtd:
            return _Bracket([t], [f_new], [g_new], [gtd_new]), True, ls_iter, evals
        if gtd_new >= 0:
            return _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]), False, \
                ls_iter, evals
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d).item()
        ls_iter += 1
    return _Bracket([0, t], [f, f_new], [g, g_new], [gtd, gtd_new]), False, ls_iter, evals


def _away_from_ends(t, bracket: _Bracket, insuf_progress: bool):
    """Move a trial ``t`` that is too close to an end of the bracket 10% of its width inside."""
    high, low = max(bracket.t), min(bracket.t)
    eps = 0.1 * (high - low)
    if min(high - t, t - low) >= eps:
        return t, False
    if insuf_progress or t >= high or t <= low:
        return (high - eps if abs(t - high) < abs(t - low) else low + eps), False
    return t, True


def strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """PyTorch's strong Wolfe line search along ``d`` from the parameters ``x`` (loss ``f``, flat gradient
    ``g``, slope ``gtd``), starting at step ``t``; ``obj_func(x, t, d)`` returns ``(loss, flat gradient)``
    at ``x + t d``. Returns ``(loss, flat gradient, t, function evaluations)``."""
    d_norm = d.abs().max().item()
    bracket, done, ls_iter, evals = _find_bracket(obj_func, x, t, d, f, g.clone(), gtd, c1, c2, max_ls)
    insuf_progress = False
    low, high = bracket.low_high()
    while not done and ls_iter < max_ls:  # zoom: shrink the bracket around a point that satisfies the conditions
        if abs(bracket.t[1] - bracket.t[0]) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1], bracket.gtd[1])
        t, insuf_progress = _away_from_ends(t, bracket, insuf_progress)
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d).item()
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket.f[low]:
            bracket.set(high, t, f_new, g_new.clone(), gtd_new)
            low, high = bracket.low_high()
            continue
        if abs(gtd_new) <= -c2 * gtd:
            done = True
        elif gtd_new * (bracket.t[high] - bracket.t[low]) >= 0:
            bracket.set(high, bracket.t[low], bracket.f[low], bracket.g[low], bracket.gtd[low])
        bracket.set(low, t, f_new, g_new.clone(), gtd_new)
    return bracket.f[low], bracket.g[low], bracket.t[low], evals


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"LBFGS: {name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"LBFGS: {name} must be at least {minimum}, got {value}")


class LBFGS(Optimizer):
    r"""L-BFGS, as ``torch.optim.LBFGS``: ``step(closure)`` runs up to ``max_iter`` iterations (at most
    ``max_eval`` evaluations of ``closure``, default ``max_iter * 5 // 4``). Each iteration takes the
    direction ``d = -H g`` from the last ``history_size`` curvature pairs (two-loop recursion) and moves
    ``lr`` along it (the first iteration ``min(1, 1 / |g|_1) * lr``), or, with
    ``line_search_fn="strong_wolfe"``, the step found by PyTorch's strong Wolfe line search (cubic
    interpolation). It stops when ``max|g| <= tolerance_grad``, or a step or loss change is below
    ``tolerance_change``.

    One parameter group only. The state (kept under the first parameter, as PyTorch does) holds
    ``func_evals``, ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss`` and ``al``; the scalars are Python floats. A step reads losses and
    slopes into Python to decide what to do, so it cannot be captured in an nn.Graph.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if max_eval is None and isinstance(max_iter, numbers.Integral):
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
                    "tolerance_change": tolerance_change, "history_size": history_size,
                    "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("LBFGS", group["lr"])
        _check_int("max_iter", group["max_iter"], 0)
        _check_int("max_eval", group["max_eval"], 0)
        _check_int("history_size", group["history_size"], 1)
        check_number("LBFGS", "tolerance_grad", group["tolerance_grad"])
        check_number("LBFGS", "tolerance_change", group["tolerance_change"])
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise RuntimeError(f"LBFGS: only 'strong_wolfe' is supported as line_search_fn (or None), got "
                               f"{group['line_search_fn']!r}")

    @property
    def _params(self) -> list:
        return self.param_groups[0]["params"]

    # ---- flat views of the parameters and gradients ----------------------------------------------
    def _gather_flat_grad(self):
        return cat([p.grad.reshape(-1) if p.grad is not None else zeros(p.numel(), dtype=p.dtype, device=p.device)
                    for p in self._params], 0)

    def _add_grad(self, step_size: float, update) -> None:
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].reshape(p.shape), alpha=step_size)
            offset += numel

    def _clone_param(self) -> list:
        return [p.clone() for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, evaluate, x, t, d):
        self._add_grad(t, d)
        loss = float(evaluate())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ---- the step ---------------------------------------------------------------------------------
    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; ``closure`` re-evaluates the model (computing the
        gradients) and returns the loss. Returns the loss of the first evaluation."""
        if not callable(closure):
            raise TypeError(f"LBFGS.step(): closure must be a callable that re-evaluates the model and returns "
                            f"the loss, not {type(closure).__name__}")
        if capturing():
            raise NotImplementedError("LBFGS.step() cannot be captured in an nn.Graph: its stopping tests and line "
                                      "search read losses and gradients into Python; run it eagerly")
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

        def evaluate():
            with enable_grad():
                return closure()

        with no_grad():
            return self._iterate(evaluate)

    def _iterate(self, evaluate):
        group = self.param_groups[0]
        lr, max_iter, max_eval = value_of(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = evaluate()
        loss, current_evals = float(orig_loss), 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss
        n_iter, t = 0, state.get("t")
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            d = self._direction(state, flat_grad, t, group["history_size"])
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            state["prev_loss"] = prev_loss = loss
            t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d).item()
            if gtd > -tolerance_change:  # not a descent direction (any more)
                break
            loss, flat_grad, t, evals, opt_cond = self._move(evaluate, group, d, t, loss, flat_grad, gtd,
                                                             max_eval - current_evals, n_iter != max_iter)
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max().item() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break
        state["t"] = t
        return orig_loss

    def _move(self, evaluate, group, d, t, loss, flat_grad, gtd, max_ls, evaluate_after):
        """Move the parameters along ``d``: by the line search's step, or by ``t`` (evaluating the new point
        unless it is the last iteration). Returns ``(loss, flat_grad, t, evaluations, optimal)``."""
        if group["line_search_fn"] is not None:
            x_init = self._clone_param()
            loss, flat_grad, t, evals = strong_wolfe(
                lambda x, step, direction: self._directional_evaluate(evaluate, x, step, direction),
                x_init, t, d, loss, flat_grad, gtd, max_ls=max_ls)
            self._add_grad(t, d)
            return loss, flat_grad, t, evals, flat_grad.abs().max().item() <= group["tolerance_grad"]
        self._add_grad(t, d)
        if not evaluate_after:
            return loss, flat_grad, t, 0, False
        loss = float(evaluate())
        flat_grad = self._gather_flat_grad()
        return loss, flat_grad, t, 1, flat_grad.abs().max().item() <= group["tolerance_grad"]

    @staticmethod
    def _direction(state: dict, flat_grad, t, history_size: int):
        """The L-BFGS direction ``-H g`` (two-loop recursion), after adding the last curvature pair
        ``(y, s)`` to the memory when ``y.s > 1e-10``; the first iteration's direction is ``-g``."""
        if state["n_iter"] == 1:
            state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            state["d"] = flat_grad.neg()
            return state["d"]
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(t)
        ys = y.dot(s).item()
        if ys > 1e-10:
            if len(old_dirs) == history_size:  # the memory is full: forget the oldest pair
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y).item()
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q).item() * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        d = r = q.mul(state["H_diag"])
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r).item() * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        state["d"] = d
        return d
