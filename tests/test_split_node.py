"""split, chunk, unbind and iterating a tensor record one node for all their parts, as torch's
(SplitBackward0 / SplitWithSizesBackward0 / UnbindBackward0, the parts its outputs 0, 1, ...):
the graph torch shows (`a.grad_fn is b.grad_fn`, next_functions' output numbers), the node's
hooks seeing every part's gradient, one backward for all parts (stacked: CatBackward0 /
StackBackward0 under create_graph), and iteration's rows refusing in-place ops as torch's.
Before, each part had a node of its own (output_nr 0), and a loop over a tensor's rows built a
full-size gradient per row."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import TensorType, float32, float64, run_program
from fusegrad.ir.autodiff import VJPS
from fusegrad.ir.ops import OPS
from test_codegen_support import build, check, random_args

torch = pytest.importorskip("torch", reason="torch is the oracle")

PARTS = {
    "chunk": lambda L, x: x.chunk(3, 1),
    "split": lambda L, x: x.split(2, 1),
    "split_sizes": lambda L, x: x.split([1, 3, 2], 1),
    "unbind": lambda L, x: x.unbind(0),
    "iter": lambda L, x: tuple(x),
    "one_part": lambda L, x: x.chunk(1, 0),
    "function": lambda L, x: L.split(x, 4, 1),
}


def _edges(parts) -> list:
    """What an op reading every part lists as its edges: (node class, output number)."""
    total = parts[0] * 1
    for p in parts[1:]:
        total = total * 1 + p.sum()
    names = []
    node = total.grad_fn
    while node is not None and type(node).__name__ == "AddBackward0":
        (left, _), (right, nr) = node.next_functions
        right_sum = right.next_functions[0]       # SumBackward0 -> the part's node
        names.append((type(right_sum[0]).__name__, right_sum[1]))
        node = left
    return sorted(names, key=lambda e: e[1])


@pytest.mark.parametrize("how", sorted(PARTS))
def test_parts_share_one_node_as_torch(how):
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    seen = []
    for L in (torch, fg):
        x = L.tensor(data, requires_grad=True) * 1
        parts = PARTS[how](L, x)
        graph = [(name, same, int(nr)) for name, same, nr in
                 [(type(p.grad_fn).__name__, p.grad_fn is parts[0].grad_fn, _output_nr(p)) for p in parts]]
        next_functions = [(type(n).__name__, i) for n, i in (parts[-1] * 2).grad_fn.next_functions]
        seen.append((len(parts), graph, next_functions, _edges(parts)))
    assert seen[0] == seen[1]


def _output_nr(t) -> int:
    """The output number of `t` on its node: torch's is visible through an op reading it."""
    return (t * 1).grad_fn.next_functions[0][1]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("how", sorted(PARTS))
