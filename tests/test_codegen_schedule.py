"""The fusion schedule of canonical programs: kernel counts and what is stored.

These assert the documented counts (codegen/schedule.py, "Canonical kernel
counts"); a few also run the program to check the fused result.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from fusegrad.codegen import KERNEL, MATMUL_CALL, REFERENCE, VIEW, schedule
from fusegrad.ir import float32
from test_codegen_support import build, check, random_args

CHAIN = ["tanh", "sigmoid", "exp", "mul", "sin", "add", "neg", "cos", "mul", "sigmoid",
         "abs", "sqrt", "mul", "relu", "sub", "exp", "tanh", "div", "cos", "add"]


def chain(e, x, s):
    """20 elementwise ops; the binary ones take the 0-d scalar `s` (a Python number at runtime)."""
    h = x
    for op in CHAIN:
        h = e.op(op, h, s) if op in ("mul", "add", "sub", "div") else e.op(op, h)
    return h


def kinds(sched):
    return [s.kind for s in sched.steps]


def guard_ids(sched) -> set:
    """The trig guards' outputs (codegen/trig_guard.py: one per shape of sin/cos arguments)."""
    outs = sched.program.outputs
    return {v.id for v in outs[len(outs) - sched.guards:]}


def test_chain_of_20_elementwise_ops_is_one_kernel():
    sched = schedule(build(chain, (64, 32), ()))
    assert kinds(sched) == [KERNEL]
    (k,) = sched.kernels
    assert sched.guards == 1                  # sin's argument and two cos arguments: one shape
    # the 20 ops, abs, ge, where (the running flag) per guarded argument (3) and the
    # flag's amax: fused into the same loop
    assert len([i for i in k.instrs if i not in k.inlined]) == 20 + 3 * 3 + 1
    assert {v.id for v in k.stores} >= guard_ids(sched)
    assert len(k.stores) == 1 + sched.guards  # otherwise only the output is written


def test_chain_backward_is_one_kernel():
    """Forward, loss and backward of the chain: one kernel writing the loss and the
    gradients (x's elementwise; the scalar's, a sum over everything, as a tail)."""
    p = build(lambda e, x, s: e.sum(chain(e, x, s), (0, 1)), (64, 32), (), grad=True)
    sched = schedule(p)
    assert kinds(sched) == [KERNEL]
    stores = sched.kernels[0].stores
    assert [v.shape for v in stores if v.id not in guard_ids(sched)] == [(), (), (64, 32)]
    assert {v.id for v in stores} >= guard_ids(sched)
    check(p, random_args(p, np.random.default_rng(9), low=0.1, high=1.0), rtol=1e-4, atol=1e-5)


def test_chain_with_broadcast_weight_backward_is_one_kernel():
    """The weight's gradient (a sum over the batch axis) is a tail reduction of the same kernel."""
    p = build(lambda e, x, w: e.sum(e.tanh(e.mul(e.exp(e.mul(x, w)), w)), (0, 1)), (64, 32), (32,), grad=True)
    sched = schedule(p)
    assert kinds(sched) == [KERNEL]
    check(p, random_args(p, np.random.default_rng(0)), rtol=1e-4, atol=1e-5)


def softmax(e, x):
    return e.op("softmax", x, axis=1)


def layernorm(e, x, w, b):
    m = e.op("mean", x, axes=(1,), keepdim=True)
    xc = e.sub(x, m)
    v = e.op("mean", e.mul(xc, xc), axes=(1,), keepdim=True)
    return e.add(e.mul(e.div(xc, e.sqrt(e.add(v, 1e-5))), w), b)


def cross_entropy(e, logits, onehot):
    ls = e.op("log_softmax", logits, axis=1)
    return e.op("mean", e.neg(e.sum(e.mul(ls, onehot), (1,))), axes=(0,), keepdim=False)


@pytest.mark.parametrize("grad", [False, True])
def test_softmax_is_one_kernel_of_three_phases(grad):
    """max, then sum of exp(x - max), then the normalised output: one kernel, three
    inner loops per row. The backward's row sum of g*y shares the output's loop
    (phase 2) and the input gradient needs one more (phase 3)."""
    sched = schedule(build(softmax, (64, 32), grad=grad))
    assert kinds(sched) == [KERNEL]
    k = sched.kernels[0]
    assert k.layout == "row" and k.analysis.phases == (4 if grad else 3)


@pytest.mark.parametrize("grad", [False, True])
def test_layernorm_is_one_kernel(grad):
    """Mean, variance and the normalised output, and with grad=True the input
    gradient (row phases) and the weight and bias gradients (tail reductions)."""
    p = build(layernorm, (64, 32), (32,), (32,), grad=grad)
    sched = schedule(p)
    assert kinds(sched) == [KERNEL]
    if grad:
        assert len(sched.kernels[0].analysis.tails) == 2
        check(p, random_args(p, np.random.default_rng(1)), rtol=1e-4, atol=1e-5)


