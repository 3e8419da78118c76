"""CTC loss: torch's `_ctc_loss` (the per-sample negative log-likelihoods, one CtcLossBackward0
node) and its gradient `_ctc_loss_backward`, whose own derivative torch does not define.

ctc_loss(log_probs [T, N, C], targets int64 [N, S] or [sum of target lengths],
input_lengths int64 [N], target_lengths int64 [N]; blank, zero_infinity) -> nll [N]

The lengths are tensors, not attributes, so a compiled program does not depend on their values
(nn/losses.py makes tensors of Python lists). Both ops run only by their references: the
dynamic programmes of torch's CPU kernel (aten/src/ATen/native/LossCTC.cpp), written as Numba
loops in torch's own order of operations, so the values are torch's bit for bit: the same
float32 (or float64) additions, and libm's expf/logf (exp/log), which Numba calls as torch's
C++ does. The loops are compiled on first use (defining a Numba function starts Numba's code
generator, which importing fusegrad should not pay).

The forward's alphas (torch's second result, log_alpha) are not an output here: the gradient
computes them again (the same loop, the same values), so the op's result type does not depend
on the largest target length, a value.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..types import TORCH_SCALAR_NAMES, TensorType, float32, float64
from .registry import OPAQUE, NoDerivativeError, OpDef, register

_CHECKED = "(while checking arguments for ctc_loss_allocate_outputs)"


# ------------------------------------------------------------------ checks
def _infer(types, attrs):
    """torch's checks that depend on types and attributes, in its order (the dispatch on the
    dtype, the empty check, then ctc_loss_allocate_outputs' first checks); the value checks
    come after them (`check_lengths`)."""
    log_probs, targets, input_lengths, target_lengths = types
    if log_probs.dtype not in (float32, float64):
        name = TORCH_SCALAR_NAMES.get(log_probs.dtype.name, log_probs.dtype.name)
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{name}'")
    if math.prod(log_probs.shape) == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if len(log_probs.shape) != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {len(log_probs.shape)}-dimensional tensor for "
                           f"argument #1 'log_probs' {_CHECKED}")
    if not 1 <= len(targets.shape) < 3:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {len(targets.shape)}-dimensional tensor for "
                           f"argument #2 'targets' {_CHECKED}")
    batch, labels = log_probs.shape[1], log_probs.shape[2]
    if not 0 <= attrs["blank"] < labels:
        raise RuntimeError("blank must be in label range")
    if input_lengths.shape != (batch,):
        raise RuntimeError("input_lengths must be of size batch_size")
    if target_lengths.shape != (batch,):
        raise RuntimeError("target_lengths must be of size batch_size")
    return [TensorType((batch,), log_probs.dtype)]


def check_lengths(log_probs_shape: tuple, targets, input_lengths, target_lengths) -> np.ndarray:
    """torch's checks of the lengths' values and the targets' size, in its order (each
    length in turn); returns where each sample's targets start in the flattened targets.
    Also fusegrad's own check that each label read lies in [0, C): torch reads whatever memory
    an index out of range names (see README)."""
    max_input, batch, labels = log_probs_shape
    if targets.ndim == 1:
        offsets, pos = np.zeros(batch, np.int64), 0
        for i in range(batch):
            _at_least(target_lengths[i], "target_lengths")
            offsets[i] = pos
            pos += int(target_lengths[i])
        _check_size(targets, 0, pos)
        row = 1
    else:
        for i in range(batch):
            _at_least(target_lengths[i], "target_lengths")
        _check_size(targets, 0, batch)
        longest = int(target_lengths.max()) if batch else 0
        if targets.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{targets.shape[1]} for argument #2 'targets' {_CHECKED}")
        row = targets.shape[1]
        offsets = np.arange(batch, dtype=np.int64) * row
    for b in range(batch):
        _at_least(input_lengths[b], "input_lengths")
        if input_lengths[b] > max_input:
            raise RuntimeError(f"Expected input_lengths to have value at most {max_input}, but got value "
                               f"{input_lengths[b]} {_CHECKED}")
    flat = targets.reshape(-1)
    for b in range(batch):
        used = flat[offsets[b]:offsets[b] + int(target_lengths[b])]
        if used.size and (used.min() < 0 or used.max() >= labels):
            bad = used[(used < 0) | (used >= labels)][0]
            raise RuntimeError(f"ctc_loss: target label {bad} is out of range for {labels} classes (fusegrad checks "
                               "what torch's CPU kernel reads unchecked)")
    return offsets


def _at_least(value, name: str) -> None:
    if value < 0:
        raise RuntimeError(f"Expected {name} to have value at least 0, but got value {value} {_CHECKED}")


def _check_size(targets, dim: int, size: int) -> None:
    if targets.shape[dim] != size:
        raise RuntimeError(f"Expected tensor to have size {size} at dimension {dim}, but got size "
                           f"{targets.shape[dim]} for argument #2 'targets' {_CHECKED}")


def _check_now(in_types, arrays, attrs):
    """The value checks on lengths and targets known at trace time (registry.check_values_now)."""
    if all(a is not None for a in arrays[1:]):
        check_lengths(in_types[0].shape, *arrays[1:])


# ------------------------------------------------------------------ the loops
@functools.cache
def _loops():
    """The two dynamic programmes as Numba functions, compiled on first use. Each is torch's
    CPU loop for one sample b at a time; `flat`/`offsets` address the targets as torch's
    get_target_prime does (an even position of the extended target is the blank, an odd one
    2k+1 is the k-th label)."""
    from numba import njit

    @njit(nogil=True)
    def prime(flat, offset, s, blank):
        return blank if s % 2 == 0 else flat[offset + s // 2]

    @njit(nogil=True)
    def alphas(lp, flat, offsets, input_lengths, target_lengths, blank, log_alpha, nll, neginf, zero):
        """log_alpha[b, t, s] (filled with -inf beforehand) and nll[b]: eq. (6)-(8) of Graves et al."""
        for b in range(lp.shape[1]):
            steps, length, offset = input_lengths[b], target_lengths[b], offsets[b]
            if steps == 0:
                # (no input: likelihood 1 for an empty target, else 0; -0.0 as torch's -(0))
                nll[b] = -zero if length == 0 else -neginf
                continue
            log_alpha[b, 0, 0] = lp[0, b, blank]
            if length > 0:
                log_alpha[b, 0, 1] = lp[0, b, prime(flat, offset, 1, blank)]
            for t in range(1, steps):
                for s in range(2 * length + 1):
                    current = prime(flat, offset, s, blank)
                    la1 = log_alpha[b, t - 1, s]
                    lamax = la1
                    if s > 0:
                        la2 = log_alpha[b, t - 1, s - 1]
                        if la2 > lamax:
                            lamax = la2
                    else:
                        la2 = neginf
                    if s > 1 and prime(flat, offset, s - 2, blank) != current:
                        la3 = log_alpha[b, t - 1, s - 2]
                        if la3 > lamax:
                            lamax = la3
                    else:
                        la3 = neginf
                    if lamax == neginf:         # (no -inf - -inf)
                        lamax = zero
                    log_alpha[b, t, s] = (math.log(math.exp(la1 - lamax) + math.exp(la2 - lamax)
                                                   + math.exp(la3 - lamax)) + lamax + lp[t, b, current])
            if length == 0:
                nll[b] = -log_alpha[b, steps - 1, 0]
            else:
                l1 = log_alpha[b, steps - 1, 2 * length]
                l2 = log_alpha[b, steps - 1, 2 * length - 1]
                m = l2 if l1 < l2 else l1       # (std::max)
                if m == neginf:
                    m = zero
                nll[b] = -(math.log(math.exp(l1 - m) + math.exp(l2 - m)) + m)

    @njit(nogil=True)
    def gradient(grad_out, lp, flat, offsets, input_lengths, target_lengths, nll, log_alpha, log_beta, grad,
                 blank, zero_infinity, neginf, zero):
        """grad (filled with -inf beforehand): the betas (eq. (10), (11)), alpha * beta collected
        per label in log space (eq. (16)), then torch's (exp(lp) - exp(collected + nll - lp)) * g."""
        steps_max, labels = lp.shape[0], lp.shape[2]
        for b in range(lp.shape[1]):
            loss = nll[b]
            if zero_infinity and loss == -neginf:
                grad[:, b, :] = zero
                continue
            steps, length, offset = input_lengths[b], target_lengths[b], offsets[b]
            if steps > 0:
                last = steps - 1
                log_beta[b, last, 2 * length] = lp[last, b, blank]
                grad[last, b, blank] = log_alpha[b, last, 2 * length] + log_beta[b, last, 2 * length]
                if length > 0:
                    current = prime(flat, offset, 2 * length - 1, blank)
                    log_beta[b, last, 2 * length - 1] = lp[last, b, current]
                    # (a blank and a label: different, so set, not log-added; a label equal to the
                    # blank overwrites the blank's, as torch's)
                    grad[last, b, current] = log_alpha[b, last, 2 * length - 1] + log_beta[b, last, 2 * length - 1]
            for t in range(steps - 2, -1, -1):
                for s in range(2 * length, -1, -1):
                    lb1 = log_beta[b, t + 1, s]
                    lbmax = lb1
                    current = prime(flat, offset, s, blank)
                    if s < 2 * length:
                        lb2 = log_beta[b, t + 1, s + 1]
                        if lb2 > lbmax:
                            lbmax = lb2
                    else:
                        lb2 = neginf
                    if s < 2 * length - 1 and prime(flat, offset, s + 2, blank) != current:
                        lb3 = log_beta[b, t + 1, s + 2]
                        if lb3 > lbmax:
                            lbmax = lb3
                    else:
                        lb3 = neginf
                    if lbmax == neginf:
                        lbmax = zero
                    log_beta[b, t, s] = (math.log(math.exp(lb1 - lbmax) + math.exp(lb2 - lbmax)
                                                  + math.exp(lb3 - lbmax)) + lbmax + lp[t, b, current])
                    log_alpha_beta = log_alpha[b, t, s] + log_beta[b, t, s]
                    lcab = grad[t, b, current]
                    if lcab == neginf:
                        grad[t, b, current] = log_alpha_beta
                    else:
                        m = log_alpha_beta if lcab < log_alpha_beta else lcab
                        grad[t, b, current] = math.log(math.exp(lcab - m) + math.exp(log_alpha_beta - m)) + m
            g = grad_out[b]
            for t in range(steps):
                for c in range(labels):
                    p = lp[t, b, c]
                    grad[t, b, c] = (math.exp(p) - math.exp(grad[t, b, c] + loss - p)) * g
            for t in range(steps, steps_max):
                grad[t, b, :] = zero

    return alphas, gradient


