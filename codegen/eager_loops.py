"""Eager forms of ops whose NumPy references are slow (ir.ops.EAGER_FORMS), as Numba loops, so
that eager code gets the speed and the values of compiled code:

- float32 erf, exact GELU and its gradient, leaky_relu and its gradient, elu and its gradient,
  and silu: loops over the vectorised math. erf's reference evaluates Cody's ranges in
  float64, correctly rounded to float32 but slow: an eager exact GELU of 4M float32 elements
  took 50 ms (torch: 0.8), its backward, eleven NumPy passes, 50 ms more. The activations'
  references are np.where over temporaries, on one thread: leaky_relu 31 ms, elu 30, silu
  12 (torch 0.8-8.6). The loops take 1-3 ms each (2048x2048). They compute what a compiled
  kernel computes, operation for operation (as the op table's kernel expressions and
  decompositions say), so eager and compiled results are the same bits; against the
  references they differ by at most the vectorised math's 1 ulp (erf, exp, expm1), and
  leaky_relu's not at all.
- erfc: float32 the vectorised fg_erfc (within 1 ulp), float64 libm's erfc, the reference's
  bits (which calls it from Python once per element): 670 -> 10 ms on 4M float32 elements.
  float64 erf: libm's erf, as torch (Cody's float64 ranges, the reference, are up to 4 ulp off).
- float fmod, remainder and div_floor (remainder's gradient): the kernels' exact formulas,
  the references' bits (4M float32 elements, on a busy machine: fmod 213 -> 49 ms, remainder
  245 -> 43, div_floor 297 -> 41; np.fmod's float loops do not vectorise either).
- float lerp: torch's two FMAs by the hardware instruction, the reference's bits (which
  emulates the FMA in wider arithmetic, block by block): 4M elements with a tensor weight,
  float32 108 -> 3.2 ms, float64 547 -> 11.
- float rsqrt: 1/sqrt(x) in one pass, the reference's bits (two NumPy passes; 4M float32
  elements 6.7 -> 2.2 ms).
- float layer_norm: a row at a time in float64, rounded once, as the reference (five float64
  passes over fresh temporaries on one thread); its sums reassociated so that they vectorise,
  which moves a float64 result by an ulp or so (float32 results: the reference's bits in the
  tests). 2048x2048 float32: 37 -> 2.8 ms (torch 2.5).
- float softmax, log_softmax and their backward ops (softmax_backward_data,
  log_softmax_backward_data) along the last axis: a row at a time, its maximum by LLVM's
  vectorised maximum, the vectorised exp, the exponentials summed in the dtype over chunks of
  1024 and the chunks in float64 (as compiled kernels sum; the backward's sums in float64),
  the sums rounded once (the references sum in the dtype, pairwise), in one pass over memory
  where the references make four or five. 8192x512 float32 log_softmax: 3.8 -> 2.7 ms (torch
  2.2; the maximum in 16 running maxima and the exponentials summed in float64 before). Within
  float32's rounding of the references and of torch (a changed sum moves a row by an ulp).
  These references also write into buffers of the pool, so the loops are lent for that too
  (ir.ops.EAGER_INTO_FORMS). logsumexp over trailing dims likewise (2048x2048 float32, the
  reference with its temporaries pooled: 8 ms, torch 2.4).
- the optimizers' sgd_update and adam_update: one pass over the parameter and its state, the
  references' bits (their FMAs the hardware's), where the references make four to ten NumPy
  passes into fresh arrays; and in-place forms (ir.ops.optim_update.IN_PLACE_FORMS) through
  which fusegrad.optim's eager step writes over the tensors' own memory (noalias: they decline
  arrays that share memory), with no results to copy back. A 784-512-512-512-10 MLP's eager
  Adam step: 15 -> 9.2 ms (torch 7.8); a 3072-1024-256-10 MLP's SGD with momentum 35 -> 19-22
  (torch 15-16).

The loops are defined in codegen/eager_loops_jit.py and imported on the first call that takes
them (torch_order_jit.loop_pays: Numba set up in the process, or a purely eager process's calls
past a million elements; the softmax loops, which save less, count a sixteenth of theirs, so a
purely eager process does not pay Numba's set-up, about 0.5 s, on its first softmax of 4M
elements: W3's first eager call took 0.55 s, 0.06 before). Other dtypes, empty arrays and calls
the policy declines run the references."""
from __future__ import annotations

import math

import numpy as np

from fusegrad.ir import threaded
from fusegrad.ir.ops import EAGER_FORMS, EAGER_INTO_FORMS, OPS
from fusegrad.ir.ops.optim_update import IN_PLACE_FORMS, adam_scalars, sgd_scalars
from fusegrad.ir.torch_cpu import vector_ranges
from fusegrad.ir.torch_order_jit import in_blocks, loop_pays, sliced_blocks


