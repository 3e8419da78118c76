"""fg.Tensor as a Python object behaves as torch.Tensor does (torch 2.13 is the oracle, run here).

Each case is a function of the library (`torch` or `fusegrad`); both are run and their
outcomes compared: the result's type and printed form (with `torch.` read as `fusegrad.`),
or the exception's class and text. Covers repr/str over dtypes, shapes and value mixes,
the conversion and container protocols, NumPy interop, copy/deepcopy/pickle and the
attribute setters. Nothing here compiles a kernel.
"""
import copy
import math
import operator
import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")
import fusegrad as fg  # noqa: E402
from fusegrad.tracer import formatting  # noqa: E402


# ------------------------------------------------------------------ the comparison

def _printed(value) -> str:
    """A result as a comparable string: type name plus repr, torch's spelling mapped to ours.
    fg.Size prints `fg.Size(...)` (API.md) where torch prints `torch.Size(...)`."""
    if isinstance(value, (torch.Size, fg.Size)):
        return f"Size{list(value)}"
    if isinstance(value, (list, tuple)) and not isinstance(value, (torch.Size, fg.Size)):
        return f"{type(value).__name__}[" + ", ".join(_printed(v) for v in value) + "]"
    if isinstance(value, (torch.dtype, fg.dtype)):
        return f"dtype:{str(value).split('.')[-1]}"
    text = repr(value).replace("torch.", "fg.")
    kind = type(value).__name__
    return f"{kind}:{text}"


def _outcome(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", _printed(fn(lib))
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raises", f"{type(e).__name__}: {e}"


def check(fn):
    """fn(torch) and fn(fusegrad) give the same printed result or raise the same error."""
    theirs, ours = _outcome(fn, torch), _outcome(fn, fg)
    assert ours == theirs, f"\n  torch: {theirs}\n  ours:  {ours}"


@pytest.fixture(autouse=True)
def _default_printoptions():
    fg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    yield
    fg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def T(L, *args, **kwargs):
    return L.tensor(*args, **kwargs)


# ------------------------------------------------------------------ repr of real tensors

_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-5, 1e10, 123456789.0, 1e-300, math.nan, math.inf, -math.inf,
           3.14159, 1e8, 99999.5, 1e3, 1e-4, 2.0**40]


def _random_array(rng):
    nd = int(rng.integers(0, 5))
    shape = tuple(int(x) for x in rng.integers(0, 5 if nd < 4 else 4, size=nd))
    if rng.random() < 0.08:
        shape = (int(rng.integers(1001, 1300)),)
    elif rng.random() < 0.05:
        shape = (int(rng.integers(11, 13)),) * 3
    kind = int(rng.integers(0, 5))
    if kind == 0:
        a = rng.choice(_VALUES, size=shape)
    elif kind == 1:
        a = rng.normal(size=shape) * 10.0 ** rng.integers(-8, 12)
    elif kind == 2:
        a = np.round(rng.normal(size=shape) * 10.0 ** rng.integers(0, 10))
    elif kind == 3:
        a = rng.integers(-2**62, 2**62, size=shape) // 10 ** int(rng.integers(0, 18))
    else:
        a = rng.random(size=shape) < 0.5
    if a.dtype.kind == "f":
        a = a.astype(rng.choice([np.float32, np.float64]))
    return np.asarray(a)


_MAKERS = {
    "leaf": lambda L, a: T(L, a),
    "requires_grad": lambda L, a: T(L, a, requires_grad=True),
    "mul": lambda L, a: T(L, a, requires_grad=True) * 2,
    "neg": lambda L, a: -T(L, a, requires_grad=True),
    "unsqueeze": lambda L, a: T(L, a, requires_grad=True)[..., None],
    "exp": lambda L, a: T(L, a, requires_grad=True).exp(),
    "detach": lambda L, a: (T(L, a, requires_grad=True) * 3).detach(),
}


