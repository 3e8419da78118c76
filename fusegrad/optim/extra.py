"""More of torch.optim: Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD.

Each is torch 2.13's single-tensor (CPU) implementation written op for op with
public in-place Tensor ops under `no_grad` (history only with
`differentiable=True`), so eagerly the parameters follow torch's to float32
rounding and inside `fg.compile` a step traces as functional updates of the
parameters and state. The constructors take torch's arguments, defaults and
checks (with torch's texts); `param_groups`, the state keys (`step` a float32
0-d tensor, as torch's) and `state_dict()` are laid out as torch's.

Scalar state that torch reads back with `.item()` (the step count, NAdam's
`mu_product`, ASGD's `eta` and `mu`) is read where it still holds the value
the call started with, and the rest of the step computes from Python numbers
(NAdam's new `mu_product` is rounded to float32 in Python, as torch's float32
tensor product rounds it), so a compiled step has no graph break and its
numbers are runtime scalars of the program.

`capturable=True` raises torch's CPU device error eagerly, as torch's does;
inside `fg.compile` (where torch.compile skips that check) the step takes the
non-capturable formulas, which compute the same values up to rounding.
`foreach`/`fused` pick torch's device kernels: accepted and stored, no effect.
Complex and sparse parameters are not supported (fusegrad has neither).
"""
from __future__ import annotations

from typing import Any

import fusegrad as fg
from fusegrad.tracer import trace_state
from fusegrad.tracer.tensor import Tensor

from . import Optimizer, _check_fused, _check_lr, _decayed, _update_moments

__all__ = ["Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD"]

_DEVICES = "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla']"


def _check_capturable(group: dict[str, Any], what: str = "params and state_steps", devices: str = _DEVICES) -> None:
    """torch's eager capturable=True check, which fails on the CPU (skipped inside fg.compile,
    as torch.compile skips it)."""
    if group.get("capturable") and trace_state.current() is None:
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: {devices}.")


def _scalar(value) -> float:
    """torch's _to_scalar: a 1-element tensor hyper-parameter as its number."""
    return value.item() if isinstance(value, Tensor) else value


