"""Round 20 of torch parity: what this session's probes found (each test names the behaviour
and checks it against torch 2.13, eager and inside fg.compile)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import assert_same_outcome, lib_outcome, outcome  # noqa: E402  (after the skip)

MODES = ["eager", "compiled"]


def _both(case, mode):
    """case(lib, mode) on torch, then fusegrad: their outcomes (value, or error class and text)."""
    return outcome(lambda: case(torch, mode)), outcome(lambda: case(fg, mode))


def _run(lib, mode, f, *args):
    return (fg.compile(f) if lib is fg and mode == "compiled" else f)(*args)


def _softmax_written_after_the_call(lib, mode):
    x = lib.ones(2, 3, requires_grad=True)

    def f(x):
        s = _run(lib, mode, lambda u: u.softmax(-1), x)
        s.mul_(2)
        return s[0] * 1             # `s` itself is gone when f returns
    f(x).sum().backward()


@pytest.mark.parametrize("mode", MODES)
def test_version_error_describes_a_saved_output_no_longer_alive(mode):
    """torch's node holds the saved output: its text gives its type and shape whether or not
    the Python tensor is alive (the compiled call's text said "[Tensor []]")."""
    theirs, ours = _both(_softmax_written_after_the_call, mode)
    assert theirs[0] == "RuntimeError" and "[torch.FloatTensor [2, 3]], which is output 0 of Softmax," in theirs[1]
    expected = theirs if mode == "eager" else (theirs[0], theirs[1].replace("Softmax", "CompiledFunction"))
    assert ours == expected


def _norm_p0_then_write_input(lib, mode):
    def f(x):
        y = x * 1
        n = y.norm(p=0)
        y.mul_(2)
        return n + x.sum()
    x = (lib.ones(3) * 0.7).requires_grad_()
    _run(lib, mode, f, x).backward()
    return x.grad.tolist()


def _norm_p1_of_0d_then_write_result(lib, mode):
    def f(x):
        n = (x * 1).norm(p=1)
        n.mul_(2)
        return n
    x = (lib.ones(()) * 0.7).requires_grad_()
    _run(lib, mode, f, x).backward()
    return x.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", [_norm_p0_then_write_input, _norm_p1_of_0d_then_write_result],
                         ids=["p0-input", "p1-0d-result"])
def test_norm_node_saves_its_input_and_result_for_every_order(mode, case):
    """torch's NormBackward saves self and result whatever p is, so writing either after the
    norm raises at backward (fusegrad saved only what its p=0 / p=1 formula reads)."""
    theirs, ours = _both(case, mode)
    assert theirs[0] == "RuntimeError" and theirs[1].startswith("one of the variables needed")
    assert ours == theirs


@pytest.mark.parametrize("name", ["float32", "int64", "bool", "not a dtype"])
def test_set_default_dtype_accepts_float32_and_raises_torchs_type_errors(name):
    def case(lib):
        dtype = getattr(lib, name) if name != "not a dtype" else name
        try:
            return lib.set_default_dtype(dtype), str(lib.get_default_dtype()).split(".")[-1]
        finally:
            lib.set_default_dtype(lib.float32)
    assert outcome(lambda: case(fg)) == outcome(lambda: case(torch))


def test_set_default_dtype_float64_is_refused_not_ignored():
    """fusegrad keeps float32 as its default: float64 raises rather than being silently ignored."""
    with pytest.raises(NotImplementedError, match=r"set_default_dtype\(fg.float64\) is not supported"):
        fg.set_default_dtype(fg.float64)
    assert fg.get_default_dtype() is fg.float32