def test_values_and_gradients_match_torch(how, compiled):
    data = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    results = []
    for L in (torch, fg):
        x = L.tensor(data, requires_grad=True)

        def f(x):
            parts = PARTS[how](L, x * 1.5)
            total = parts[0].exp().sum()
            for k, p in enumerate(parts[1:], 2):
                total = total + (p * k).pow(2).sum() if k % 2 else total
            return total
        if L is fg and compiled:
            f = fg.compile(f)
        y = f(x)
        y.backward()
        results.append((float(y), x.grad.numpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def test_node_hooks_see_every_part():
    seen = []
    for L in (torch, fg):
        x = L.arange(6.0).requires_grad_()
        a, b = x.chunk(2)
        calls = []
        a.grad_fn.register_hook(lambda grad_inputs, grad_outputs: calls.append(
            ([g.tolist() for g in grad_inputs], [None if g is None else g.tolist() for g in grad_outputs])))
        a.grad_fn.register_prehook(lambda grad_outputs: calls.append(
            [None if g is None else g.tolist() for g in grad_outputs]))
        (b * 3).sum().backward()            # only b gets a gradient: the shared node still runs
        seen.append(calls)
    assert seen[0] == seen[1]
    assert seen[1][1] == ([[0.0, 0.0, 0.0, 3.0, 3.0, 3.0]], [None, [3.0, 3.0, 3.0]])


def test_create_graph_stacks_the_parts_gradients():
    seen = []
    for L in (torch, fg):
        y = L.arange(6.0).reshape(2, 3).requires_grad_()
        u = y.unbind(1)
        (g,) = L.autograd.grad((u[0] * u[2]).sum(), y, create_graph=True)
        s = y.split([2, 1], 1)
        (h,) = L.autograd.grad((s[0] ** 2).sum(), y, create_graph=True)
        (gg,) = L.autograd.grad((g * h).sum(), y)
        seen.append((g.tolist(), type(g.grad_fn).__name__,
                     [None if n is None else type(n).__name__ for n, _ in g.grad_fn.next_functions],
                     h.tolist(), type(h.grad_fn).__name__, gg.tolist()))
    assert seen[0] == seen[1]
    assert seen[1][1] == "StackBackward0" and seen[1][4] == "CatBackward0"


def test_iterated_rows_refuse_in_place_ops_as_torch():
    texts = []
    for L in (torch, fg):
        x = L.ones(3, 2, requires_grad=True).clone()
        with pytest.raises(RuntimeError) as info:
            for row in x:
                row.mul_(2)
        texts.append(str(info.value))
        with L.no_grad():
            for row in x:
                row.mul_(2)             # (under no_grad the rows are plain views: the write lands)
        assert x.detach()[0, 0].item() == 2.0
    assert texts[0] == texts[1]
    assert texts[1].startswith("Output 0 of Unbind is a view and is being modified inplace.")


def test_parts_are_views_of_their_tensor():
    for L in (torch, fg):
        base = L.zeros(2, 4)
        left, right = base.chunk(2, 1)
        right[1, 0] = 5.0
        assert base[1, 2].item() == 5.0
        base.add_(1)
        assert left.tolist() == [[1.0, 1.0], [1.0, 1.0]] and right[1, 0].item() == 6.0
        assert left._base is base and base.unbind(1)[3]._base is base


def test_empty_and_single_parts_as_torch():
    for L in (torch, fg):
        assert L.ones(0, 3).unbind(0) == ()
        (only,) = L.ones(0, 3, requires_grad=True).split(2)
        assert tuple(only.shape) == (0, 3)
        parts = L.ones(0, requires_grad=True).chunk(3)
        assert len(parts) == 3 and type(parts[0].grad_fn).__name__ == "SplitWithSizesBackward0"
        assert parts[2].grad_fn is parts[0].grad_fn


def test_a_long_unbind_backward_runs_one_node():
    """Iterating 500 rows: one UnbindBackward0 whose backward stacks the rows' gradients (each
    row's own node built a full-size gradient, quadratic in the rows)."""
    x = fg.randn(500, 4, requires_grad=True)
    rows = list(x)
    assert len({id(r.grad_fn) for r in rows}) == 1
    total = rows[0].sum()
    for k, r in enumerate(rows[1:], 1):
        total = total + r.sum() * k
    before = VJPS.misses
    total.backward()
    expected = np.repeat(np.arange(500, dtype=np.float32)[:, None], 4, axis=1)
    expected[0] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert VJPS.misses - before <= 8      # a few signatures (unbind, sum, mul, add), not one per row


def test_compiled_program_has_one_split_instruction():
    f = fg.compile(lambda x: (lambda a, b: (a * b).sum())(*x.chunk(2, 1)))
    x = fg.randn(4, 6, requires_grad=True)
    text = f.explain(x)
    forward = text[text.index("## forward program"):text.index("## backward program")]
    assert "= split[axis=1 sizes=(3, 3) squeeze=False] a" in forward
    backward = text[text.index("## backward program"):text.index("## graph breaks")]
    assert "cat[axis=1]" in backward
    y = f(x)
    y.backward()
    a, b = x.detach().chunk(2, 1)
    np.testing.assert_allclose(x.grad.numpy(), np.concatenate([b.numpy(), a.numpy()], 1), rtol=1e-6)


# ------------------------------------------------------------------ the IR op against the reference executor
SPLIT_CASES = {
    "rows": (lambda e, x: list(e.op("split", x, axis=0, sizes=(1, 3), squeeze=False)), [(4, 5)]),
    "columns-tanh": (lambda e, x: [e.tanh(p) for p in e.op("split", x, axis=1, sizes=(2, 2, 1), squeeze=False)],
                     [(3, 5)]),
    "unbind": (lambda e, x: list(e.op("split", x, axis=1, sizes=(1, 1, 1), squeeze=True)), [(2, 3, 4)]),
    "one-part-gradient": (lambda e, x: [e.exp(e.op("split", x, axis=0, sizes=(2, 2), squeeze=False)[1])],
                          [(4, 3)]),
}


@pytest.mark.parametrize("name", sorted(SPLIT_CASES))
def test_compiled_split_matches_the_reference_executor(name):
    """Forward and backward (the parts' gradients concatenated or stacked, zeros for a part
    without one) of programs with the `split` op: Numba kernels against run_program."""
    fn, shapes = SPLIT_CASES[name]
    p = build(fn, *shapes, grad=True)
    check(p, random_args(p, np.random.default_rng(len(name))))


def test_split_gradient_against_finite_differences():
    """d/dx sum(w_k * part_k ** 2) by the reference executor's VJP, against central differences."""
    weights = np.array([0.5, -2.0, 3.0])
    p = build(lambda e, x: [e.op("sum", e.add(e.add(
        e.mul(e.mul(q[0], q[0]), float(weights[0])), e.mul(e.mul(q[1], q[1]), float(weights[1]))),
        e.mul(e.mul(q[2], q[2]), float(weights[2]))), axes=(0, 1, 2), keepdim=False)
        for q in [e.op("split", x, axis=1, sizes=(1, 2, 1), squeeze=False)]], ((2, 4, 3), float64), grad=True)
    x = np.random.default_rng(7).standard_normal((2, 4, 3))
    value, grad = run_program(p, [x, np.array(1.0)])
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        numeric[i] = (run_program(p, [x + step, np.array(1.0)])[0] - run_program(p, [x - step, np.array(1.0)])[0]) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("attrs", [dict(axis=1, sizes=(2, 2), squeeze=False), dict(axis=2, sizes=(5,), squeeze=False),
                                   dict(axis=1, sizes=(), squeeze=False), dict(axis=1, sizes=(1, 2, 2), squeeze=True),
                                   dict(axis=0, sizes=(-1, 5), squeeze=False)])
def test_split_shape_rule_refuses_parts_that_do_not_tile_the_dim(attrs):
    with pytest.raises(ValueError) as info:
        OPS["split"].infer([TensorType((4, 5), float32)], attrs)
    assert str(info.value) == (f"split: parts of sizes {list(attrs['sizes'])} (squeeze={attrs['squeeze']}) do not "
                               f"tile dim {attrs['axis']} of [4, 5]")
