"""torch.optim.swa_utils: stochastic weight averaging and exponential moving averages of a
model's parameters (AveragedModel and its averaging functions), the SWALR schedule, and
update_bn (the batch norm statistics recomputed for averaged weights), as torch's code does
them, over fusegrad's modules and tensors (torch's foreach kernels are per-tensor loops here,
with the same values)."""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import fusegrad as fg
from fusegrad.nn.module import Module
from fusegrad.nn.normalization import _BatchNorm
from fusegrad.tracer.tensor import Tensor

from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999):
    """The in-place EMA update of lists of averaged and current parameters:
    averaged += (1 - decay) * (current - averaged) (a lerp, as torch's foreach form)."""
    _check_decay(decay)

    @fg.no_grad()
    def ema_update(ema_param_list, current_param_list, _) -> None:
        if ema_param_list[0].is_floating_point():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """The in-place equal-weight (SWA) update of lists of averaged and current parameters."""
    @fg.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        if averaged_param_list[0].is_floating_point():
            weight = float(1 / (num_averaged + 1))
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, weight)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """The EMA of one parameter: decay * averaged + (1 - decay) * current."""
    _check_decay(decay)

    @fg.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The equal-weight average of one parameter: averaged + (current - averaged) / (n + 1)."""
    @fg.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with `use_buffers`) hold a running
    average of the model's, updated by `update_parameters(model)`: equal weights (SWA) unless
    `avg_fn` (per parameter) or `multi_avg_fn` (in place, over lists) says otherwise. The first
    update copies the model's values; `n_averaged` (an int64 buffer) counts the updates."""

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers: bool = False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", fg.tensor(0, dtype=fg.long))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged copy's forward."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Average `model`'s current parameters into this copy's (see the class)."""
        self_params = itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers \
            else self.parameters()
        model_params = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers \
            else model.parameters()
        averaged, current = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_params, model_params):
            p_model_ = p_model.detach()
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                # (torch groups the lists by device and dtype before its foreach update)
                groups: dict = {}
                for a, c in zip(averaged, current):
                    groups.setdefault(a.dtype, ([], []))
                    groups[a.dtype][0].append(a)
                    groups[a.dtype][1].append(c)
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                for group_averaged, group_current in groups.values():
                    update(group_averaged, group_current, self.n_averaged)
            else:
                for p_averaged, p_model in zip(averaged, current):
                    p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, self.n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach())
        self.n_averaged += 1


@fg.no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of `model`'s batch norm layers in one pass over
    `loader` (each batch a tensor, or a list or tuple whose first item is the input): reset,
    then averaged over the batches (momentum None), in training mode; the mode and momenta
    are restored after."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module in momenta:
        module.momentum = momenta[module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to `swa_lr` over `anneal_epochs` steps ("cos" or
    "linear"), then keeps it there (torch's schedule, state dict and texts)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy: str = "cos", last_epoch=-1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """Each group's learning rate at this step (see the class)."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict:
        """Every attribute but the optimizer and the annealing function."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state_dict()."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