def _flat_loop(loop, operands: list, scalars: tuple) -> np.ndarray:
    """loop(*flat operands, out, *scalars) over the elements of same-shaped operands of one
    dtype in row-major order (on threads where large); returns out, of their shape and dtype."""
    flat = [np.ascontiguousarray(a).reshape(-1) for a in operands]
    out = np.empty(flat[0].shape, flat[0].dtype)
    return sliced_blocks(loop, flat, out, *scalars).reshape(operands[0].shape)


_FLOAT32 = (np.dtype(np.float32),)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _lend(op: str, loop: str, arrays: int = 1, applies=None, dtypes=_FLOAT32, takes=None) -> None:
    """Lend `op` the eager form running codegen/eager_loops_jit.py's `loop` on its first
    `arrays` arguments (arrays of one dtype among `dtypes`, broadcast to one shape) and the
    rest as scalars of that dtype (0-d arrays), where `applies(**attrs)` (default: always),
    `takes(*operands)` (default: always) and the policy (torch_order_jit.loop_pays) take it;
    elsewhere the op's reference."""
    reference = OPS[op].ref

    def eager_form(*args, **attrs):
        operands = [np.asarray(a) for a in args[:arrays]]
        scalars = [np.asarray(a) for a in args[arrays:]]
        dtype = operands[0].dtype
        if (applies is not None and not applies(**attrs)) or dtype not in dtypes \
                or any(a.dtype != dtype for a in operands + scalars) or any(s.ndim for s in scalars) \
                or (takes is not None and not takes(*operands)):
            return reference(*args, **attrs)
        if len({a.shape for a in operands}) > 1:
            operands = np.broadcast_arrays(*operands)
        if not _takes_loop(operands[0]):
            return reference(*args, **attrs)
        from . import eager_loops_jit
        return _flat_loop(getattr(eager_loops_jit, loop), operands, tuple(s[()] for s in scalars))
    eager_form.__name__ = eager_form.__qualname__ = f"{op}_eager"
    eager_form.__doc__ = f"{op}: codegen/eager_loops_jit.py's {loop} where it applies, else the reference."
    EAGER_FORMS[op] = eager_form