# ---------------------------------------------------------------- bad and odd arguments (probe K)
_ODD_ARGUMENT_CASES = {
    # a 0-d tensor alpha is the Number it holds (torch's parser), with the checks of its value
    "int-alpha-float-tensor": lambda L: L.add(L.tensor([1, 2]), L.tensor([3, 4]), alpha=L.tensor(2.0)),
    "bool-alpha-float-tensor": lambda L: L.add(L.tensor([True, False]), L.tensor([True, True]), alpha=L.tensor(2.0)),
    "float-alpha-bool-tensor": lambda L: L.sub(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]), alpha=L.tensor(True)),
    "float-alpha-int-tensor": lambda L: L.tensor([1.0, 2.0]).add(L.tensor([1.0, 1.0]), alpha=L.tensor(3)),
    "alpha-requiring-grad": lambda L: L.add(L.ones(2), L.ones(2), alpha=L.tensor(2.0, requires_grad=True)),
    # a NumPy bool is a float number to torch's parser
    "int-times-np-bool": lambda L: L.tensor([1, 2]) * np.bool_(True),
    "int-plus-np-bool": lambda L: L.tensor([1, 2]) + np.bool_(True),
    "bool-times-np-bool": lambda L: L.tensor([True, False]) * np.bool_(True),
    "float-minus-np-bool": lambda L: L.tensor([1.0, 2.0]) - np.bool_(True),
    "where-np-bool": lambda L: L.where(L.tensor([True, False]), L.tensor([1, 2]), np.bool_(True)),
    "clamp-int-np-bool": lambda L: L.clamp(L.tensor([0, 3]), min=np.bool_(True)),
    "masked-fill-int-np-bool": lambda L: L.tensor([1, 0]).masked_fill(L.tensor([True, False]), np.bool_(True)),
    "alpha-np-bool": lambda L: L.add(L.ones(2), L.ones(2), alpha=np.bool_(True)),
    # to(): a dtype keyword that is no dtype is torch's parser error; a None device is no device
    "to-dtype-str": lambda L: L.ones(2).to(dtype="float32"),
    "to-dtype-numpy-type": lambda L: L.ones(2).to(dtype=np.float32),
    "to-none": lambda L: L.ones(2).to(None),
    "to-none-int64": lambda L: L.ones(2).to(None, L.int64),
    # rounding_mode=None is torch's true division (its schema's `str? rounding_mode`)
    "int-div_-rounding-none": lambda L: L.tensor([1, 2]).div_(L.tensor([1, 2]), rounding_mode=None),
    "div-rounding-none": lambda L: L.div(L.tensor([1, 3]), 2, rounding_mode=None),
    "div-rounding-int": lambda L: L.tensor([1.0]).div(L.tensor([2.0]), rounding_mode=3),
    # a 0-d integer tensor where an int dim is expected is that int (torch's parser: __index__)
    "max-dim-int-tensor": lambda L: L.tensor([[1.0, 5.0], [4.0, 2.0]]).max(dim=L.tensor(1))[1],
    "min-dim-int-tensor": lambda L: L.tensor([[1.0, 5.0], [4.0, 2.0]]).min(dim=L.tensor(0))[0],
    "size-int-tensor": lambda L: L.tensor(L.ones(2, 3).size(L.tensor(1))),
    "stride-int-tensor": lambda L: L.tensor(L.ones(2, 3).stride(L.tensor(0))),
    "size-float-tensor": lambda L: L.ones(2, 3).size(L.tensor(1.0)),
    # shapes that do not broadcast are torch's broadcast error before any dtype's
    "bool-pow-mismatch": lambda L: L.ones(2, 3, dtype=L.bool) ** L.ones(2, 3, dtype=L.bool).t(),
    "bool-floordiv-mismatch": lambda L: L.ones(2, 3, dtype=L.bool) // L.ones(2, 3, dtype=L.bool).t(),
    "bool-floordiv-broadcasts": lambda L: L.ones(2, 3, dtype=L.bool) // L.ones(3, dtype=L.bool),
    # the nuclear norm of an integer tensor is linalg.matrix_norm's dtype error
    "int-nuclear-norm": lambda L: L.ones(2, 3, dtype=L.int64).norm("nuc"),
    "bool-nuclear-norm-dim": lambda L: L.ones(2, 3, dtype=L.bool).norm(p="nuc", dim=(0, 1)),
    # an index outside int64 is torch's unpacking error, one inside it the bounds error
    "index-2**63": lambda L: L.ones(2, 3)[2 ** 63],
    "index-below-int64": lambda L: L.ones(2, 3)[0, -2 ** 63 - 1],
    "index-int64-max": lambda L: L.ones(2, 3)[2 ** 63 - 1],
    # torch's norm is a Python function: no NumPy keyword spellings
    "norm-method-axis": lambda L: L.ones(2, 3).norm(axis=1),
    "norm-method-keepdims": lambda L: L.ones(2, 3).norm(keepdims=True),
    "norm-function-axis": lambda L: L.norm(L.ones(2, 3), axis=1),
    # argument types torch's parser checks
    "numpy-force-str": lambda L: L.tensor(L.ones(2).numpy(force="a")),
    "numpy-force-np-bool": lambda L: L.tensor(L.ones(2).numpy(force=np.bool_(True))),
    "parameter-requires-grad-str": lambda L: L.nn.Parameter(L.ones(2), requires_grad="a"),
    "parameter-requires-grad-int": lambda L: L.nn.Parameter(L.ones(2), requires_grad=0),
    # norm's dim: len() is taken only for a string p (torch's Python norm), else the parser's text
    "norm-dim-dict": lambda L: L.ones(2, 3).norm(dim={}),
    "norm-numeric-p-float-dim": lambda L: L.ones(2, 3).norm(0, 2.0),
    "norm-fro-float-dim": lambda L: L.ones(2, 3).norm(dim=2.0),
    # texts of the size and to() parsers
    "zeros-array-size": lambda L: L.zeros(np.array([2, 3])),
    "to-numpy-type": lambda L: L.ones(2).to(np.float32),
    "to-list": lambda L: L.ones(2).to([1]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(_ODD_ARGUMENT_CASES))
