"""Parity round 14 (an eager API probe against torch 2.13; torch is the oracle): a bool tensor
plus a bool number with alpha stays bool; next_functions of ops on operands of two dtypes, of
`t[key] = tensor` and of a view of a view regenerated after a write are torch's (the nodes
fusegrad records for work torch does inside one node are looked through)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def outcome(fn):
    """A call's result (repr, which shows dtype, values and grad_fn) or its error's class and text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("value", repr(fn()))
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))


def chain(node) -> str:
    """The graph below `node` as nested class names: CopySlices(MulBackward0(...), None)."""
    if node is None:
        return "None"
    below = [chain(n) for n, _ in node.next_functions]
    return type(node).__name__ + (f"({', '.join(below)})" if below else "")


BOOL_ALPHA = {
    "add number": lambda L: L.add(L.tensor([True, False]), True, alpha=2),
    "add number alpha 0": lambda L: L.add(L.tensor([True, False]), True, alpha=0),
    "add bool alpha": lambda L: L.add(L.tensor([True, False]), True, alpha=True),
    "add false": lambda L: L.add(L.tensor([True, False]), False, alpha=3),
    "add_ number": lambda L: L.tensor([True, False]).add_(True, alpha=2),
    "add int number": lambda L: L.add(L.tensor([True, False]), 1, alpha=2),
    "add tensor": lambda L: L.add(L.tensor([True, False]), L.tensor([True, False]), alpha=2),
}


@pytest.mark.parametrize("name", list(BOOL_ALPHA))
def test_bool_plus_a_scaled_bool_number_is_bool(name):
    # True * 2 is the int 2 in Python; torch scales in the result dtype, bool
    assert outcome(lambda: BOOL_ALPHA[name](fg)) == outcome(lambda: BOOL_ALPHA[name](torch))


TWO_DTYPES = {
    "mul": lambda L, x, d: x * d, "radd": lambda L, x, d: d + x, "sub alpha": lambda L, x, d: L.sub(x, d, alpha=2),
    "pow": lambda L, x, d: x ** d, "maximum": lambda L, x, d: L.maximum(x, d),
    "where": lambda L, x, d: L.where(x > 0, x, d), "clamp": lambda L, x, d: L.clamp(x, d, d + 1),
    "cat": lambda L, x, d: L.cat([x, d]), "stack": lambda L, x, d: L.stack([x, d]),
    "mse_loss": lambda L, x, d: L.nn.functional.mse_loss(x, d), "copy_ into": lambda L, x, d: (d * 1).copy_(x),
    "div": lambda L, x, d: d / x, "non-leaf": lambda L, x, d: (x * 1) * d,
    "explicit cast": lambda L, x, d: x.double() * d,          # a cast the user wrote is a node
    "setitem": lambda L, x, d: (lambda y: (y.__setitem__(0, d[0]), y)[1])(x * 1),
}


@pytest.mark.parametrize("name", list(TWO_DTYPES))
def test_an_operand_promoted_inside_an_op_is_not_a_node_of_its_own(name):
    def graph(lib):
        x = lib.tensor([1.5, -2.0], requires_grad=True)
        d = lib.tensor([0.5, 1.0], dtype=lib.float64)
        return chain(TWO_DTYPES[name](lib, x, d).grad_fn)
    assert graph(fg) == graph(torch)


def test_a_promoted_leaf_shows_its_own_accumulate_node_and_gets_its_own_dtype():
    x = fg.tensor([1.5, -2.0], requires_grad=True)
    y = x * fg.tensor([0.5, 1.0], dtype=fg.float64)
    assert y.grad_fn.next_functions[0][0] is (x * 1).grad_fn.next_functions[0][0]
    y.sum().backward()
    assert x.grad.dtype == fg.float32 and x.grad.tolist() == [0.5, 1.0]


SETITEMS = {
    "0-d into a row": lambda L, y: y.__setitem__(0, L.tensor(7.0, requires_grad=True)),
    "row into rows": lambda L, y: y.__setitem__(slice(1, 3), L.ones(4, requires_grad=True)),
    "(1, 4) into rows": lambda L, y: y.__setitem__(slice(1, 3), L.ones(1, 4, requires_grad=True)),
    "same shape": lambda L, y: y.__setitem__(slice(1, 3), L.ones(2, 4, requires_grad=True)),
    "everything": lambda L, y: y.__setitem__(Ellipsis, L.ones(4, requires_grad=True)),
    "None axis": lambda L, y: y.__setitem__((slice(1, 3), None), L.ones(4, requires_grad=True)),
    "None first": lambda L, y: y.__setitem__((None, 1), L.ones(1, 4, requires_grad=True)),
    "float64 row": lambda L, y: y.__setitem__(1, L.ones(1, 4, dtype=L.float64, requires_grad=True)),
    "float64 0-d": lambda L, y: y.__setitem__(1, L.tensor(2.0, dtype=L.float64, requires_grad=True)),
    "0-d everywhere": lambda L, y: y.__setitem__(slice(None), L.tensor(2.0, requires_grad=True)),
    "one element": lambda L, y: y.__setitem__((1, 2), L.tensor([2.0], requires_grad=True)),
}


