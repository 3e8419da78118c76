"""fusegrad.optim: SGD, Adam (and AdamW) and RMSprop with torch's exact update formulas,
and learning-rate schedules (`fusegrad.optim.lr_scheduler`).

`step()` updates each parameter in place under `fg.no_grad()`. Where the
update is the common case (number hyper-parameters, a gradient of the
parameter's type, no history recorded) it is one op per parameter,
`sgd_update` / `adam_update` (ir/ops/optim_update.py): one dispatch eagerly,
one traced instruction inside `fg.compile`, whose kernels fuse the whole
update into one loop. Otherwise it is a sequence of public in-place Tensor
ops (`add_`, `mul_`, `copy_`), as torch's single-tensor (CPU)
implementation; both compute the same bits. Inside `fg.compile` either
traces as functional updates of the parameter and state values.
Parameters whose `.grad` is None are skipped, as in torch.
"""
from __future__ import annotations

import math
import warnings
from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

import fusegrad as fg
from fusegrad.ir import float32
from fusegrad.ir.ops.optim_update import adam_scalars, sgd_scalars, update_in_place
from fusegrad.nn.module import class_text, typename, zeroed_grad
from fusegrad.runtime.compile import STATEFUL
from fusegrad.tracer import trace_state
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.functional import _scalar_array
from fusegrad.tracer.hooks import RemovableHandle, _Hooks
from fusegrad.tracer.tensor import Tensor
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "LBFGS", "lr_scheduler",
           "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD"]


_UNSET = object()      # (an attribute a snapshot found missing)