def test_odd_arguments_as_torch(name, mode):
    case = _ODD_ARGUMENT_CASES[name]

    def ours():
        if mode == "compiled":
            return fg.compile(lambda: case(fg))()
        return case(fg)
    assert_same_outcome(lib_outcome(fg, lambda lib: ours()), lib_outcome(torch, case))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "bool"])
@pytest.mark.parametrize("value", [{}, set(), object(), b"x", None, [1.0]], ids=["dict", "set", "object", "bytes",
                                                                                 "None", "list"])
def test_setitem_of_no_number_or_tensor_raises_torchs_type_error(value, dtype, mode):
    """`t[0] = {}` on a bool tensor stored the dict's truthiness; on a float tensor it raised
    Python's float() text (bytes: ValueError)."""
    def case(lib):
        def write():
            t = lib.zeros(2, dtype=getattr(lib, dtype))
            t[0] = value
            return t
        return fg.compile(write)() if lib is fg and mode == "compiled" else write()
    theirs, ours = outcome(lambda: case(torch)), outcome(lambda: case(fg))
    assert theirs[0] == "TypeError" and theirs[1].startswith("can't assign a ")
    assert ours == theirs


@pytest.mark.parametrize("mode", MODES)
def test_fill_with_an_array_is_a_tensor_fill(mode):
    """fill_ of a NumPy array raised an internal "exceptions must derive from BaseException";
    arrays are accepted wherever a tensor is (API.md): a 0-d one fills, others raise torch's
    tensor-fill error."""
    def fill(value):
        t = fg.ones(3)
        t.fill_(value)
        return t
    run = fg.compile(fill) if mode == "compiled" else fill
    assert run(np.array(2.0)).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="^fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           "dimensions.$"):
        run(np.array([1.0, 0.0, 2.0]))


@pytest.mark.parametrize("array_dtype", [np.float64, np.float32, np.int64])
def test_array_divided_by_a_tensor_is_a_tensor_as_torchs(array_dtype):
    """torch's __rtruediv__ takes a NumPy array (reciprocal() * array); its other reflected
    operators do not (`array * t` is Python's TypeError in both)."""
    a = np.array([[1.0, 2.0, 4.0], [8.0, 5.0, 0.5]], dtype=np.float32)
    numerator = np.array([1, 2, 3]).astype(array_dtype)
    ours, theirs = numerator / fg.tensor(a), numerator / torch.tensor(a)
    assert isinstance(ours, fg.Tensor)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    for lib in (fg, torch):
        with pytest.raises(TypeError, match="unsupported operand type"):
            numerator * lib.tensor(a)


# ---------------------------------------------------------------- nn / optim (probe L)
def _unexpected_keys(lib, strict):
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 2)))
    state = dict(model.state_dict())
    state["1.0.extra"] = lib.zeros(1)       # (checkpoint order: deepest first)
    state["9.x"] = lib.zeros(1)
    state["0.foo"] = lib.zeros(1)
    return list(model.load_state_dict(state, strict=strict).unexpected_keys)


@pytest.mark.parametrize("strict", [False, True])
def test_load_state_dict_lists_unexpected_keys_module_by_module(strict):
    """torch lists unexpected keys as each module, root first, finds them under its prefix
    (fusegrad kept the checkpoint's order), in the returned keys and in the strict error."""
    theirs, ours = outcome(lambda: _unexpected_keys(torch, strict)), outcome(lambda: _unexpected_keys(fg, strict))
    if not strict:
        assert theirs == ["9.x", "0.foo", "1.0.extra"]
    assert ours == theirs


def test_adam_refuses_a_tensor_lr_with_foreach():
    def case(lib):
        return lib.optim.Adam([lib.nn.Parameter(lib.ones(2))], lr=lib.tensor(0.01), foreach=True)
    theirs, ours = outcome(lambda: case(torch)), outcome(lambda: case(fg))
    assert theirs == ("ValueError", "lr as a Tensor is not supported for capturable=False and foreach=True")
    assert ours == theirs