@pytest.mark.parametrize("seed", range(12))
def test_repr_fuzz(seed):
    """repr and str of tensors over dtypes, shapes (0-d to 4-d, empty, summarised) and value
    mixes that switch torch's formatting modes, with requires_grad and grad_fn suffixes."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        a = _random_array(rng)
        names = list(_MAKERS) if a.dtype.kind == "f" else ["leaf"]
        name = names[int(rng.integers(0, len(names)))]
        theirs = _MAKERS[name](torch, a)
        ours = _MAKERS[name](fg, a)
        expected = repr(theirs).replace("torch.", "fg.")
        assert repr(ours) == expected, f"{name} {a.dtype} {a.shape}"
        assert str(ours) == str(theirs).replace("torch.", "fg.")


@pytest.mark.parametrize("options", [
    dict(precision=2), dict(precision=7), dict(threshold=5), dict(threshold=5, edgeitems=1),
    dict(linewidth=30), dict(sci_mode=True), dict(sci_mode=False), dict(profile="short"), dict(profile="full"),
], ids=str)
def test_set_printoptions_matches_torch(options):
    fg.set_printoptions(**options)
    torch.set_printoptions(**options)
    rng = np.random.default_rng(7)
    for a in [rng.normal(size=(3, 7)).astype(np.float32), np.array([1e-9, 1.0, 3.0], np.float32),
              np.arange(12, dtype=np.int64).reshape(3, 4), rng.normal(size=(1200,))]:
        check(lambda L: T(L, a, requires_grad=a.dtype.kind == "f") * 1)
        check(lambda L: T(L, a))


def test_printoptions_context_restores():
    before = formatting.get_printoptions()
    with formatting.printoptions(precision=1):
        assert repr(fg.tensor([1.2345])) == repr(torch.tensor([1.2345], dtype=torch.float32)).replace(
            "1.2345", "1.2")
    assert formatting.get_printoptions() == before


@pytest.mark.parametrize("case", [
    lambda L: [T(L, 1.0), T(L, [1, 2])],
    lambda L: (T(L, [1.5], requires_grad=True),),
    lambda L: {"a": T(L, [[1.5, 2.0]], dtype=L.float64)},
    lambda L: [L.zeros(2, 0), L.zeros(0, dtype=L.int64)],
    lambda L: (L.float32, L.float64, L.int64, L.bool, L.float, L.double, L.long),
    lambda L: T(L, [2.0], requires_grad=True).detach(),
    lambda L: L.nn.Parameter(T(L, [1.0, 2.0])),
    lambda L: L.nn.Parameter(T(L, [1.0, 2.0]), requires_grad=False),
    lambda L: L.nn.Parameter(T(L, [1, 2]), requires_grad=False),
    lambda L: L.nn.Parameter(),
    lambda L: str(L.nn.Parameter(T(L, 3.0))),
    lambda L: L.zeros(0, 3, dtype=L.float64, requires_grad=True) * 2,
])
def test_repr_of_containers_dtypes_parameters(case):
    check(case)


def test_size_repr_is_fg_size():
    # API.md pins `fg.Size([2, 3])`; torch prints torch.Size([2, 3]).
    assert repr(fg.zeros(2, 3).shape) == "fg.Size([2, 3])"
    assert str(fg.tensor(1.0).shape) == "fg.Size([])"
    assert repr(torch.zeros(2, 3).shape) == "torch.Size([2, 3])"


def test_grad_fn_repr_and_next_functions():
    for L in (torch, fg):
        x = T(L, [1.5], requires_grad=True)
        y = x * T(L, [2.0])
        node = y.grad_fn
        assert repr(node).startswith(f"<{type(node).__name__} object at 0x")
        assert node.name() == "MulBackward0"
        nexts = node.next_functions
        assert isinstance(nexts, tuple) and len(nexts) == 2
        assert type(nexts[0][0]).__name__ == "AccumulateGrad" and nexts[0][1] == 0
        assert nexts[1] == (None, 0)
        assert nexts[0][0].variable is x
        assert repr(nexts).startswith("((<AccumulateGrad object at 0x")


# ------------------------------------------------------------------ Python protocol

PROTOCOL = {
    # len and iteration
    "len_0d": lambda L: len(T(L, 1.0)),
    "len": lambda L: len(T(L, [[1.0, 2.0]] * 3)),
    "len_empty": lambda L: len(L.zeros(0, 3)),
    "iter_0d": lambda L: list(T(L, 1.0)),
    "iter_2d": lambda L: list(T(L, [[1, 2], [3, 4]])),
    "iter_empty": lambda L: list(L.zeros(0, 3)),
    "iter_grad_fn": lambda L: list(T(L, [1.0, 2.0], requires_grad=True)),
    "unpack": lambda L: (lambda a, b: (b, a))(*T(L, [[3.0, 1.0], [1.0, 2.0]])),
    "reversed": lambda L: list(reversed(T(L, [1.0, 2.0, 3.0]))),
    "reversed_0d": lambda L: list(reversed(T(L, 1.0))),
    "zip": lambda L: list(zip(T(L, [3.0, 1.0]), T(L, [1, 2]))),
    "sorted": lambda L: sorted(T(L, [3.0, 1.0, 2.0])),
    "builtin_sum": lambda L: sum(T(L, [3.0, 1.0, 2.0])),
    # in
    "in_int": lambda L: 2 in T(L, [1, 2]),
    "in_float": lambda L: 1.5 in T(L, [1, 2]),
    "in_tensor": lambda L: T(L, 2) in T(L, [1, 2]),
    "in_row": lambda L: T(L, [1, 2]) in T(L, [[1, 2], [3, 4]]),
    "in_bad_shape": lambda L: T(L, [1, 2, 3]) in T(L, [[1, 2], [3, 4]]),
    "in_nan": lambda L: math.nan in T(L, [math.nan]),
    "in_str": lambda L: "a" in T(L, [1, 2]),
    "in_list": lambda L: [1] in T(L, [1, 2]),
    "in_none": lambda L: None in T(L, [1, 2]),
    # truth and numbers
    "bool_one": lambda L: bool(T(L, [0.0])),
    "bool_nested": lambda L: bool(T(L, [[[3]]])),
    "bool_nan": lambda L: bool(T(L, math.nan)),
    "bool_neg_zero": lambda L: bool(T(L, -0.0)),
    "bool_many": lambda L: bool(T(L, [0.0, 1.0])),
    "bool_empty": lambda L: bool(T(L, [])),
    "if_many": lambda L: 1 if T(L, [1, 2]) else 0,
    "int": lambda L: int(T(L, 2.7)),
    "int_neg": lambda L: int(T(L, -2.7)),
    "int_bool": lambda L: int(T(L, True)),
    "int_big": lambda L: int(T(L, 2**62 + 1)),
    "int_many": lambda L: int(T(L, [2.7, 1.0])),
    "int_empty": lambda L: int(T(L, [])),
    "int_nan": lambda L: int(T(L, math.nan)),
    "int_inf": lambda L: int(T(L, math.inf)),
    "int_requires_grad": lambda L: int(T(L, 2.5, requires_grad=True)),
    "float": lambda L: float(T(L, [2])),
    "float_f32_value": lambda L: float(T(L, 0.1)),
    "float_bool": lambda L: float(T(L, True)),
    "float_many": lambda L: float(T(L, [2, 3])),
    "float_nonleaf": lambda L: float(T(L, 2.5, requires_grad=True) * 2),
    "complex": lambda L: complex(T(L, 2.0)),
    "complex_many": lambda L: complex(T(L, [2.0, 3.0])),
    "index": lambda L: operator.index(T(L, 2)),
    "index_1elem": lambda L: operator.index(T(L, [[2]])),
    "index_float": lambda L: operator.index(T(L, 2.0)),
    "index_bool": lambda L: operator.index(T(L, True)),
    "index_many": lambda L: operator.index(T(L, [1, 2])),
    "list_index": lambda L: [1, 2, 3][T(L, 1)],
    "list_slice": lambda L: [1, 2, 3, 4][T(L, 1):T(L, 3)],
    "range": lambda L: list(range(T(L, 3))),
    "hex": lambda L: hex(T(L, 255)),
    "numpy_index": lambda L: np.arange(5)[T(L, 3)],
    "hash_is_identity": lambda L: (lambda t: (hash(t) == id(t), {t: 1}[t]))(T(L, [1.0])),
    "set_of_equal": lambda L: len({T(L, 1.0), T(L, 1.0)}),
    # format specs
    "format_0d": lambda L: f"{T(L, 3.14159):.3f}",
    "format_0d_int": lambda L: f"{T(L, 7):03d}",
    "format_0d_plain": lambda L: f"{T(L, 1 / 3)}|{T(L, 1 / 3, dtype=L.float64)}",
    "format_0d_bool": lambda L: f"{T(L, True)}|{T(L, True):>6}",
    "format_0d_requires_grad": lambda L: f"{T(L, 2.5, requires_grad=True) * 2:.2f}",
    "format_1d_plain": lambda L: f"{T(L, [3.5])}",
    "format_1d_spec": lambda L: f"{T(L, [3.5]):.3f}",
    "format_parameter_0d": lambda L: f"{L.nn.Parameter(T(L, 2.0)):.1f}",
    "format_builtin": lambda L: format(T(L, 2.0), ""),
    # comparisons with non-tensors
    "eq_none": lambda L: T(L, [1.0]) == None,  # noqa: E711
    "ne_none": lambda L: T(L, [1.0]) != None,  # noqa: E711
    "ne_str": lambda L: T(L, [1.0]) != "a",
    "eq_str": lambda L: T(L, [1.0]) == "a",
    "ne_object": lambda L: T(L, [1.0]) != object(),
    "eq_list": lambda L: T(L, [1.0, 2.0]) == [1.0, 2.0],
    "lt_str": lambda L: T(L, [1.0]) < "a",
    "lt_none": lambda L: T(L, [1.0]) < None,
    "add_str": lambda L: T(L, [1.0]) + "a",
    "add_none": lambda L: T(L, [1.0]) + None,
    "mul_str": lambda L: T(L, [1.0]) * "ab",
    "list_times_0d": lambda L: [1, 2] * T(L, 2),
    "list_plus_tensor": lambda L: [1.0, 2.0] + T(L, [2.0, 3.0]),
    "tensor_plus_list": lambda L: T(L, [2.0, 3.0]) + [1.0, 2.0],
    "tuple_plus_tensor": lambda L: (1.0, 2.0) + T(L, [2.0, 3.0]),
    # round, abs, math
    "round_0d": lambda L: round(T(L, 2.5)),
    "round_0d_ndigits": lambda L: round(T(L, 2.567), 2),
    "round_nd": lambda L: round(T(L, [2.6, 1.234]), 1),
    "round_int": lambda L: round(T(L, [25, 31]), -1),
    "abs": lambda L: abs(T(L, [-2.6])),
    "abs_int": lambda L: abs(T(L, [-2, 3])),
    "math_floor": lambda L: math.floor(T(L, 2.5)),
    "math_trunc": lambda L: math.trunc(T(L, -2.5)),
    "math_isnan": lambda L: math.isnan(T(L, 4.0)),
    "divmod_absent": lambda L: divmod(T(L, [5.0]), 2),
    # unary operators
    "pos": lambda L: +T(L, [1.0]),
    "pos_bool": lambda L: +T(L, [True]),
    "neg_bool": lambda L: -T(L, [True]),
    "invert_bool": lambda L: (~T(L, [True, False]), ~T(L, True)),
    "invert_int": lambda L: ~T(L, [5, -1, 0, -(2**63)]),
    "invert_float": lambda L: ~T(L, [1.0]),
    # & | ^ on bools (and floats' error)
    "and_bool": lambda L: T(L, [True, True]) & T(L, [True, False]),
    "or_bool": lambda L: T(L, [True, False]) | T(L, [False, False]),
    "xor_bool": lambda L: T(L, [True, False]) ^ T(L, [True, True]),
    "bool_scalars": lambda L: (True & T(L, [True, False]), False | T(L, [True]), True ^ T(L, [True, False]),
                               T(L, [True]) | False),
    "and_float": lambda L: T(L, [1.5]) & T(L, [1.5]),
    "and_float_scalar": lambda L: T(L, [True]) & 1.5,
    "and_none": lambda L: T(L, [True]) & None,
}


@pytest.mark.parametrize("name", list(PROTOCOL))
def test_protocol(name):
    check(PROTOCOL[name])


def test_identity_of_pos_and_zero_dim_reversed():
    for L in (torch, fg):
        x = T(L, [1.0], requires_grad=True)
        y = x * 2
        assert +x is x and +y is y
        z = T(L, 3.0)
        assert reversed(z) is z


def test_item_and_tolist_python_types():
    cases = [[1.1, 2], 1.1, [[0, 3]], [], 0.1]
    for dtype in ("float32", "float64", "int64", "bool"):
        for data in cases:
            theirs = getattr(T(torch, data, dtype=getattr(torch, dtype)), "tolist")()
            ours = T(fg, data, dtype=getattr(fg, dtype)).tolist()
            assert ours == theirs and repr(ours) == repr(theirs), (dtype, data)
        for data in (1.1, [0.1], [[2.0]], 2**40):
            theirs = T(torch, data, dtype=getattr(torch, dtype)).item()
            ours = T(fg, data, dtype=getattr(fg, dtype)).item()
            assert type(ours) is type(theirs) and repr(ours) == repr(theirs), (dtype, data)
    check(lambda L: T(L, [1.0, 2.0]).item())
    check(lambda L: T(L, []).item())
    check(lambda L: T(L, [2.0], requires_grad=True).item())


def test_float_of_requires_grad_warns_once_a_process(monkeypatch):
    from fusegrad.tracer import tensor as tensor_module
    monkeypatch.setattr(tensor_module, "_SCALAR_WARNED", [])       # (as in a fresh process)
    text = ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
            "Consider using tensor.detach() first.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = float(fg.tensor([1.5], requires_grad=True))
        int(fg.tensor(2.5, requires_grad=True))     # int() does not warn (torch)
        float(fg.tensor([2.5], requires_grad=True))     # TORCH_WARN_ONCE: not again, whatever the filter
        fg.tensor([fg.tensor(1.0, requires_grad=True)])
    assert value == 1.5
    assert [str(w.message) for w in caught] == [text]
    with warnings.catch_warnings(record=True) as caught:   # torch warns once a process
        warnings.simplefilter("always")
        float(torch.tensor([1.5], requires_grad=True))
    if caught:
        assert str(caught[0].message).startswith(text)


# ------------------------------------------------------------------ NumPy interop

NUMPY = {
    "numpy_shares": lambda L: (lambda t: (t.numpy().__setitem__(0, 5), t)[1])(T(L, [1.0, 2.0])),
    "numpy_requires_grad": lambda L: T(L, [1.0], requires_grad=True).numpy(),
    "numpy_force": lambda L: T(L, [1.0], requires_grad=True).numpy(force=True),
    "numpy_nonleaf": lambda L: (T(L, [1.0, 2.0], requires_grad=True) * 2).numpy(),
    "numpy_0d_bool": lambda L: (T(L, 2.0).numpy(), T(L, [True]).numpy(), T(L, [3]).numpy()),
    "asarray": lambda L: np.asarray(T(L, [1.0, 2.0])),
    "asarray_shares": lambda L: (lambda t: np.shares_memory(np.asarray(t), t.numpy()))(T(L, [1.0, 2.0])),
    "asarray_requires_grad": lambda L: np.asarray(T(L, [1.0, 2.0], requires_grad=True)),
    "asarray_dtype": lambda L: np.asarray(T(L, [1.0, 2.0]), dtype=np.float64),
    "array_method": lambda L: T(L, [1.0, 2.0]).__array__(np.float64),
    "np_array_ints": lambda L: np.array(T(L, [1, 2])),
    "np_array_of_tensors": lambda L: np.array([T(L, 1.0), T(L, 2.0)]),
    "np_float64_of": lambda L: np.float64(T(L, 1.5)),
    "ufunc_exp": lambda L: np.exp(T(L, [1.0, 2.0])),
    "ufunc_0d": lambda L: np.exp(T(L, 1.0)),
    "ufunc_add_scalar": lambda L: np.add(T(L, [1.0, 2.0]), 1),
    "ufunc_int": lambda L: (np.add(T(L, [1, 2]), 1), np.sqrt(T(L, [1, 4]))),
    "ufunc_two_tensors": lambda L: np.add(T(L, [1.0]), T(L, [2.0])),
    "ufunc_with_array": lambda L: np.maximum(T(L, [1.0, 2.0]), np.array([3.0, 0.0])),
    "ufunc_requires_grad": lambda L: np.exp(T(L, [1.0, 2.0], requires_grad=True)),
    "np_sum": lambda L: np.sum(T(L, [1.0, 2.0])),
    # NumPy scalars never promote and give Tensors, on either side
    "npf64_mul": lambda L: np.float64(2) * T(L, [1.0, 2.0]),
    "mul_npf64": lambda L: T(L, [1.0, 2.0]) * np.float64(2),
    "npf32_add": lambda L: np.float32(2) + T(L, [1.0, 2.0]),
    "npi64_add": lambda L: (np.int64(2) + T(L, [1.0, 2.0]), np.int64(2) + T(L, [1, 2])),
    "npf64_add_int": lambda L: np.float64(2.5) + T(L, [1, 2]),
    "npf64_rsub_div_pow": lambda L: (np.float64(2) - T(L, [1.0, 2.0]), np.float64(2) / T(L, [1.0, 2.0]),
                                     np.float64(2) ** T(L, [1.0, 2.0])),
    "npf64_compare": lambda L: (np.float64(2) < T(L, [1.0, 2.0]), np.float64(2) == T(L, [1.0, 2.0])),
    "npf64_requires_grad": lambda L: np.float64(2.0) * T(L, [2.0, 3.0], requires_grad=True),
    "npf32_rsub_f64": lambda L: np.float32(1) - T(L, [2.0, 3.0], dtype=L.float64),
    "npint_index": lambda L: T(L, [2.0, 3.0])[np.int64(1)],
    # arrays: tensor first works, array first is NumPy's/Python's TypeError (torch)
    "tensor_plus_array": lambda L: T(L, [1.0, 2.0]) + np.array([1.0, 2.0]),
    "array_plus_tensor": lambda L: np.array([1.0, 2.0]) + T(L, [1.0, 2.0]),
    "array_times_tensor": lambda L: np.array([1.0, 2.0]) * T(L, [1.0, 2.0]),
    "array0d_times_tensor": lambda L: np.array(2.0) * T(L, [1.0, 2.0]),
    "tensor_eq_array": lambda L: T(L, [1.0, 2.0]) == np.array([1.0, 3.0]),
}


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy_interop(name):
    check(NUMPY[name])


@pytest.mark.xfail(strict=True, reason="torch turns a bool ufunc result into uint8 (no such dtype in fusegrad): "
                                       "np.logical_not(t) is a bool tensor here")
def test_bool_ufunc_result_dtype():
    check(lambda L: np.logical_not(T(L, [True])))


# ------------------------------------------------------------------ metadata and setters

ATTRIBUTES = {
    "shape": lambda L: (T(L, [[1.0, 2.0]]).shape, T(L, 1.0).shape),
    "size": lambda L: (T(L, [[1.0, 2.0]]).size(), T(L, [[1.0, 2.0]]).size(-1), T(L, [[1.0, 2.0]]).size(dim=1)),
    "size_out_of_range": lambda L: T(L, [[1.0, 2.0]]).size(5),
    "size_negative_out_of_range": lambda L: T(L, [[1.0, 2.0]]).size(-3),
    "size_0d": lambda L: T(L, 1.0).size(0),
    "size_str": lambda L: T(L, [1.0]).size("a"),
    "size_ops": lambda L: (T(L, [[[1.0, 2.0]]]).shape[1:], T(L, [[1.0]]).shape + (3,), (3,) + T(L, [1.0]).shape,
                           T(L, [1.0]).shape * 2, 2 * T(L, [1.0]).shape, T(L, [[1.0, 2.0]]).shape.numel()),
    "size_types": lambda L: tuple(type(v).__name__ for v in (
        L.Size([2, 3])[1:], L.Size([2]) + (1,), (1,) + L.Size([2]), L.Size([2]) * 2)),
    "size_ctor": lambda L: (L.Size([2, 3]), L.Size([]), L.Size((np.int64(3), True)), L.Size([T(L, [2])])),
    "size_ctor_float": lambda L: L.Size([2.5]),
    "size_ctor_float_tensor": lambda L: L.Size([T(L, 2.0)]),
    "size_plus_list": lambda L: L.Size([2]) + [3],
    "size_pickle": lambda L: pickle.loads(pickle.dumps(L.Size([2, 3]))),
    "dims": lambda L: (T(L, 1.0).dim(), T(L, [[1.0]]).ndim, T(L, [[1.0, 2]]).numel(), T(L, []).numel()),
    "T_0d_1d_2d": lambda L: (T(L, 1.0).T, T(L, [1.0, 2]).T, T(L, [[1.0, 2]]).T),
    "T_3d": lambda L: T(L, [[[1.0, 2]]]).T.shape,
    "mT": lambda L: (T(L, [[[1.0, 2]]]).mT, T(L, [1.0, 2]).mT),
    "H": lambda L: (T(L, [[1.0, 2]], requires_grad=True).H, T(L, 3.0).H),
    "H_1d": lambda L: T(L, [1.0, 2]).H,
    "H_3d": lambda L: L.zeros(2, 3, 1).H,
    "mH": lambda L: (L.zeros(2, 1, 3, requires_grad=True).mH.shape, L.zeros(2, 3).mH.grad_fn),
    "mH_1d": lambda L: T(L, [1.0, 2]).mH,
    "is_leaf": lambda L: (T(L, 1.0).is_leaf, T(L, 1.0, requires_grad=True).is_leaf,
                          (T(L, 1.0, requires_grad=True) * 2).is_leaf, (T(L, 1.0) * 2).is_leaf),
    "dtype": lambda L: (T(L, [1]).dtype, T(L, [1.0]).dtype, T(L, True).dtype, L.float == L.float32),
    "dtype_flags": lambda L: (L.float32.is_floating_point, L.int64.is_floating_point, L.bool.is_floating_point),
    # layout and placement
    "strides": lambda L: (L.zeros(2, 3).stride(), L.zeros(2, 3).T.stride(), L.zeros(2, 3).stride(-1),
                          L.zeros(2, 3).expand(4, 2, 3).stride(), L.zeros(4, 3)[1:, 1:].stride(), L.zeros(()).stride()),
    "stride_errors_0d": lambda L: L.zeros(()).stride(0),
    "stride_errors_range": lambda L: L.zeros(2, 3).stride(-3),
    "stride_errors_type": lambda L: L.zeros(2, 3).stride("a"),
    "contiguity": lambda L: (L.zeros(2, 3).is_contiguous(), L.zeros(2, 3).T.is_contiguous(),
                             L.zeros(3, 1).T.is_contiguous(), L.zeros(2, 3).expand(4, 2, 3).is_contiguous(),
                             L.zeros(2, 3).T.clone().stride()),
    "storage_offset": lambda L: (L.zeros(4, 3)[1:, 1:].storage_offset(), L.zeros(4).storage_offset()),
    "data_ptr": lambda L: (lambda t: (t[1:].data_ptr() - t.data_ptr(), t.data_ptr() == t.numpy().ctypes.data))(
        L.zeros(4, dtype=L.float64)),
    "sizes_in_bytes": lambda L: (L.zeros(2, 3).nbytes, L.zeros(2, dtype=L.float64).itemsize,
                                 L.zeros(2, dtype=L.int64).element_size(), L.zeros(2, 3).ndimension()),
    "placement": lambda L: (lambda t: (t.cpu() is t, t.is_cuda, t.is_sparse, t.is_meta, t.get_device(),
                                       t.is_inference(), t.is_shared(), str(t.device)))(L.zeros(2)),
    "dtype_kind": lambda L: (L.zeros(1).is_complex(), L.zeros(1).is_signed(), L.zeros(1, dtype=L.bool).is_signed(),
                             L.zeros(1, dtype=L.int64).is_floating_point()),
    "output_nr": lambda L: (L.zeros(1).output_nr, L.zeros(2, 3, requires_grad=True).max(1)[1].output_nr,
                            L.zeros(2, 3, requires_grad=True).max(1)[0].output_nr),
    # new_* constructors take this tensor's dtype
    "new_zeros_ones_empty": lambda L: (lambda t: (t.new_zeros(2), t.new_ones((2, 1)), t.new_empty(0).shape,
                                                  t.new_zeros(2, 3, requires_grad=True),
                                                  t.new_ones(2, dtype=L.int64)))(L.zeros(2, dtype=L.float64)),
    "new_full": lambda L: (L.tensor([1]).new_full((2,), 2.5), L.zeros(1).new_full((1, 2), 7)),
    "new_tensor": lambda L: (L.zeros(1, dtype=L.float64).new_tensor([1, 2]), L.zeros(1).new_tensor(L.ones(2)),
                             L.tensor([1]).new_tensor([1.5], requires_grad=False)),
    # whole-tensor comparisons
    "equal": lambda L: (L.zeros(2).equal(L.zeros(2, 1)), L.zeros(2).equal(L.zeros(2, dtype=L.int64)),
                        L.tensor([math.nan]).equal(L.tensor([math.nan])), L.ones(2).equal(L.ones(2))),
    "equal_number": lambda L: L.zeros(2).equal(2),
    "allclose": lambda L: (L.zeros(2).allclose(L.zeros(2, 1)), L.tensor([1.0]).allclose(L.tensor([1.0 + 1e-6])),
                           L.tensor([math.nan]).allclose(L.tensor([math.nan])),
                           L.tensor([math.nan]).allclose(L.tensor([math.nan]), equal_nan=True),
                           L.tensor([1.0]).allclose(L.tensor([1.1]), rtol=0.2)),
    "allclose_dtypes": lambda L: L.zeros(2).allclose(L.zeros(2, dtype=L.float64)),
    "allclose_shapes": lambda L: L.zeros(2).allclose(L.zeros(3)),
    "allclose_number": lambda L: L.zeros(2).allclose(2),
    # type() names and casts
    "type": lambda L: (L.zeros(1).type(), L.zeros(1).type("torch.LongTensor"), L.zeros(1).type(L.float64)),
    "type_bad_name": lambda L: L.zeros(1).type("LongTensor"),
    "type_python_type": lambda L: L.zeros(1).type(int),
}


def _set(attr, value_fn, make=lambda L: T(L, [1.0, 2.0], requires_grad=True)):
    def fn(L):
        t = make(L)
        setattr(t, attr, value_fn(L))
        return t, getattr(t, attr) if attr != "grad" or t.is_leaf else t.grad
    return fn


SETTERS = {
    "requires_grad_nonleaf_true": _set("requires_grad", lambda L: True,
                                       lambda L: T(L, 1.0, requires_grad=True) * 2),
    "requires_grad_nonleaf_false": _set("requires_grad", lambda L: False,
                                        lambda L: T(L, 1.0, requires_grad=True) * 2),
    "requires_grad_int": _set("requires_grad", lambda L: True, lambda L: T(L, 1)),
    "requires_grad_int_false": _set("requires_grad", lambda L: False, lambda L: T(L, 1)),
    "requires_grad_str": _set("requires_grad", lambda L: "yes", lambda L: T(L, 1.0)),
    "requires_grad_none": _set("requires_grad", lambda L: None, lambda L: T(L, 1.0)),
    "requires_grad_leaf": _set("requires_grad", lambda L: True, lambda L: T(L, 1.0)),
    "requires_grad__int": lambda L: T(L, 1).requires_grad_(),
    "data_other_dtype_shape": _set("data", lambda L: T(L, [3.0, 4.0, 5.0], dtype=L.float64)),
    "data_numpy": _set("data", lambda L: np.array([1.0])),
    "data_list": _set("data", lambda L: [1.0]),
    "data_int_on_requires_grad": _set("data", lambda L: T(L, [3, 4])),
    "data_int_plain": _set("data", lambda L: T(L, [3, 4]), lambda L: T(L, [1.0])),
    "grad_ok": _set("grad", lambda L: T(L, [1.0, 1.0])),
    "grad_none": _set("grad", lambda L: None),
    "grad_list": _set("grad", lambda L: [1.0, 1.0]),
    "grad_numpy": _set("grad", lambda L: np.ones(2)),
    "grad_float": _set("grad", lambda L: 1.0),
    "grad_dtype": _set("grad", lambda L: T(L, [1.0, 1.0], dtype=L.float64)),
    "grad_int": _set("grad", lambda L: T(L, [1, 1])),
    "grad_shape": _set("grad", lambda L: T(L, [1.0, 1.0, 1.0])),
    "grad_0d": _set("grad", lambda L: T(L, 1.0)),
    "grad_on_plain_tensor": _set("grad", lambda L: T(L, [1.0, 1.0]), lambda L: T(L, [1.0, 2.0])),
    "grad_on_nonleaf": _set("grad", lambda L: T(L, [1.0, 1.0]), lambda L: T(L, [1.0, 2.0], requires_grad=True) * 2),
    "grad_requiring_grad": _set("grad", lambda L: T(L, [2.0, 3.0], requires_grad=True)),
    "grad_int_on_int": _set("grad", lambda L: T(L, [2]), lambda L: T(L, [1])),
    "requires_grad_np_bool": _set("requires_grad", lambda L: np.bool_(True), lambda L: T(L, 1.0)),
    "requires_grad_one": _set("requires_grad", lambda L: 1, lambda L: T(L, 1.0)),
    "requires_grad__str": lambda L: T(L, 1.0).requires_grad_("yes"),
    "requires_grad__nonleaf": lambda L: (T(L, 1.0, requires_grad=True) * 2).requires_grad_(),
    "requires_grad__nonleaf_false": lambda L: (T(L, 1.0, requires_grad=True) * 2).requires_grad_(False),
    **{f"read_only_{name}": _set(name, lambda L: None)
       for name in ("grad_fn", "is_leaf", "shape", "dtype", "ndim", "T", "mT", "device", "output_nr")},
}


def _grad_is_self(L):
    x = T(L, [1.0], requires_grad=True)
    x.grad = x


def _deleted(attr):
    def fn(L):
        x = T(L, [1.0], requires_grad=True)
        (x * 2).sum().backward()
        delattr(x, attr)
        return x, x.grad
    return fn


OTHER_STATE = {
    "grad_is_self": _grad_is_self,
    "del_grad": _deleted("grad"),
    "del_data": _deleted("data"),
    "del_requires_grad": _deleted("requires_grad"),
    "detach__nonleaf": lambda L: (lambda y: (y.detach_(), y.is_leaf, y.requires_grad, y.grad_fn))(
        T(L, [1.0], requires_grad=True) * 2),
    "detach__view": lambda L: (T(L, [1.0, 2.0], requires_grad=True) * 2)[0:1].detach_(),
    "detach_shares_memory": lambda L: (lambda x: (x.detach().add_(1), x)[1])(T(L, [1.0])),
    "data_shares_memory": lambda L: (lambda x: (x.data.add_(1), x)[1])(T(L, [1.0], requires_grad=True)),
    "data_is_plain_leaf": lambda L: (lambda d: (d, d.is_leaf, d.requires_grad, d.grad_fn))(
        (T(L, [1.0], requires_grad=True) * 2).data),
    "user_attribute": lambda L: (lambda t: (setattr(t, "foo", 3), t.foo, vars(t))[1:])(T(L, [1.0])),
    "missing_attribute": lambda L: T(L, [1.0]).no_such_attribute,
    # the legacy constructor
    "Tensor_list": lambda L: (L.Tensor([1, 2]), L.Tensor([True]), L.Tensor(np.array([1, 2])), L.Tensor((2, 3))),
    "Tensor_sizes": lambda L: (L.Tensor(2, 3).shape, L.Tensor(L.Size([4])).shape, L.Tensor(0), L.Tensor()),
    "Tensor_of_tensor": lambda L: (L.Tensor(L.tensor([1, 2])), L.Tensor(L.tensor([1.0], dtype=L.float64))),
    "Tensor_number": lambda L: L.Tensor(2.5),
    "Tensor_negative": lambda L: L.Tensor(-1),
    # Parameter is a Tensor; ops on it give plain Tensors
    "parameter_types": lambda L: (lambda p: (isinstance(p, L.Tensor), type(p * 2).__name__, (p * 2).grad_fn.name(),
                                            p.is_leaf, type(p.detach()).__name__, type(p.data).__name__,
                                            bool(p), [type(r).__name__ for r in p]))(L.nn.Parameter(L.ones(1))),
}


@pytest.mark.parametrize("name", list(OTHER_STATE))
def test_other_state(name):
    check(OTHER_STATE[name])


@pytest.mark.parametrize("name", list(ATTRIBUTES))
def test_attributes(name):
    check(ATTRIBUTES[name])


@pytest.mark.parametrize("name", list(SETTERS))
def test_setters(name):
    check(SETTERS[name])


def test_data_assignment_keeps_identity_and_requires_grad():
    for L in (torch, fg):
        x = T(L, [1.0, 2.0], requires_grad=True)
        x.data = T(L, [[5.0]], dtype=L.float64)
        assert x.requires_grad and x.is_leaf and x.dtype == L.float64 and tuple(x.shape) == (1, 1)


def test_nonleaf_grad_warning_only_while_unset():
    for L in (torch, fg):
        y = T(L, [1.0, 2.0], requires_grad=True) * 2
        with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
            assert y.grad is None
        y.grad = T(L, [1.0, 1.0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad.tolist() == [1.0, 1.0]


def test_iteration_rows_are_views_with_gradients():
    grads = []
    for L in (torch, fg):
        x = T(L, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        a, b = x
        assert type(a.grad_fn).__name__ == "UnbindBackward0"
        (a * 2 + b * b).sum().backward()
        grads.append(x.grad.tolist())
        base = T(L, [[1.0, 2.0], [3.0, 4.0]])
        next(iter(base))[0] = 9.0           # a row shares memory with its tensor
        assert base[0, 0].item() == 9.0
    assert grads[0] == grads[1]


# ------------------------------------------------------------------ copy, deepcopy, pickle

def _leaf_with_grad(L):
    x = T(L, [1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    x.note = "kept"
    return x


COPIES = {
    "copy": lambda L: (lambda x, y: (y is x, y, y.grad, y.is_leaf, y.note))(*(lambda x: (x, copy.copy(x)))(
        _leaf_with_grad(L))),
    "copy_nonleaf": lambda L: (lambda c: (c, c.is_leaf, c.grad_fn))(copy.copy(T(L, [1.0], requires_grad=True) * 2)),
    "deepcopy": lambda L: (lambda x, y: (y is x, y, y.grad, y.grad is x.grad, y.is_leaf, y.note))(
        *(lambda x: (x, copy.deepcopy(x)))(_leaf_with_grad(L))),
    "deepcopy_nonleaf": lambda L: copy.deepcopy(T(L, [1.0], requires_grad=True) * 2),
    "deepcopy_nonleaf_no_grad": lambda L: copy.deepcopy(T(L, [1.0]) * 2),
    "deepcopy_int_0d": lambda L: copy.deepcopy([T(L, 3), T(L, True)]),
    "pickle": lambda L: pickle.loads(pickle.dumps(T(L, [1.0, 2.0], requires_grad=True))),
    "pickle_dtypes": lambda L: pickle.loads(pickle.dumps([T(L, [[1, 2]]), T(L, True), T(L, 2.5, dtype=L.float64),
                                                          L.zeros(2, 0)])),
    "pickle_nonleaf": lambda L: pickle.loads(pickle.dumps(T(L, [1.0], requires_grad=True) * 2)),
    "pickle_drops_grad": lambda L: (lambda y: (y, y.grad, y.note))(pickle.loads(pickle.dumps(_leaf_with_grad(L)))),
    "pickle_view": lambda L: pickle.loads(pickle.dumps(T(L, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])[:, 1:].T)),
    "parameter_deepcopy": lambda L: (lambda p: (p, p.grad, type(p).__name__))(copy.deepcopy(
        (lambda p: (setattr(p, "grad", L.ones(2)), p)[1])(L.nn.Parameter(T(L, [1.0, 2.0]))))),
    "parameter_pickle": lambda L: (lambda p: (p, type(p).__name__))(pickle.loads(pickle.dumps(
        L.nn.Parameter(T(L, [1.0, 2.0]), requires_grad=False)))),
    "parameter_copy": lambda L: (lambda p: (p, type(p).__name__))(copy.copy(L.nn.Parameter(T(L, [1.0, 2.0])))),
}


@pytest.mark.parametrize("name", list(COPIES))
def test_copies(name):
    check(COPIES[name])


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_memory_sharing_after_copies(how):
    """copy.copy shares memory with the original; deepcopy and pickle do not, but tensors
    copied together that shared memory still share it (torch keys on the storage)."""
    results = []
    for L in (torch, fg):
        base = T(L, [1.0, 2.0, 3.0, 4.0])
        view = base[1:3]
        if how == "copy":
            a, b = copy.copy(base), copy.copy(view)
        elif how == "deepcopy":
            a, b = copy.deepcopy([base, view])
        else:
            a, b = pickle.loads(pickle.dumps([base, view]))
        a.add_(10.0)
        results.append((base.tolist(), view.tolist(), a.tolist(), b.tolist()))
    assert results[0] == results[1]


def test_deepcopy_copies_grad_independently():
    for L in (torch, fg):
        x = _leaf_with_grad(L)
        y = copy.deepcopy(x)
        y.grad.add_(1.0)
        with L.no_grad():
            y.add_(1.0)
        assert x.grad.tolist() == [2.0, 2.0] and x.tolist() == [1.0, 2.0]
        assert y.grad.tolist() == [3.0, 3.0] and y.tolist() == [2.0, 3.0]
        assert y.requires_grad and y.is_leaf


# ------------------------------------------------------------------ known gaps (other files)

def test_contiguous_of_transposed_view():
    check(lambda L: (L.zeros(2, 3).T.contiguous().is_contiguous(), L.zeros(2, 3).T.contiguous().stride()))


@pytest.mark.parametrize("expr", [lambda t: t // 2, lambda t: t % 3, lambda t: 7 // t, lambda t: 7 % t])
def test_floordiv_and_mod(expr):
    check(lambda L: expr(T(L, [5.0, -5.0])))


@pytest.mark.parametrize("expr", [lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b,
                                  lambda a, b: a << b, lambda a, b: a >> b])
def test_integer_bitwise(expr):
    check(lambda L: expr(T(L, [5, 12]), T(L, [3, 1])))


@pytest.mark.parametrize("call", [
    lambda L: L.zeros(2).cuda(), lambda L: L.zeros(2).cuda("cuda:0"), lambda L: L.nn.Linear(2, 2).cuda(),
    lambda L: L.zeros(2).to("cuda"), lambda L: L.nn.Linear(2, 2).to("cuda"),
    lambda L: L.nn.Linear(2, 2, device="cuda"), lambda L: L.nn.Embedding(3, 2, device="cuda"),
    lambda L: L.nn.LayerNorm(3, device="cuda"),
], ids=["tensor cuda()", "tensor cuda('cuda:0')", "module cuda()", "tensor to cuda", "module to cuda",
        "Linear(device=cuda)", "Embedding(device=cuda)", "LayerNorm(device=cuda)"])
def test_cuda_raises_an_assertion_error_as_torch_without_cuda(call):
    """torch built without CUDA raises AssertionError; fusegrad the same class, its text naming
    the CPU-only library (README, "devices")."""
    with pytest.raises(AssertionError):
        call(torch)
    with pytest.raises(AssertionError, match=r"fusegrad runs on the CPU only \(got device 'cuda(:0)?'\)"):
        call(fg)


@pytest.mark.parametrize("call", [lambda L: L.zeros(2).cuda(0), lambda L: L.nn.Linear(2, 2).cuda(0)],
                         ids=["tensor", "module"])
def test_cuda_with_an_index_raises_torchs_accelerator_error(call):
    for L in (torch, fg):
        with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is available.$"):
            call(L)