def test_cross_entropy_forward_and_backward_is_one_kernel():
    p = build(cross_entropy, (64, 10), (64, 10), grad=True)
    sched = schedule(p)
    assert kinds(sched) == [KERNEL]
    args = random_args(p, np.random.default_rng(2))
    args[1] = np.eye(10, dtype=np.float32)[np.arange(64) % 10]
    check(p, args, rtol=1e-4, atol=1e-6)


def mlp(e, x, w1, b1, w2, b2, onehot):
    h = e.op("relu", e.add(e.matmul(x, w1), b1))
    return cross_entropy(e, e.add(e.matmul(h, w2), b2), onehot)


def test_mlp_training_step_schedule():
    """784-256-10 MLP loss and all gradients: 6 BLAS calls, 3 kernels (bias+relu;
    the loss with its gradient and the second bias's; relu's backward with the
    first bias's gradient) and transposes as views."""
    p = build(mlp, (16, 784), (784, 256), (256,), (256, 10), (10,), (16, 10), grad=True)
    sched = schedule(p)
    k = kinds(sched)
    assert k.count(KERNEL) == 3 and k.count(MATMUL_CALL) == 6
    assert set(k) == {KERNEL, MATMUL_CALL, VIEW}
    # Rule 5: the forward kernel writes only the activation; relu's backward mask is
    # recomputed from it by the kernel that reads it (no bool mask in memory).
    forward = sched.kernels[0]
    assert [i.op for i in forward.instrs if i not in forward.inlined] == ["add", "relu"]
    assert [v.dtype for v in forward.stores] == [float32]
    backward = next(kk for kk in sched.kernels if any(i.op == "where" for i in kk.instrs))
    assert "le" in [i.op for i in backward.inlined]
    args = random_args(p, np.random.default_rng(3), low=-0.1, high=0.1)
    args[5] = np.eye(10, dtype=np.float32)[np.arange(16) % 10]
    check(p, args, rtol=1e-4, atol=1e-6)


def test_cheap_value_read_by_one_other_kernel_is_recomputed_there():
    """Rule 5: le(h, 0) is computed where a later kernel (after a matmul that reads h)
    needs it, instead of being written by h's kernel; an exp is never recomputed."""
    def program(e, x, w, cheap):
        h = e.op("relu", x)
        mask_or_exp = e.le(h, 0) if cheap else e.exp(h)
        back = e.matmul(h, w)
        return e.where(mask_or_exp, back, h) if cheap else e.add(mask_or_exp, back)
    for cheap in (True, False):
        p = build(lambda e, x, w: program(e, x, w, cheap), (8, 8), (8, 8))
        sched = schedule(p)
        first, second = sched.kernels
        assert [v.shape for v in first.stores] == ([(8, 8)] if cheap else [(8, 8), (8, 8)])
        assert ("le" in [i.op for i in second.inlined]) == cheap
        check(p, random_args(p, np.random.default_rng(5)), rtol=1e-5)


def test_no_fusion_into_a_cycle():
    """a = exp(x) feeds a matmul whose result is added back to a: the add cannot join
    a's kernel (it would wait for the matmul that waits for the kernel)."""
    p = build(lambda e, x, w: e.add(e.matmul(e.exp(x), w), e.exp(x)), (4, 4), (4, 4))
    sched = schedule(p)
    assert kinds(sched) == [KERNEL, MATMUL_CALL, KERNEL]
    assert any("cycle" in why for _, _, why in sched.notes)
    check(p, random_args(p, np.random.default_rng(4)), rtol=1e-5)


def test_reference_op_splits_kernels():
    """norm with p=3 has no decomposition: it runs by reference between two kernels, by
    design, so without a warning (explain() gives the reason)."""
    p = build(lambda e, x: e.exp(e.op("norm", e.exp(x), p=3, axes=(1,), keepdim=False)), (3, 4))
    sched = schedule(p)
    assert kinds(sched) == [KERNEL, REFERENCE, KERNEL]
    assert "norm with these attributes has no decomposition" in sched.steps[1].why
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(p, random_args(p, np.random.default_rng(5)))


def test_movement_is_index_arithmetic():
    """permute/expand/unit reshapes fuse as index arithmetic; slices and matmul
    operands become NumPy views (no copies). (The product of a permute and a broadcast
    runs over the permute's source as laid out, its result a transposed view: torch's
    strides for it, (1, 3).)"""
    p = build(lambda e, x, y: e.mul(e.permute(e.tanh(x), (1, 0)), e.expand(e.reshape(y, (3, 1)), (3, 4))),
              (4, 3), (3,))
    assert kinds(schedule(p)) == [KERNEL, VIEW]
    r = build(lambda e, x, y: e.mul(e.permute(e.tanh(x), (1, 0)), e.expand(y, (3, 4))), (4, 3), (3, 4))
    assert kinds(schedule(r)) == [KERNEL]       # (y read in order: the permute is index arithmetic)
    q = build(lambda e, x, w: e.matmul(e.op("getitem", x, index=(("s", 0, 4, 2),)), e.permute(w, (1, 0))),
              (4, 3), (5, 3))
    assert kinds(schedule(q)) == [VIEW, VIEW, MATMUL_CALL]
    check(p, random_args(p, np.random.default_rng(6)))
    check(q, random_args(q, np.random.default_rng(7)))