@pytest.mark.parametrize("name", list(SETITEMS))
def test_setitem_of_a_tensor_value_shows_torchs_copy_to_nodes(name):
    # torch's copy_to: a value of the region's shape is copied, a 0-d one fills, any other is
    # viewed without its leading 1s (ViewBackward0, always) and expanded
    def graph_and_grads(lib):
        x = lib.tensor(np.arange(12.0).reshape(3, 4), dtype=lib.float32, requires_grad=True)
        y = x * 1
        SETITEMS[name](lib, y)
        (y * y).sum().backward()
        return chain(y.grad_fn), x.grad.tolist()
    assert graph_and_grads(fg) == graph_and_grads(torch)


VIEW_OF_VIEW = {
    "transpose(0, 2)[1]": lambda y: y.transpose(0, 2)[1],
    "[1][2]": lambda y: y[1][2],
    "[:, 1:][0]": lambda y: y[:, 1:][0],
}


@pytest.mark.parametrize("name", list(VIEW_OF_VIEW))
def test_a_view_of_a_view_written_in_place_goes_back_to_its_base_in_one_node(name):
    # torch regenerates it as one as_strided of the base: AsStridedBackward0(CopySlices(...))
    def graph(lib):
        x = lib.ones(2, 3, 4, requires_grad=True)
        y = x * 1
        w = VIEW_OF_VIEW[name](y)
        w.mul_(2)
        return chain(w.grad_fn)
    assert graph(fg) == graph(torch)