class _RequiredParameter:
    """Marks a hyper-parameter without a default (torch's `optim.optimizer.required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


_STEP_BINDERS: dict = {}      # optimizer class -> step's argument binder (Optimizer._closure_argument)


class Optimizer:
    """Base class: holds `param_groups` (dicts with "params" and hyper-parameters)
    and per-parameter `state`, as torch.optim.Optimizer does."""

    # Update each parameter with one fused op where it covers the case (see the module
    # docstring); False takes the per-op path everywhere (the tests compare the two).
    _fuse_updates = True

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)
        STATEFUL.add(self)      # (explain's dry run of a compiled step restores the state)

    def snapshot_state(self) -> tuple:
        """A copy of the per-parameter state dicts and of the param groups' settings (the
        tensors in them are shared, not copied: a dry run writes none of them; see
        fusegrad.runtime.compile.STATEFUL), and whether step() was called (lr schedulers ask)."""
        return ({p: dict(state) for p, state in self.state.items()}, [dict(g) for g in self.param_groups],
                self.__dict__.get("_opt_called", _UNSET))

    def restore_state(self, snapshot: tuple) -> None:
        """Put back the state `snapshot_state` returned: entries a step added are dropped, a
        scheduler's lr and a group added since are undone."""
        state, groups, called = snapshot
        self.state.clear()
        self.state.update(state)
        del self.param_groups[len(groups):]
        for group, saved in zip(self.param_groups, groups):
            group.clear()
            group.update(saved)
        if called is _UNSET:
            self.__dict__.pop("_opt_called", None)
        else:
            self._opt_called = called

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {class_text(type(param_group))}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        # (name, tensor) pairs, as named_parameters() yields, are accepted too
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {typename(param)}")
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=user_stacklevel())
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the `.grad` of every optimized parameter: to None (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = zeroed_grad(p.grad)

    def step(self, *args, **kwargs):
        """Update the parameters once: `step(closure=None)`, where `closure` re-evaluates the
        loss first (with grad on). Step pre-hooks run first (one may replace the arguments),
        post-hooks after, as torch's."""
        pre, post = self.__dict__.get("_step_pre_hooks"), self.__dict__.get("_step_post_hooks")
        if not pre and not post:
            return self._step(self._closure_argument(args, kwargs))
        args = (self,) + args       # (torch's hooks see the optimizer among the arguments)
        for hook in list((pre or {}).values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{type(self).step} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        out = self._step(self._closure_argument(args[1:], kwargs))
        for hook in list((post or {}).values()):
            hook(self, args, kwargs)
        return out

    def _closure_argument(self, args: tuple, kwargs: dict):
        """The `closure` of step(*args, **kwargs), bound by a function with torch's signature
        `step(self, closure=None)` named as torch's (`SGD.step`, `Adam.step` for AdamW, which
        inherits it there): a bad call raises Python's own TypeError with torch's text."""
        binder = _STEP_BINDERS.get(type(self))
        if binder is None:
            def binder(self, closure=None):
                return closure
            owner = next(c.__name__ for c in type(self).__mro__ if "_update_group" in c.__dict__)
            binder.__qualname__ = f"{owner}.step"
            _STEP_BINDERS[type(self)] = binder
        return binder(self, *args, **kwargs)

    def _step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with fg.enable_grad():
                loss = closure()
        # torch's _use_grad_for_differentiable: the update records history only when differentiable
        with fg.set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    # ---- hooks ----------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`, run before each step."""
        return self._add_hook("_step_pre_hooks", hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)`, run after each step."""
        return self._add_hook("_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)`, run before `state_dict()` builds its dict."""
        return self._add_hook("_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict) -> None or a state dict`, run on what `state_dict()` returns."""
        return self._add_hook("_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict) -> None or a state dict`, run before `load_state_dict` reads it."""
        return self._add_hook("_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)`, run after `load_state_dict`."""
        return self._add_hook("_load_state_dict_post_hooks", hook, prepend)

    def _add_hook(self, kind: str, hook: Callable, prepend: bool = False) -> RemovableHandle:
        hooks = self.__dict__.get(kind)
        if hooks is None:
            hooks = self.__dict__[kind] = _Hooks()
        handle = RemovableHandle(hooks)
        if prepend:
            later = dict(hooks)
            hooks.clear()
            hooks[handle.id] = hook
            hooks.update(later)
        else:
            hooks[handle.id] = hook
        return handle

    def _hooks(self, kind: str) -> list:
        return list(self.__dict__.get(kind, {}).values())

    # ---- checkpointing --------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """`{"state": {index: state}, "param_groups": [...]}` with parameters replaced by indices."""
        for hook in self._hooks("_state_dict_pre_hooks"):
            hook(self)
        index_of: dict[int, int] = {}
        groups, start = [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            # torch's numbering: by position, from the group's start; a parameter listed twice
            # in one group takes its last position, one met in an earlier group keeps that index
            index_of.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in index_of})
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        # (an entry keyed by no parameter, kept by a load_state_dict, keeps its key, as torch's)
        state = {(index_of[id(p)] if isinstance(p, Tensor) else p): value for p, value in self.state.items()
                 if not isinstance(p, Tensor) or id(p) in index_of}
        state_dict = {"state": state, "param_groups": groups}
        for hook in self._hooks("_state_dict_post_hooks"):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by `state_dict` (values are copied)."""
        state_dict = state_dict.copy()      # (torch's shallow copy, which pre-hooks may replace: a list or
        # a number then fails as torch's does, reading "param_groups" or calling copy())
        for hook in self._hooks("_load_state_dict_pre_hooks"):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(self.param_groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        by_index = {}
        for group, saved in zip(self.param_groups, saved_groups):
            by_index.update(zip(saved["params"], group["params"]))
        state = defaultdict(dict)
        for index, value in state_dict["state"].items():
            param = by_index.get(index)
            if param is None:
                state[index] = value        # (torch keeps an entry no parameter takes, by its index)
                continue
            group = next(g for g in saved_groups if index in g["params"])
            state[param] = {k: _state_value(param, k, v, group) for k, v in value.items()}
        for group, saved in zip(self.param_groups, saved_groups):
            params, names = group["params"], group.get("param_names")
            group.clear()
            group.update({k: v for k, v in saved.items() if k != "params"})
            group["params"] = params
            if names is not None and "param_names" not in saved:
                group["param_names"] = names        # (torch keeps the names a dict without them lacks)
        self.__setstate__({"state": state, "param_groups": self.param_groups})
        for hook in self._hooks("_load_state_dict_post_hooks"):
            hook(self)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    # Settings a group loaded from an older (or edited) state dict may lack: torch's
    # __setstate__ fills them in with these values (a subclass's own).
    _GROUP_DEFAULTS: dict[str, Any] = {}
    _STEP_TENSORS = False       # whether a loaded number `step` becomes a float32 tensor (Adam, RMSprop)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """torch's: the state and groups (a load_state_dict or an unpickling), each group's
        missing settings filled in, and a number `step` made a tensor where torch's is one."""
        self.__dict__.update(state)
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._GROUP_DEFAULTS.items():
                group.setdefault(key, value)
            if not self._STEP_TENSORS:
                continue
            for p in group["params"]:
                p_state = self.state.get(p, {})
                if p_state and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = fg.tensor(float(p_state["step"]))

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _check_not_capturable(group: dict[str, Any]) -> None:
    """torch's eager step with capturable=True checks its parameters' device: on the CPU it
    raises. (Compiled, torch.compile skips the check and runs the capturable formula, and so
    does fg.compile.)"""
    if group.get("capturable") and trace_state.current() is None:
        raise AssertionError("If capturable=True, params and state_steps must be on supported devices: "
                             "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla'].")


def _state_value(param, key, value, group: dict[str, Any]):
    """A loaded state entry, by torch's policy: tensors are cast to the parameter's
    dtype (`step` is kept as is, or float32 when capturable/fused); a tensor that
    needs no cast is the saved one itself, shared with the state dict, as in torch."""
    if not isinstance(value, Tensor):
        return value
    if key == "step":
        return value.to(fg.float32) if group.get("capturable") or group.get("fused") else value
    return value.to(param.dtype) if param.is_floating_point() else value


def _check_lr(lr, strict_order: bool = False) -> None:
    """torch's learning-rate check. SGD writes it `lr < 0.0` and Adam `not 0.0 <= lr`
    (`strict_order`), which differ in the TypeError text for a non-number and for NaN."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if (not 0.0 <= lr) if strict_order else lr < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")


# ---- fused updates -------------------------------------------------------------
def _numbers(*values) -> bool:
    """Whether every value is a Python int or float (what the fused updates take)."""
    return all(type(v) is float or type(v) is int for v in values)


def _fusable_grad(p: Tensor, grad: Tensor) -> bool:
    """Whether a fused update covers this gradient: a floating one of the parameter's
    dtype and shape with no history. Anything else takes the per-op path, which
    raises torch's errors where it should."""
    return (isinstance(grad, Tensor) and not grad._requires_grad and grad._dtype is p._dtype
            and p._dtype.is_floating_point and grad._value_shape() == p._value_shape())


def _writable(targets, like: Tensor) -> bool:
    """Whether `_write_back` can write each target: of `like`'s dtype and shape, not a
    view (writes through a view re-derive its base), and eagerly, writable memory (the
    per-op path raises torch's error for memory that is not)."""
    for t in targets:
        if not isinstance(t, Tensor) or t._base is not None or t._dtype is not like._dtype \
                or t._value_shape() != like._value_shape():
            return False
        if t._data is not None and not t._data.flags.writeable:
            return False
    return True


def _write_back(target: Tensor, value, bumps: int = 1) -> None:
    """`target.copy_(value)` for a value of target's type (a fused update's result, or an
    array), without a dispatch: eagerly the value is copied into target's memory and its
    version bumped `bumps` times (once per in-place op the per-op update applies to it, as
    torch's do); in a trace it is an in-place write of target with that value (an array: a
    new runtime input), as any in-place op's is (see Trace.write)."""
    trace = trace_state.current()
    if trace is None:
        np.copyto(target._data, value if type(value) is np.ndarray else value._data)
        target._vbox[0] += bumps
    else:
        trace.write(target, trace.value_of(value) if type(value) is np.ndarray else value._sym, False)


def _apply_update(op: str, tensors: list, scalars: list, attrs: dict, bumps: list) -> None:
    """Update op `op` on `tensors` (the parameter, its gradient, then its state) and the Python
    numbers `scalars`, its results written into the parameter and the state, each tensor's
    version bumped as many times as `bumps` says (once per in-place op of the per-op code).
    Eagerly a lent loop writes over their memory where it takes them (update_in_place: no
    fresh results to copy back); else the op's results are written back."""
    targets = tensors[:1] + tensors[2:]
    dtype = tensors[0]._dtype
    if trace_state.current() is None and update_in_place(
            op, [t._data for t in tensors] + [_scalar_array(x, dtype) for x in scalars], attrs):
        for t, n in zip(targets, bumps):
            t._vbox[0] += n
        return
    for t, value, n in zip(targets, _fused(op, tensors, scalars, attrs, dtype), bumps):
        _write_back(t, value, bumps=n)


def _fused(op: str, tensors: list, scalars: list, attrs: dict, dtype) -> tuple:
    """Apply update op `op` to `tensors` and the Python numbers `scalars`, which enter as
    0-d arrays of `dtype` as a Tensor op's number operands do (runtime inputs when traced)."""
    out = apply_op(op, tensors + [_scalar_array(x, dtype) for x in scalars], attrs)
    return out if type(out) is tuple else (out,)


def _decayed(p: Tensor, grad: Tensor, group: dict[str, Any], lr: float, weight_decay: float) -> Tensor:
    """The Adam family's weight decay (Adam, AdamW, NAdam, RAdam): decoupled, `p` shrunk in place
    by 1 - lr * weight_decay (group["decoupled_weight_decay"]), or L2, grad + weight_decay * p,
    which is returned."""
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(p, alpha=weight_decay)
    return grad


def _update_moments(exp_avg: Tensor, exp_avg_sq: Tensor, grad: Tensor, beta1: float, beta2: float) -> None:
    """Adam's first and second moments, in place, in torch's ops (a lerp and a mul-addcmul)."""
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)


def _check_fused(fused, foreach, differentiable) -> None:
    """torch's checks of `fused=True` (after the parameters are taken, as torch's constructors)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, weight decay and Nesterov.

    Per parameter, as torch:  g = grad (+ weight_decay * p);
    buf = g (first step) or momentum * buf + (1 - dampening) * g;
    g = g + momentum * buf (nesterov) or buf;  p -= lr * g.
    """

    _GROUP_DEFAULTS = {"nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                       "fused": False}

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        # foreach and fused pick torch's device kernels: accepted and listed as torch does, no effect here.
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        fused = self._fused_form(group)
        params = [p for p in group["params"] if p.grad is not None]
        # torch reads every momentum buffer of the group before updating any: a parameter
        # listed twice (deprecated, warned) starts two buffers on its first step
        buffers = [self.state[p].get("momentum_buffer") for p in params] if momentum != 0 else [None] * len(params)
        for p, buf in zip(params, buffers):
            if fused is not None and self._fused_update(p, buf, *fused):
                continue
            grad = -p.grad if group["maximize"] else p.grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            if momentum != 0:
                if buf is None:
                    buf = grad.detach().clone()
                    self.state[p]["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)

    def _fused_form(self, group: dict[str, Any]) -> tuple | None:
        """(sgd_update's attributes, its scalar operands) for this group, or None where
        the op does not compute what the per-op code does: history recorded, a tensor
        or other non-number hyper-parameter, or an alpha of 1 that the per-op code
        skips multiplying by (an int weight decay or Nesterov momentum of 1; lr = -1)."""
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay = group["weight_decay"]
        if not self._fuse_updates or fg.is_grad_enabled() or not _numbers(lr, momentum, dampening, weight_decay):
            return None
        nesterov = bool(group["nesterov"]) and momentum != 0
        if -lr == 1 or (type(weight_decay) is int and weight_decay == 1) or \
                (nesterov and type(momentum) is int and momentum == 1):
            return None
        attrs = dict(maximize=bool(group["maximize"]), weight_decay=weight_decay != 0, momentum=momentum != 0,
                     dampening=momentum != 0 and 1 - dampening != 1, nesterov=nesterov)
        values = dict(weight_decay=weight_decay, momentum=momentum, one_minus_dampening=1 - dampening,
                      nesterov_momentum=momentum, neg_lr=-lr)
        return attrs, [values[name] for name in sgd_scalars(attrs)]

    def _fused_update(self, p: Tensor, buf: Tensor | None, attrs: dict, scalars: list) -> bool:
        """Update `p` (and its momentum buffer `buf`, None before the first momentum step)
        with one sgd_update op; False (nothing done) where it does not apply (unusual
        tensors, a momentum not finite in p's dtype on the first step).

        The first momentum step makes the buffer: torch's is a clone of the gradient. Here it
        is the same op as every later step, from a buffer of -0.0 with no dampening: -0.0 *
        momentum + g is g bit for bit (the sign of a zero g included), so a compiled training
        step traces one program from its first call on (its second call hits the cache).
        Not for an infinite or NaN momentum (float32's 1e300 included): -0.0 * inf is NaN."""
        grad = p.grad
        if not _fusable_grad(p, grad):
            return False
        tensors = [p, grad]
        first = False
        if attrs["momentum"]:
            if buf is None:
                momentum = dict(zip(sgd_scalars(attrs), scalars))["momentum"]
                with np.errstate(over="ignore", invalid="ignore"):
                    if not np.isfinite(p._dtype.np.type(momentum)):
                        return False
                # (laid out as the gradient, as torch's clone of it is: preserve_format)
                buf, first = fg.full_like(grad, -0.0), True
            tensors.append(buf)
        if not _writable(tensors[:1] + tensors[2:], p):
            return False
        if first:
            self.state[p]["momentum_buffer"] = buf
            if attrs["dampening"]:          # torch's first buffer is the gradient, undamped
                names = sgd_scalars(attrs)
                scalars = [1.0 if name == "one_minus_dampening" else value for name, value in zip(names, scalars)]
        # per-op: p.add_; buf.mul_(momentum).add_(grad, ...); torch's first buffer is a fresh clone (version 0)
        _apply_update("sgd_update", tensors, scalars, attrs, [1, 0 if first else 2])
        return True


class Adam(Optimizer):
    """Adam (Kingma & Ba) with torch's bias corrections; AMSGrad optional.

    Per parameter, as torch:  g = grad (+ weight_decay * p, or decoupled
    p *= 1 - lr * weight_decay);  m = lerp(m, g, 1 - beta1);
    v = beta2 * v + (1 - beta2) * g * g;  p -= lr / (1 - beta1**t) * m /
    (sqrt(v) / sqrt(1 - beta2**t) + eps), eps added after the square root.

    The default path reads the step count once per step (free inside
    `fg.compile`, where the count's Python floats become runtime scalars).
    `capturable=True` is torch's alternative formula for CUDA graphs: eagerly its
    step raises torch's CPU error, as torch's does; inside `fg.compile` (as in
    torch.compile, which skips that check) the bias corrections are computed from
    the `step` tensor with tensor ops, in the parameter's dtype, and the step
    count is never read.
    """

    _GROUP_DEFAULTS = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                       "differentiable": False, "decoupled_weight_decay": False, "fused": None}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_lr(lr, strict_order=True)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for index, beta in enumerate(betas[:2]):
            if isinstance(beta, Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{index}] as a Tensor is not supported for capturable=False and "
                                     "foreach=True")
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{index}] must be 1-element")
        # torch's _to_scalar: a 1-element tensor is kept as a 0-d one
        betas = tuple(b.reshape(()) if isinstance(b, Tensor) else b for b in betas)
        # foreach and fused pick torch's device kernels: accepted and listed as torch does, no effect here.
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def _init_state(self, p, amsgrad: bool) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            # torch keeps `step` as a float32 scalar tensor, the moments in the parameter's dtype
            state["step"] = fg.tensor(0.0)
            state["exp_avg"] = fg.zeros_like(p)
            state["exp_avg_sq"] = fg.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = fg.zeros_like(p)
        return state

    def _update_group(self, group: dict[str, Any]) -> None:
        # Tensor betas (accepted as torch does) enter the formulas as their values
        beta1, beta2 = (float(b) if isinstance(b, Tensor) else b for b in group["betas"])
        lr, eps, weight_decay, amsgrad = group["lr"], group["eps"], group["weight_decay"], group["amsgrad"]
        attrs = self._fused_attrs(group)
        for p in group["params"]:
            if p.grad is None:
                continue
            _check_not_capturable(group)
            if attrs is not None and self._fused_update(p, group, attrs):
                continue
            grad = -p.grad if group["maximize"] else p.grad
            state = self._init_state(p, amsgrad)
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            # Read the count before the in-place increment: inside fg.compile the
            # state tensor is still concrete here, so this is no graph break, and
            # the Python floats below become runtime scalars of the program.
            step = step_t.item() + 1
            step_t.add_(1)
            grad = _decayed(p, grad, group, lr, weight_decay)
            _update_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
            second = exp_avg_sq
            if amsgrad:
                state["max_exp_avg_sq"].copy_(fg.maximum(state["max_exp_avg_sq"], exp_avg_sq))
                second = state["max_exp_avg_sq"]
            if group["capturable"]:
                self._capturable_update(p, exp_avg, second, step_t, lr, beta1, beta2, eps)
            else:
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                denom = (second.sqrt() / math.sqrt(bias_correction2)).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)

    def _fused_attrs(self, group: dict[str, Any]) -> dict | None:
        """adam_update's attributes for this group, or None where the op does not compute
        what the per-op code does: history recorded, the capturable formula, tensor or
        other non-number hyper-parameters, or an alpha of 1 that the per-op code skips
        multiplying by (beta2 = 0; an int L2 weight decay of 1)."""
        beta1, beta2 = group["betas"][:2]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        if not self._fuse_updates or fg.is_grad_enabled() or group["capturable"] or \
                not _numbers(lr, beta1, beta2, eps, weight_decay) or 1 - beta2 == 1:
            return None
        decay = "none" if weight_decay == 0 else "decoupled" if group["decoupled_weight_decay"] else "l2"
        if decay == "l2" and type(weight_decay) is int and weight_decay == 1:
            return None
        return dict(amsgrad=bool(group["amsgrad"]), maximize=bool(group["maximize"]), weight_decay=decay,
                    lerp_low=1 - beta1 < 0.5)

    def _fused_update(self, p: Tensor, group: dict[str, Any], attrs: dict) -> bool:
        """Update `p` with one adam_update op; False (nothing done but the state's
        creation, which the per-op path would do too) where it does not apply."""
        grad = p.grad
        if not _fusable_grad(p, grad):
            return False
        state = self._init_state(p, attrs["amsgrad"])
        step_t = state["step"]
        moments = [state.get("exp_avg"), state.get("exp_avg_sq")]
        if attrs["amsgrad"]:
            moments.append(state.get("max_exp_avg_sq"))
        if not _writable([p] + moments, p) or not (isinstance(step_t, Tensor) and step_t._dtype is float32 and
                                                   step_t._base is None and step_t._value_shape() == ()):
            return False
        beta1, beta2 = group["betas"][:2]
        lr, weight_decay = group["lr"], group["weight_decay"]
        # Inside fg.compile the state tensor is still concrete here (or holds a number this
        # trace wrote), so reading it is no graph break; the numbers below are runtime scalars.
        step = step_t.item() + 1
        step_size = lr / (1 - beta1 ** step)
        if -step_size == 1:                 # (p.add_ would skip multiplying by alpha = 1)
            return False
        weight = 1 - beta1
        values = dict(weight_decay=weight_decay, decay_factor=1 - lr * weight_decay, weight=weight,
                      beta2=beta2, one_minus_beta2=1 - beta2,
                      sqrt_bias_correction2=math.sqrt(1 - beta2 ** step), eps=group["eps"], neg_step_size=-step_size)
        scalars = [values[name] for name in adam_scalars(attrs)]
        # versions as the per-op code's in-place ops bump them (p.mul_ for decoupled decay, then p.add_;
        # exp_avg_sq.mul_(beta2).add_(...); one op each for the rest)
        _apply_update("adam_update", [p, grad] + moments, scalars, attrs,
                      [2 if attrs["weight_decay"] == "decoupled" else 1, 1, 2, 1])
        # step_t.add_(1) without a kernel: float32's sum is the exact count + 1 rounded to float32,
        # which is what converting the double `step` gives (exact, or far from a float32 tie)
        _write_back(step_t, np.array(step, dtype=np.float32))
        return True

    @staticmethod
    def _capturable_update(p, exp_avg, second, step_t, lr, beta1, beta2, eps) -> None:
        # torch's capturable branch: every step-dependent quantity is a tensor
        step = step_t.to(p.dtype)
        bias_correction1 = 1 - fg.tensor(beta1, dtype=p.dtype) ** step
        bias_correction2 = 1 - fg.tensor(beta2, dtype=p.dtype) ** step
        step_size_neg = -(lr / bias_correction1)
        denom = (second.sqrt() / (bias_correction2.sqrt() * step_size_neg)).add_(eps / step_size_neg)
        p.addcdiv_(exp_avg, denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the update)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """RMSprop (Hinton) as torch's single-tensor implementation, op for op:
    g = grad (+ weight_decay * p);  v = alpha * v + (1 - alpha) * g * g;
    avg = sqrt(v) (centered: sqrt(v - m * m), m = lerp(m, g, 1 - alpha)) + eps;
    p -= lr * g / avg, or with momentum b = momentum * b + g / avg, p -= lr * b."""

    _GROUP_DEFAULTS = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                       "differentiable": False, "capturable": False}
    _STEP_TENSORS = True

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr, strict_order=True)
        for name, value in (("epsilon", eps), ("momentum", momentum), ("weight_decay", weight_decay),
                            ("alpha", alpha)):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {name} value: {value}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fg.tensor(0.0)
                state["square_avg"] = fg.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = fg.zeros_like(p)
                if centered:
                    state["grad_avg"] = fg.zeros_like(p)
            _check_not_capturable(group)
            grad = -p.grad if group["maximize"] else p.grad
            state["step"].add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            if centered:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(grad, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add(eps) if group["differentiable"] else avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(grad, avg, value=-lr)


from fusegrad.optim import lr_scheduler  # noqa: E402  (schedulers read Optimizer)
from fusegrad.optim.extra import ASGD, Adadelta, Adafactor, Adagrad, Adamax, NAdam, RAdam, Rprop  # noqa: E402,F401
from fusegrad.optim.lbfgs import LBFGS  # noqa: E402,F401
from fusegrad.optim import swa_utils  # noqa: E402,F401  (AveragedModel, SWALR, update_bn)