def test_values_used_in_one_kernel_are_not_stored():
    p = build(lambda e, x: [e.sum(e.exp(x), (1,)), e.amax(e.exp(x), (1,))], (8, 5))
    (k,) = schedule(p).kernels
    assert [v.type.shape for v in k.stores] == [(8,), (8,)]


def test_explain_lists_kernels_fused_instructions_and_source():
    p = build(lambda e, x, w: e.op("softmax", e.mul(x, w), axis=1), (6, 5), (5,))
    compiled = check(p, random_args(p, np.random.default_rng(8)))
    text = compiled.explain()
    for needle in ("kernel", "amax", "def kernel(", "@njit(", "ran: compiled kernel",
                   "reads:", "writes:", "= mul a b"):
        assert needle in text, needle


def test_horizontal_fusion_of_independent_updates_stops_at_the_array_limit():
    """Rule 7: 24 independent parameter updates that share only two 0-d settings (an
    optimizer step) merge into kernels of at most MAX_MERGED_ARRAYS arrays, greedily in
    program order: 15 updates of 4 arrays each and the 2 settings, then the other 9."""
    from fusegrad.codegen.schedule import MAX_MERGED_ARRAYS
    n = 24

    def updates(e, lr, eps, *arrays):
        outs = []
        for w, g, v in zip(arrays[0::3], arrays[1::3], arrays[2::3]):
            outs.append(e.sub(w, e.mul(lr, e.div(g, e.add(e.op("sqrt", v), eps)))))
        return outs
    p = build(updates, (), (), *[(4, 4)] * (3 * n))
    sched = schedule(p)
    assert kinds(sched) == [KERNEL, KERNEL]

    def arrays(k):
        inside = {v.id for i in k.instrs for v in i.outputs}
        return {v.id for i in k.instrs for v in i.inputs if v.id not in inside} | {v.id for v in k.stores}
    assert [len(arrays(k)) for k in sched.kernels] == [15 * 4 + 2, 9 * 4 + 2]
    assert all(len(arrays(k)) <= MAX_MERGED_ARRAYS for k in sched.kernels)
    check(p, random_args(p, np.random.default_rng(6), low=0.1, high=1.0), rtol=1e-5)


def test_a_long_chain_of_plain_ops_splits_into_kernels_of_bounded_size():
    """Rule 6: a kernel holds at most MAX_KERNEL_INSTRS instructions, math calls or not
    (compile time grows faster than a kernel's body); the chain still computes the
    reference's values, and its kernels but the last are full."""
    from fusegrad.codegen.schedule import MAX_KERNEL_INSTRS

    def chain(e, x):
        for _ in range(150):
            x = e.add(e.mul(x, e.const(0.5, x)), e.const(0.25, x))
        return x
    p = build(chain, (8, 16))
    sched = schedule(p)
    kernels = sched.kernels
    assert len(kernels) == -(-300 // MAX_KERNEL_INSTRS)
    assert all(len(k.members) == MAX_KERNEL_INSTRS for k in kernels[:-1])
    check(p, random_args(p, np.random.default_rng(2)))


def _stencil(e, x):
    """x[:, 2:] - 2 x[:, 1:-1] + x[1:, :-2] squared and summed: slices at three offsets."""
    n0, n1 = x.shape
    left = e.op("getitem", x, index=(("s", 1, n0, 1), ("s", 0, n1 - 2, 1)))
    middle = e.op("getitem", x, index=(("s", 1, n0, 1), ("s", 1, n1 - 1, 1)))
    right = e.op("getitem", x, index=(("s", 1, n0, 1), ("s", 2, n1, 1)))
    d = e.add(e.sub(right, e.mul(middle, 2.0)), left)
    return e.sum(e.mul(d, d), (0, 1))


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "with gradient"])
def test_slices_of_an_input_are_read_in_place_by_the_kernel(grad):
    """Slices with step 1 are index arithmetic (getitem's index map: the loop index shifted by
    each start), not views between kernels that the executor would copy contiguous first."""
    program = build(_stencil, (40, 300), grad=grad)
    sched = schedule(program)
    assert VIEW not in kinds(sched), kinds(sched)
    check(program, random_args(program, np.random.default_rng(7)))


@pytest.mark.parametrize("index", [
    (("s", 0, 40, 2),),                          # a step
    (("i", 3),),                                 # an integer index drops a dim
    (("s", 0, 40, 1), ("s", 5, 6, 1)),           # one element of a longer dim (read at 0 as size 1)
], ids=["step", "integer", "one-element"])
def test_other_basic_indices_stay_views(index):
    program = build(lambda e, x: e.exp(e.op("getitem", x, index=index)), (40, 300))
    assert kinds(schedule(program))[0] == VIEW
    check(program, random_args(program, np.random.default_rng(8)))