ERRORS = {
    # a 3-d batch of one that requires grad is torch's one matrix: its mm checks the shapes
    "batch of one, shapes": lambda L: L.ones(2, 3, 4) @ L.ones(1, 3, 4, requires_grad=True),
    "batch of one, dtypes": lambda L: L.ones(2, 2, 3, dtype=L.float64) @ L.ones(1, 3, 4, requires_grad=True),
    "batch of one on the left": lambda L: L.ones(1, 2, 3, requires_grad=True) @ L.ones(2, 4, 4),
    "batch of one, no grad": lambda L: L.ones(2, 3, 4) @ L.ones(1, 3, 4),
    # the parser reads an int beyond int64 as an unsigned long long, then gives up
    "full 2**70": lambda L: L.full((2,), 2**70),
    "full -2**64": lambda L: L.full((2,), -2**64),
    "full -2**63 - 1 float": lambda L: L.full((2,), -2**63 - 1, dtype=L.float32),
    "full 2**63 float": lambda L: L.full((2,), 2**63, dtype=L.float32),
    "full 2**63": lambda L: L.full((2,), 2**63),
    "mul -2**64": lambda L: L.ones(2) * -2**64,
    "fill_ -2**63 - 1": lambda L: L.ones(2).fill_(-2**63 - 1),
    # torch's Python checks mse_loss's reduction before its kernel checks the dtypes
    "mse_loss bad reduction, ints": lambda L: L.nn.functional.mse_loss(L.tensor([1, 2]), L.tensor([1, 2]), reduction="bad"),
    "mse_loss ints, weighted": lambda L: L.nn.functional.mse_loss(L.tensor([1, 2]), L.tensor([1, 4]), weight=L.tensor([1, 2])),
    "mse_loss bools, weighted": lambda L: L.nn.functional.mse_loss(L.tensor([True]), L.tensor([True]), weight=L.ones(1)),
    # broadcasting is checked before the bitwise kernel refuses floats
    "& sizes": lambda L: L.zeros(3) & L.zeros(0),
    "| sizes": lambda L: L.zeros(3) | L.zeros(2, 1, 2),
    "^ float64 sizes": lambda L: L.zeros(3, dtype=L.float64) ^ L.zeros(2),
    "& floats": lambda L: L.zeros(3) & L.zeros(3),
    # a weight of the wrong size: nll_loss2d's text, and the probability targets' own
    "cross_entropy 3-d weight": lambda L: L.nn.functional.cross_entropy(
        L.ones(2, 3, 2), L.zeros(2, 2, dtype=L.int64), weight=L.ones(2)),
    "cross_entropy 2-d weight": lambda L: L.nn.functional.cross_entropy(
        L.ones(2, 3), L.zeros(2, dtype=L.int64), weight=L.ones(2)),
    "cross_entropy probabilities weight": lambda L: L.nn.functional.cross_entropy(
        L.ones(2, 3), L.zeros(2, 3), weight=L.ones(2)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_and_their_order_are_torchs(name):
    assert outcome(lambda: ERRORS[name](fg)) == outcome(lambda: ERRORS[name](torch))


@pytest.mark.parametrize("write", ["sub_", "copy_"])
def test_the_product_of_a_vector_and_a_matrix_is_no_view(write):
    # torch squeezes the mm's product in place (squeeze_): an in-place op on it is its own node
    def node(lib):
        w = lib.ones(4, requires_grad=True) @ lib.ones(4, 3)
        w.sub_(1.0) if write == "sub_" else w.copy_(lib.ones(3))
        return type(w.grad_fn).__name__, w._base is None
    assert node(fg) == node(torch)


@pytest.mark.parametrize("shape", [(2.0, 12), [2, "a"], 5, (5, 5)], ids=str)
def test_the_function_form_of_reshape_counts_the_shape_as_argument_2(shape):
    assert outcome(lambda: fg.reshape(fg.ones(24), shape)) == outcome(lambda: torch.reshape(torch.ones(24), shape))


INDEX_DATA = {
    "float tensors": lambda L: L.tensor([L.tensor(1.5), L.tensor(2.0)], dtype=L.int64),
    "float32 number": lambda L: L.tensor(np.float32(2.5), dtype=L.int64),
    "float32 in a list": lambda L: L.tensor([np.float32(2.5)], dtype=L.int64),
    "float16 nested": lambda L: L.tensor([[1.5], [np.float16(1)]], dtype=L.int64),
    "bool from a float tensor": lambda L: L.tensor([L.tensor(1.5)], dtype=L.bool),
    "with requires_grad": lambda L: L.tensor([np.float32(2.5)], dtype=L.int64, requires_grad=True),
    "Python float": lambda L: L.tensor(2.5, dtype=L.int64),
    "float64 number": lambda L: L.tensor(np.float64(2.5), dtype=L.int64),
    "int tensors": lambda L: L.tensor([L.tensor(1), L.tensor(2)], dtype=L.int64),
    "float32 array": lambda L: L.tensor(np.array(2.5, dtype=np.float32), dtype=L.int64),
    "a float tensor itself": lambda L: L.tensor(L.tensor(1.5), dtype=L.int64),
}


@pytest.mark.parametrize("name", list(INDEX_DATA))
def test_integer_and_bool_tensors_take_numbers_through_the_index_protocol(name):
    assert outcome(lambda: INDEX_DATA[name](fg)) == outcome(lambda: INDEX_DATA[name](torch))


@pytest.mark.parametrize("groups", ["x x", "x y x", "x y | z", "x y x | z z"])
def test_optimizer_state_dict_numbers_parameters_as_torch(groups):
    # by position from each group's start; a parameter listed twice takes its last position
    def numbers(lib):
        params = {name: lib.ones(2, requires_grad=True) for name in "xyz"}
        spec = [{"params": [params[n] for n in group.split()]} for group in groups.split("|")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # (both warn of a parameter listed twice)
            return [g["params"] for g in lib.optim.SGD(spec, lr=0.1).state_dict()["param_groups"]]
    assert numbers(fg) == numbers(torch)


SETITEM_NUMBERS = {
    "nan at an index out of range": lambda L, x: x.__setitem__(3, float("nan")),
    "nan with a negative step": lambda L, x: x.__setitem__(slice(None, None, -1), float("nan")),
    "nan at False": lambda L, x: x.__setitem__(False, float("nan")),
    "nan at a tensor index": lambda L, x: x.__setitem__(L.tensor([5]), float("nan")),
    "2**70": lambda L, x: x.__setitem__(3, 2**70),
    "nan at a string": lambda L, x: x.__setitem__("a", float("nan")),
    "1e30 at too many indices": lambda L, x: x.__setitem__((0, 0, 0), 1e30),
    "1 at a tensor index out of range": lambda L, x: x.__setitem__(L.tensor([5]), 1),
    "1e300 into float32": lambda L, x: x.float().__setitem__(3, 1e300),
}


@pytest.mark.parametrize("name", list(SETITEM_NUMBERS))
def test_setitem_converts_a_number_before_it_reads_the_key(name):
    def run(lib):
        x = lib.arange(12).reshape(3, 4)
        SETITEM_NUMBERS[name](lib, x)
        return x
    assert outcome(lambda: run(fg)) == outcome(lambda: run(torch))