def _alphas(log_probs, targets, input_lengths, target_lengths, blank):
    """(log_alpha [N, T, 2 * longest target + 1], nll [N]) as torch's forward computes them."""
    offsets = check_lengths(log_probs.shape, targets, input_lengths, target_lengths)
    scalar = log_probs.dtype.type
    longest = int(target_lengths.max())
    log_alpha = np.full((log_probs.shape[1], log_probs.shape[0], 2 * longest + 1), -np.inf, log_probs.dtype)
    nll = np.empty(log_probs.shape[1], log_probs.dtype)
    alphas, _ = _loops()
    alphas(log_probs, np.ascontiguousarray(targets).reshape(-1), offsets, input_lengths.astype(np.int64),
           target_lengths.astype(np.int64), int(blank), log_alpha, nll, scalar(-np.inf), scalar(0))
    return log_alpha, nll, offsets


def _ref(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    return _alphas(log_probs, targets, input_lengths, target_lengths, blank)[1]


def _vjp(e, x, y, g, a, n):
    log_probs, targets, input_lengths, target_lengths = x
    if not n[0]:
        return [None] * 4
    grad = e.op("ctc_loss_backward", g[0], log_probs, targets, input_lengths, target_lengths, y[0],
                blank=a["blank"], zero_infinity=a["zero_infinity"])
    return [grad, None, None, None]


# ------------------------------------------------------------------ the gradient
def _backward_infer(types, attrs):
    return [types[1]]


def _backward_ref(grad_out, log_probs, targets, input_lengths, target_lengths, nll, blank, zero_infinity):
    """torch's _ctc_loss_backward: the alphas again, then its gradient loop (which assumes the
    log_probs are a log_softmax's: exp(log_probs) - ..., not the derivative by log_probs alone)."""
    log_alpha, _, offsets = _alphas(log_probs, targets, input_lengths, target_lengths, blank)
    scalar = log_probs.dtype.type
    grad = np.full(log_probs.shape, -np.inf, log_probs.dtype)
    _, gradient = _loops()
    gradient(np.ascontiguousarray(grad_out, log_probs.dtype).reshape(-1), log_probs,
             np.ascontiguousarray(targets).reshape(-1), offsets, input_lengths.astype(np.int64),
             target_lengths.astype(np.int64), np.asarray(nll, log_probs.dtype), log_alpha,
             np.full_like(log_alpha, -np.inf), grad, int(blank), bool(zero_infinity), scalar(-np.inf), scalar(0))
    return grad


def _backward_vjp(e, x, y, g, a, n):
    raise NoDerivativeError("derivative for aten::_ctc_loss_backward is not implemented")


register(OpDef("ctc_loss", OPAQUE, _infer, _ref, _vjp, reference_only=True, nondiff_inputs=(1, 2, 3),
               doc="ctc_loss(log_probs, targets, input_lengths, target_lengths; blank, zero_infinity): each "
                   "sample's CTC negative log-likelihood (torch's _ctc_loss)",
               extra={"reference_why": "a dynamic programme over time steps (torch's CPU loops)",
                      "row_major_result": True, "torch_edges": (0,), "value_checks": True,
                      "check_now": _check_now}))
register(OpDef("ctc_loss_backward", OPAQUE, _backward_infer, _backward_ref, _backward_vjp, reference_only=True,
               nondiff_inputs=(2, 3, 4),
               doc="ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll; blank, "
                   "zero_infinity): ctc_loss's gradient by log_probs (torch's _ctc_loss_backward)",
               extra={"reference_why": "a dynamic programme over time steps (torch's CPU loops)",
                      "row_major_result": True, "node": "NotImplemented"}))