def _takes_loop(x: np.ndarray, share: int = 1) -> bool:
    """Whether a form runs its loop on `x` (see the module docstring): a non-empty operand, and
    the policy's say, for which the call counts 1/`share` of its elements."""
    return x.size > 0 and loop_pays(x.size // share)


# The softmax loops save about 0.7 ns an element over their references (erf's save ~12): a
# purely eager process counts a sixteenth of their elements toward setting Numba up.
_ROW_LOOP_SHARE = 16


def _exact(approximate="none") -> bool:
    return approximate == "none"


def _from_input(from_result=False) -> bool:
    return not from_result


def _one_torch_chunk(grad: np.ndarray, source: np.ndarray) -> bool:
    """elu_backward's loop places torch's vector and scalar formulas (they differ at a NaN) as
    torch does for a contiguous source of one shape with its gradient, short of the length
    torch splits among threads (ir/torch_cpu.py vector_ranges); the reference does the rest."""
    return source.flags.c_contiguous and grad.shape == source.shape and \
        len(vector_ranges(source.size, source.dtype)) == 1


# (float64 too: libm's erf, correctly rounded where the reference's Cody ranges are up to 4 ulp off)
_lend("erf", "erf_into", dtypes=_FLOATS)
# (float64 too: libm's erfc, the reference's, which calls it from Python once per element)
_lend("erfc", "erfc_into", dtypes=_FLOATS)
_lend("gelu", "gelu_into", applies=_exact)
_lend("gelu_backward", "gelu_backward_into", arrays=2, applies=_exact)
_lend("leaky_relu", "leaky_relu_into")
_lend("leaky_relu_backward", "leaky_relu_backward_into", arrays=2)
_lend("elu", "elu_into")
_lend("elu_backward", "elu_backward_into", arrays=2, applies=_from_input, takes=_one_torch_chunk)
_lend("silu", "silu_into")
# (floats of both widths: exact operations, the references' bits)
_lend("fmod", "fmod_into", arrays=2, dtypes=_FLOATS)
_lend("remainder", "remainder_into", arrays=2, dtypes=_FLOATS)
_lend("div_floor", "div_floor_into", arrays=2, dtypes=_FLOATS)
_lend("lerp", "lerp_into", arrays=3, dtypes=_FLOATS)
_lend("rsqrt", "rsqrt_into", dtypes=_FLOATS)


def _layer_norm(x, weight, bias, ndim, eps):
    """layer_norm: codegen/eager_loops_jit.py's layer_norm_into, a row at a time in float64
    (the reference's formula and rounding; its sums in another order, within float64 ulps),
    where x, weight and bias are float32 or float64 of one dtype and the policy takes it; else
    the reference, which makes five float64 passes over fresh temporaries on one thread
    (2048x2048 float32: 37 ms, torch 3.3)."""
    x, weight, bias = np.asarray(x), np.asarray(weight), np.asarray(bias)
    if x.dtype not in _FLOATS or weight.dtype != x.dtype or bias.dtype != x.dtype or not _takes_loop(x):
        return OPS["layer_norm"].ref(x, weight, bias, ndim=ndim, eps=eps)
    from . import eager_loops_jit
    rows = np.ascontiguousarray(x).reshape(-1, weight.size)
    out = sliced_blocks(eager_loops_jit.layer_norm_into, (rows,), np.empty(rows.shape, x.dtype),
                        np.ascontiguousarray(weight).reshape(-1), np.ascontiguousarray(bias).reshape(-1), float(eps))
    return out.reshape(x.shape)


EAGER_FORMS["layer_norm"] = _layer_norm


def _lend_rows(op: str, loop: str) -> None:
    """Lend `op` (a softmax or its backward along `axis`: ops whose references write into given
    memory) eager forms running codegen/eager_loops_jit.py's `loop` a row at a time, where the
    axis is the last, the operands and the result are row-major, of one shape and one float
    dtype, and the policy takes it; elsewhere the reference's `ref_into`. (A broadcast operand,
    the gradient of a sum, takes the reference: a row-major copy of it cost more than the
    loop saves.)"""
    reference_into = OPS[op].extra["ref_into"]

    def into(out, *operands, axis):
        n = out.shape[-1] if out.ndim else 0
        if not n or axis % out.ndim != out.ndim - 1 or out.dtype not in _FLOATS or not out.flags.c_contiguous \
                or any(a.shape != out.shape or a.dtype != out.dtype or not a.flags.c_contiguous for a in operands) \
                or not _takes_loop(out, _ROW_LOOP_SHARE):
            reference_into(out, *operands, axis=axis)
            return
        from . import eager_loops_jit
        rows = tuple(a.reshape(-1, n) for a in operands)
        sliced_blocks(getattr(eager_loops_jit, loop), rows, out.reshape(-1, n))

    def eager_form(*operands, axis):
        out = np.empty(np.broadcast_shapes(*(np.shape(a) for a in operands)), np.asarray(operands[0]).dtype)
        into(out, *[np.asarray(a) for a in operands], axis=axis)
        return out
    for form, kind in ((into, "into"), (eager_form, "eager")):
        form.__name__ = form.__qualname__ = f"{op}_{kind}"
        form.__doc__ = f"{op}: codegen/eager_loops_jit.py's {loop} where it applies, else the reference."
    EAGER_FORMS[op], EAGER_INTO_FORMS[op] = eager_form, into


_lend_rows("softmax", "softmax_rows_into")
_lend_rows("log_softmax", "log_softmax_rows_into")
_lend_rows("softmax_backward_data", "softmax_backward_rows_into")
_lend_rows("log_softmax_backward_data", "log_softmax_backward_rows_into")


def _logsumexp(x, axes, keepdim):
    """logsumexp: codegen/eager_loops_jit.py's logsumexp_rows_into, a row at a time, over the
    trailing axes of a row-major float array where the policy takes it (counting a sixteenth of
    its elements, as the softmax loops); else the reference (2048x2048 float32: 8 ms, torch 2.4)."""
    x = np.asarray(x)
    trailing = tuple(range(x.ndim - len(axes), x.ndim))
    if x.dtype not in _FLOATS or not axes or tuple(sorted(a % x.ndim for a in axes)) != trailing \
            or not x.flags.c_contiguous or not _takes_loop(x, _ROW_LOOP_SHARE):
        return OPS["logsumexp"].ref(x, axes=axes, keepdim=keepdim)
    from . import eager_loops_jit
    kept = x.shape[:x.ndim - len(axes)]
    rows = x.reshape(math.prod(kept), -1)       # (no dim of x is 0: _takes_loop wants elements)
    out = sliced_blocks(eager_loops_jit.logsumexp_rows_into, (rows,), np.empty(rows.shape[0], x.dtype))
    return out.reshape(kept + (1,) * len(axes) if keepdim else kept)


EAGER_FORMS["logsumexp"] = _logsumexp


def _update_operands(arrays: tuple, n: int):
    """(tensors, numbers) of an update op's call (its first `n` operands tensors, the rest
    numbers) that a loop takes: row-major tensors of one shape and float dtype, 0-d scalars of
    that dtype, and the policy's say; else None. (Once per parameter and step: plain loops.)"""
    p = arrays[0]
    if type(p) is not np.ndarray or p.dtype not in _FLOATS:
        return None
    shape, dtype = p.shape, p.dtype
    for a in arrays[:n]:
        if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous:
            return None
    numbers = []
    for s in arrays[n:]:
        if type(s) is not np.ndarray or s.ndim or s.dtype != dtype:
            return None
        numbers.append(s[()])
    if not _takes_loop(p):
        return None
    return list(arrays[:n]), numbers


def _run_in_blocks(loop, flat: list, args: tuple) -> None:
    """loop(*flat, *args) over blocks of the flat arrays, on threads where large (a small
    parameter's in one call, with no slices made)."""
    size = flat[0].shape[0]
    if size < threaded.MIN_ELEMENTS:
        loop(*flat, *args)
    else:
        in_blocks(lambda lo, hi: loop(*[a[lo:hi] for a in flat], *args), size, size)


def _share_memory(arrays: list) -> bool:
    """Whether two of `arrays` may share memory (an in-place form then declines)."""
    return any(np.may_share_memory(a, b) for k, a in enumerate(arrays) for b in arrays[k + 1:])


def _adam_in_place(tensors: list, numbers: list, attrs: dict) -> None:
    """adam_update_in_place over flat views of `tensors` (param, grad, exp_avg, exp_avg_sq[,
    max_exp_avg_sq]), on threads where large."""
    from . import eager_loops_jit
    flat = [a.reshape(-1) for a in tensors]
    if not attrs["amsgrad"]:
        flat.append(np.empty(flat[0].shape[0], flat[0].dtype))    # (the running maximum: unread)
    if attrs["weight_decay"] == "none":
        numbers = [tensors[0].dtype.type(0)] + numbers          # (the decay: unread)
    flags = (attrs["weight_decay"] == "decoupled", attrs["maximize"], attrs["weight_decay"] == "l2",
             attrs["lerp_low"], attrs["amsgrad"])
    _run_in_blocks(eager_loops_jit.adam_update_in_place, flat, (*numbers, *flags))


def _sgd_in_place(tensors: list, numbers: list, attrs: dict) -> None:
    """sgd_update_in_place over flat views of `tensors` (param, grad[, momentum buffer]): the
    five numbers weight_decay, momentum, one_minus_dampening, nesterov_momentum, neg_lr (absent
    ones 0), on threads where large."""
    from . import eager_loops_jit
    given = dict(zip(sgd_scalars(attrs), numbers))
    zero = tensors[0].dtype.type(0)
    numbers = [given.get(name, zero) for name in
               ("weight_decay", "momentum", "one_minus_dampening", "nesterov_momentum", "neg_lr")]
    flat = [a.reshape(-1) for a in tensors]
    if not attrs["momentum"]:
        flat.append(np.empty(flat[0].shape[0], flat[0].dtype))     # (the buffer: unread)
    flags = (attrs["maximize"], attrs["weight_decay"], attrs["momentum"], attrs["dampening"], attrs["nesterov"])
    _run_in_blocks(eager_loops_jit.sgd_update_in_place, flat, (*numbers, *flags))


def _lend_update(op: str, scalar_names, in_place) -> None:
    """Lend update op `op` (its operands: the parameter, its gradient, its state tensors, then
    one number per name of `scalar_names(attrs)`) an eager form and an in-place form running
    `in_place(tensors, numbers, attrs)`, a loop that writes the results over the parameter and
    the state, where _update_operands takes the operands; elsewhere the reference, and the
    in-place form declines (False). The eager form runs it over copies of the updated tensors
    (as the reference, it returns the parameter alone where it is the only result); the
    in-place form, through which fusegrad.optim's eager step writes over the tensors
    themselves, over the tensors where no two of them, the gradient included, share memory."""
    reference = OPS[op].ref

    def eager_form(*arrays, **attrs):
        taken = _update_operands(arrays, len(arrays) - len(scalar_names(attrs)))
        if taken is None:
            return reference(*arrays, **attrs)
        tensors, numbers = taken
        copies = [t if k == 1 else t.copy() for k, t in enumerate(tensors)]    # (the gradient: read only)
        in_place(copies, numbers, attrs)
        updated = copies[:1] + copies[2:]
        return updated[0] if len(updated) == 1 else tuple(updated)

    def in_place_form(*arrays, **attrs) -> bool:
        taken = _update_operands(arrays, len(arrays) - len(scalar_names(attrs)))
        if taken is None or _share_memory(taken[0]):
            return False
        in_place(*taken, attrs)
        return True
    eager_form.__name__ = eager_form.__qualname__ = f"{op}_eager"
    in_place_form.__name__ = in_place_form.__qualname__ = f"{op}_in_place"
    EAGER_FORMS[op], IN_PLACE_FORMS[op] = eager_form, in_place_form


_lend_update("adam_update", adam_scalars, _adam_in_place)
_lend_update("sgd_update", sgd_scalars, _sgd_in_place)