def _check_betas(betas) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_nonnegative(**values) -> None:
    """torch's `if not 0.0 <= value: raise ValueError(f"Invalid {name} value: {value}")`."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def _count(state: dict) -> float:
    """Increment the `step` tensor (torch's `step_t += 1`) and return the new count, read
    before the write (so inside fg.compile the read is of the call's input, no graph break)."""
    step = state["step"].item() + 1
    state["step"].add_(1)
    return step


def _grads(group: dict[str, Any]):
    """(parameter, gradient) for each parameter of the group with a gradient, the gradient
    negated where the group maximizes."""
    for p in group["params"]:
        if p.grad is not None:
            yield p, (-p.grad if group["maximize"] else p.grad)


class Adagrad(Optimizer):
    """Adagrad, as torch.optim.Adagrad: the state (`step`, `sum` filled with
    initial_accumulator_value) is made for every parameter in the constructor;
    per step g = grad (+ weight_decay * p); sum += g * g;
    p -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps)."""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr, strict_order=True)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = fg.tensor(0.0)
            # (torch reads the constructor's value here, not the group's)
            state["sum"] = fg.full_like(p, self.defaults["initial_accumulator_value"])
        return state

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps, weight_decay = _scalar(group["lr"]), group["lr_decay"], group["eps"], group["weight_decay"]
        for p, grad in _grads(group):
            state = self._init_state(p)
            step = _count(state)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            clr = lr / (1 + (step - 1) * lr_decay)
            state_sum = state["sum"]
            state_sum.addcmul_(grad, grad, value=1)
            std = state_sum.sqrt() + eps if group["differentiable"] else state_sum.sqrt().add_(eps)
            p.addcdiv_(grad, std, value=-clr)


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), as torch.optim.Adamax:
    g = grad (+ weight_decay * p); m = lerp(m, g, 1 - beta1);
    u = max(beta2 * u, |g| + eps); p -= lr / (1 - beta1**t) * m / u."""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = _scalar(group["lr"]), group["eps"], group["weight_decay"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["exp_avg"] = fg.zeros_like(p)
                state["exp_inf"] = fg.zeros_like(p)
            _check_capturable(group)
            step = _count(state)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            exp_avg.lerp_(grad, 1 - beta1)
            if not group["differentiable"]:
                exp_inf.mul_(beta2)
                exp_inf.copy_(fg.maximum(exp_inf, grad.abs().add_(eps)))
            else:
                norm_buf = fg.cat([exp_inf.mul_(beta2).unsqueeze(0), grad.abs().add_(eps).unsqueeze_(0)], 0)
                exp_inf.copy_(fg.amax(norm_buf, 0, keepdim=False))
            clr = lr / (1 - beta1 ** step)
            p.addcdiv_(exp_avg, exp_inf, value=-clr)


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum), as torch.optim.NAdam: momentum
    mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay)), their running product
    in the state (`mu_product`, float32, as torch's); weight decay L2 or decoupled
    (`decoupled_weight_decay=True`, NAdamW); p -= lr * (1 - mu_t) / (1 - prod_t) * g / d
    + lr * mu_{t+1} / (1 - prod_t * mu_{t+1}) * m / d, d = sqrt(v / (1 - beta2**t)) + eps."""

    _GROUP_DEFAULTS = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                       "decoupled_weight_decay": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for p_state in self.state.values():
            if p_state and not isinstance(p_state.get("mu_product", 0.0), Tensor):
                p_state["mu_product"] = fg.tensor(float(p_state["mu_product"]))

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = _scalar(group["lr"]), group["eps"], group["weight_decay"]
        momentum_decay = group["momentum_decay"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["mu_product"] = fg.tensor(1.0)
                state["exp_avg"] = fg.zeros_like(p)
                state["exp_avg_sq"] = fg.zeros_like(p)
            _check_capturable(group, "params, mu_products and state_steps")
            exp_avg, exp_avg_sq, mu_product = state["exp_avg"], state["exp_avg_sq"], state["mu_product"]
            step = _count(state)
            bias_correction2 = 1 - beta2 ** step
            grad = _decayed(p, grad, group, lr, weight_decay)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            # torch's `mu_product *= mu`: a float32 product (mu rounded to float32 first)
            dtype = mu_product.dtype.np.type
            product = float(dtype(dtype(mu_product.item()) * dtype(mu)))
            mu_product.mul_(mu)
            _update_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
            denom = exp_avg_sq.div(bias_correction2).sqrt()
            if group["differentiable"]:
                denom = denom.add(eps)
                mu_product_next = mu_product * mu_next
                grad = grad * (-lr * (1.0 - mu) / (1.0 - mu_product))
                exp_avg = exp_avg * (-lr * mu_next / (1.0 - mu_product_next))
                p.addcdiv_(grad, denom)
                p.addcdiv_(exp_avg, denom)
            else:
                mu_product_next = product * mu_next
                denom.add_(eps)
                p.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - product)))
                p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))