def test_scheduler_state_dict_keys_in_torchs_order():
    def keys(lib):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        scheduler = lib.optim.lr_scheduler.StepLR(optimizer, 3)
        optimizer.step()
        scheduler.step()
        return list(scheduler.state_dict())
    assert keys(fg) == keys(torch)


# ---------------------------------------------------------------- random-program probe (probe J)
def _read_after_alias_write(lib, mode, write):
    def f(x):
        w = x.detach().requires_grad_()     # a second leaf over x's memory
        v = w + x                           # both read it
        exec(write, {"w": w, "x": x})       # the memory written through an alias
        return (x * x * 3).sum() + (v * 5).sum(), x * 1, w
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    total, y, w = _run(lib, mode, f, x)
    total.backward()
    return y.tolist(), x.tolist(), x.grad.tolist(), w.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", ["w.detach().mul_(2)", "x.detach().mul_(2)", "w.data.mul_(2)"])
def test_a_second_leaf_over_memory_reads_its_new_value_after_a_write(write, mode):
    """fg.compile read x's value from before the write once two leaves that require grad
    shared the memory (x * 1 was [1, 2], torch's [2, 4]); gradients sum over both values."""
    theirs, ours = _both(lambda lib, m: _read_after_alias_write(lib, m, write), mode)
    assert theirs == ([2.0, 4.0], [2.0, 4.0], [17.0, 29.0], [5.0, 5.0])
    assert ours == theirs


def _vector_matrix_version(lib, mode):
    def f(v, m):
        r = v @ m
        s = r.sin()             # saves r at its version now
        r.mul_(2)
        return r, s
    v = lib.tensor([0.5, 1.0, -1.0], requires_grad=True)
    r, s = _run(lib, mode, f, v, lib.ones(3, 2))
    version = r._version
    s.sum().backward()
    return version


@pytest.mark.parametrize("mode", MODES)
def test_vector_matrix_product_counts_torchs_squeeze_(mode):
    """torch computes vec @ mat as mm(v.unsqueeze(0), m).squeeze_(0): the result starts at
    version 1, which the version error's "expected version" shows."""
    theirs, ours = _both(_vector_matrix_version, mode)
    assert theirs[0] == "RuntimeError" and "is at version 2; expected version 1 instead" in theirs[1]
    assert ours == theirs


def _scalar_product_edges(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    g, = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)     # grad * (3 * x ** 2)
    node = g.grad_fn.next_functions[1][0]
    return type(node).__name__, [(type(n).__name__ if n is not None else None, k) for n, k in node.next_functions]


def test_a_formula_product_by_a_scalar_lists_its_tensor_operand_only():
    """torch's MulBackward1 (tensor * Scalar) of pow's create_graph formula has one next function
    (fusegrad listed (None, 0) for the number too)."""
    assert _scalar_product_edges(fg) == _scalar_product_edges(torch) == ("MulBackward1", [("PowBackward0", 0)])


def _gradient_through_a_read_before_an_alias_write(lib, mode, write):
    def f(x):
        w = x.detach().requires_grad_()
        v = w.exp() + x                     # x read once, before the write
        exec(write, {"w": w, "x": x})
        loss = v.sum()
        loss.backward()
        return loss
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    _run(lib, mode, f, x)
    return None if x.grad is None else x.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", ["w.detach().mul_(2)", "x.detach().mul_(2)", "w.data.mul_(2)"])
def test_gradient_reaches_a_second_leaf_read_only_before_an_alias_write(write, mode):
    """x.grad stayed None inside fg.compile: the backward looked x up by the memory's new value."""
    theirs, ours = _both(lambda lib, m: _gradient_through_a_read_before_an_alias_write(lib, m, write), mode)
    assert theirs == [1.0, 1.0]
    assert ours == theirs


def _leaf_made_in_the_call_written_through_a_detach(lib, mode):
    def f(x):
        w = (x * 2).detach().requires_grad_()
        s = w * w                           # saves the leaf w
        w.detach().mul_(2)                  # its memory written through an alias
        return s, w
    s, w = _run(lib, mode, f, lib.tensor([0.5, 1.0], requires_grad=True))
    s.sum().backward()


@pytest.mark.parametrize("mode", MODES)
def test_version_error_names_no_node_for_a_leaf_made_in_the_call(mode):
    """A leaf has no node: torch's text has no ", which is output 0 of ...," (the compiled call
    named an internal Graft op)."""
    theirs, ours = _both(_leaf_made_in_the_call_written_through_a_detach, mode)
    assert theirs[0] == "RuntimeError" and "[torch.FloatTensor [2]] is at version 1; expected version 0" in theirs[1]
    assert ours == theirs