class RAdam(Optimizer):
    """RAdam (rectified Adam), as torch.optim.RAdam: Adam's moments; while the
    variance's rectification term rho_t is at most 5, p -= lr * m / (1 - beta1**t),
    else that times sqrt(1 - beta2**t) / (sqrt(v) + eps) and the rectification;
    weight decay L2 or decoupled (`decoupled_weight_decay=True`)."""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "decoupled_weight_decay": False,
                       "capturable": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = _scalar(group["lr"]), group["eps"], group["weight_decay"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["exp_avg"] = fg.zeros_like(p)
                state["exp_avg_sq"] = fg.zeros_like(p)
            _check_capturable(group)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            step = _count(state)
            grad = _decayed(p, grad, group, lr, weight_decay)
            _update_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            bias_corrected_exp_avg = exp_avg / bias_correction1
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                root = exp_avg_sq.sqrt()
                root = root.add(eps) if group["differentiable"] else root.add_(eps)
                adaptive_lr = (bias_correction2 ** 0.5) / root
                p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
            else:
                p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


class Adadelta(Optimizer):
    """Adadelta, as torch.optim.Adadelta: v = rho * v + (1 - rho) * g * g;
    delta = sqrt(u + eps) / sqrt(v + eps) * g; u = rho * u + (1 - rho) * delta**2;
    p -= lr * delta (lr defaults to 1.0)."""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(epsilon=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, rho, eps, weight_decay = _scalar(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["square_avg"] = fg.zeros_like(p)
                state["acc_delta"] = fg.zeros_like(p)
            _check_capturable(group, devices="['cuda', 'xpu', 'hpu', 'privateuseone']")
            state["step"].add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_()
            if group["differentiable"]:
                delta = delta.clone()
            delta.div_(std).mul_(grad)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)


class Rprop(Optimizer):
    """Rprop (resilient backpropagation), as torch.optim.Rprop: per element, the step
    size grows by etas[1] where the gradient kept its sign, shrinks by etas[0] where
    it flipped (and that gradient counts as 0, now and as the next `prev`), clamped to
    step_sizes; p -= sign(g) * step_size. (torch's masked writes are written here as
    `where`s: the same values, and traceable.)"""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["prev"] = fg.zeros_like(p)
                state["step_size"] = fg.full_like(p.grad, _scalar(group["lr"]))
            _check_capturable(group)
            prev, step_size = state["prev"], state["step_size"]
            state["step"].add_(1)
            sign = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
            # torch: sign[sign > 0] = etaplus; sign[sign < 0] = etaminus; sign[sign == 0] = 1
            flipped = sign.lt(0)
            sign = fg.where(sign.gt(0), etaplus, fg.where(flipped, etaminus, fg.where(sign.eq(0), 1.0, sign)))
            step_size.mul_(sign).clamp_(step_size_min, step_size_max)
            grad = grad.masked_fill(flipped, 0)
            p.addcmul_(grad.sign(), step_size, value=-1)
            prev.copy_(grad)


class ASGD(Optimizer):
    """Averaged SGD, as torch.optim.ASGD: p *= 1 - lambd * eta; p -= eta * g; the
    average ax follows p (ax += mu * (p - ax), or ax = p while mu is 1); then
    eta = lr / (1 + lambd * lr * t) ** alpha and mu = 1 / max(1, t - t0), kept as
    float32 0-d tensors in the state, as torch's."""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for p_state in self.state.values():
            for key in ("eta", "mu"):
                if p_state and key in p_state and not isinstance(p_state[key], Tensor):
                    p_state[key] = fg.tensor(p_state[key], dtype=fg.float32)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lambd, alpha, t0 = _scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        weight_decay = group["weight_decay"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["eta"] = fg.tensor(lr, dtype=fg.float32)
                state["mu"] = fg.tensor(1.0)
                state["ax"] = fg.zeros_like(p)
            _check_capturable(group, "params, mus, etas, and state_steps")
            mu, ax, eta = state["mu"], state["ax"], state["eta"]
            step = _count(state)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value)
            p.add_(grad, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)
            # (torch copies a float64 0-d tensor of each new value in: rounded to float32, as here)
            eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
            mu.fill_(1 / max(1, step - t0))


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern), as torch.optim.Adafactor: a matrix's second moment kept
    factored, as row and column means of g**2 (a vector's in full), both decayed by
    1 - t**beta2_decay; the update g / sqrt(v) clipped to an RMS of d, scaled by the relative
    step max(eps2, RMS(p)) * min(lr, 1 / sqrt(t)); weight decay decoupled."""

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps=(None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, beta2_decay, d, weight_decay = _scalar(group["lr"]), group["beta2_decay"], group["d"], \
            group["weight_decay"]
        eps1, eps2 = group["eps"]
        for p, grad in _grads(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                if grad.dim() > 1:
                    state["row_var"] = grad.new_zeros(tuple(grad.shape[:-1]) + (1,))
                    state["col_var"] = grad.new_zeros(tuple(grad.shape[:-2]) + (1, grad.shape[-1]))
                else:
                    state["variance"] = fg.zeros_like(grad)
            if eps1 is None:
                eps1 = fg.finfo(p.dtype).eps
            step = _count(state)
            one_minus_beta2_t = step ** beta2_decay
            rho_t = min(lr, 1 / (step ** 0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            if grad.dim() > 1:
                row_mean = fg.norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                state["row_var"].lerp_(row_mean, one_minus_beta2_t)
                col_mean = fg.norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                state["col_var"].lerp_(col_mean, one_minus_beta2_t)
                var_estimate = state["row_var"] @ state["col_var"]
                var_estimate.div_(state["row_var"].mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                state["variance"].lerp_(grad * grad, one_minus_beta2_t)
                var_estimate = state["variance"].clone()
            update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=-alpha / denom)
