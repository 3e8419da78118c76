"""format_tensor must print exactly what torch's repr prints (torch is the oracle)."""
import ast
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle for tensor printing")
from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from fusegrad.tracer import formatting  # noqa: E402
from fusegrad.tracer.formatting import format_tensor, printoptions, set_printoptions  # noqa: E402


def torch_repr(a: np.ndarray) -> str:
    # np.array copies into a C-contiguous ndarray and, unlike
    # np.ascontiguousarray, keeps 0-d arrays 0-d.
    return repr(torch.from_numpy(np.array(a))).replace("torch.", "fg.")


def assert_prints_like_torch(a: np.ndarray) -> None:
    assert format_tensor(a) == torch_repr(a)


@pytest.fixture(autouse=True)
def default_printoptions():
    """Every test starts and ends with default options, ours and torch's."""
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def _normal(shape, dtype=np.float32, scale=1.0, seed=0):
    return np.asarray(np.random.default_rng(seed).normal(size=shape) * scale, dtype=dtype)


nan, inf = np.nan, np.inf

CASES = {
    # random normals over many shapes, including rows that wrap at 80 columns
    "scalar": _normal(()),
    "vec3": _normal((3,)),
    "vec20_wraps": _normal((20,)),
    "vec200_wraps": _normal((200,), seed=1),
    "mat": _normal((4, 5)),
    "mat_1x1": _normal((1, 1)),
    "mat_1xn": _normal((1, 30)),
    "mat_nx1": _normal((6, 1)),
    "mat_wide_wraps": _normal((3, 17)),
    "cube": _normal((2, 3, 4)),
    "rank4": _normal((2, 1, 2, 3)),
    "negative_only": -np.abs(_normal((5,))),
    "big_fixed": _normal((5,), scale=1e4),
    # integral floats
    "ints_as_floats": np.array([1.0, 2.0, -3.0, 100.0], np.float32),
    "int_scalar": np.array(3.0, np.float32),
    "int_scalar_27": np.array(27.0, np.float32),
    "int_mat": np.full((2, 2), 3.0, np.float32),
    "int_float_big": np.array([1.0, 1e9], np.float32),
    "int_ratio_sci": np.array([1.0, 2000.0], np.float32),
    # scientific mode from magnitudes
    "tiny": _normal((4,), scale=1e-6),
    "huge": _normal((4,), scale=1e10),
    "wide_range": np.array([1e-3, 1.0, 5e2], np.float32),
    "mixed_range_mat": np.array([[1e-5, 2.5], [3.0, -7e3]], np.float32),
    "tiny_scalar": np.array(1.5e-7, np.float32),
    "subnormal": np.array([1e-45, 1.0], np.float32),
    # nonfinite values and signed zero
    "nan_inf": np.array([nan, inf, -inf, 1.5], np.float32),
    "nan_ints": np.array([nan, 1.0, 2.0], np.float32),
    "only_nonfinite": np.array([nan, inf, -inf], np.float32),
    "nan_scalar": np.array(nan, np.float32),
    "neg_inf_scalar": np.array(-inf, np.float32),
    "neg_zero": np.array([-0.0, 0.0, 1.0], np.float32),
    "neg_zero_frac": np.array([-0.0, 0.5], np.float32),
    "neg_zero_sci": np.array([-0.0, 1e-6], np.float32),
    "neg_zero_scalar": np.array(-0.0, np.float32),
    "nan_sci": np.array([nan, 1e-8, -inf, 3.0], np.float32),
    "all_zero": np.zeros((2, 3), np.float32),
    "zero_scalar": np.array(0.0, np.float32),
    "rounds_up": np.array([0.99999, 9.99996, -0.00004], np.float32),
    # int64
    "int64_vec": np.array([1, -2, 300, 0], np.int64),
    "int64_mat": np.arange(-6, 6, dtype=np.int64).reshape(3, 4),
    "int64_scalar": np.array(-7, np.int64),
    "int64_big": np.array([2**62, -(2**40), 5], np.int64),
    "int64_wraps": np.arange(0, 10**6, 25_000, dtype=np.int64),
    # bool
    "bool_vec": np.array([True, False, True]),
    "bool_mat": np.array([[True, False], [False, False]]),
    "bool_scalar": np.array(True),
    "bool_wraps": np.arange(30) % 3 == 0,
    # empty
    "empty_float": np.zeros((0,), np.float32),
    "empty_2d": np.zeros((0, 3), np.float32),
    "empty_2d_trailing": np.zeros((2, 0), np.float32),
    "empty_3d": np.zeros((1, 0, 2), np.float32),
    "empty_int64": np.zeros((0,), np.int64),
    "empty_int64_2d": np.zeros((0, 3), np.int64),
    "empty_bool": np.zeros((0,), bool),
    "empty_float64": np.zeros((0,), np.float64),
    "empty_float64_2d": np.zeros((3, 0), np.float64),
    # summarised (numel > 1000)
    "summ_vec2000": _normal((2000,)),
    "summ_arange": np.arange(2000, dtype=np.float32),
    "summ_mat": _normal((100, 100)),
    "summ_mat_int64": np.arange(10_000, dtype=np.int64).reshape(100, 100),
    "summ_bool": np.arange(2000) % 7 == 0,
    "summ_cube": _normal((11, 11, 11)),
    "summ_narrow": _normal((1001, 1)),
    "summ_short_rows": _normal((2, 600)),
    "summ_outliers_hidden": np.concatenate(
        [np.ones(3), np.full(1000, 1e-9), np.ones(3)]
    ).astype(np.float32),
    "exactly_threshold": _normal((1000,)),
    # float64 prints its dtype
    "f64_vec": _normal((5,), np.float64),
    "f64_scalar": np.array(2.0, np.float64),
    "f64_mat_wraps": _normal((3, 12), np.float64),
    "f64_sci": np.array([1e-20, 1e20], np.float64),
    "f64_summ": _normal((50, 50), np.float64),
    "f64_nan": np.array([nan, -0.0], np.float64),
    "f64_ratio_overflows": np.array([1.7e308, 5e-324], np.float64),
    # torch decides wrapping on "dtype=torch.float64": 80 columns, no break
    "f64_suffix_at_edge": np.array([12.5730, -13.2105, 64.0423, 10.49, -53.5669]),
    # other dtypes torch can hold
    "f16": _normal((4,), np.float16),
    "int32": np.array([1, -2, 3], np.int32),
    "uint8": np.array([0, 255], np.uint8),
    "int8_empty": np.zeros((0, 2), np.int8),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    assert_prints_like_torch(CASES[name])


def test_spec_examples():
    # The literal examples from the API contract.
    two_by_two = np.full((2, 2), 3.0, np.float32)
    assert format_tensor(two_by_two, ["grad_fn=<AddBackward0>"]) == (
        "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
    )
    assert format_tensor(np.array(27.0, np.float32), ["grad_fn=<MeanBackward0>"]) == (
        "tensor(27., grad_fn=<MeanBackward0>)"
    )
    assert format_tensor(np.array([1.0, 2.0], np.float32), ["requires_grad=True"]) == (
        "tensor([1., 2.], requires_grad=True)"
    )


@pytest.mark.parametrize(
    "shape,dtype",
    [((), np.float32), ((2,), np.float32), ((2, 2), np.float32), ((12,), np.float32),
     ((3, 9), np.float32), ((15,), np.float64), ((6, 6), np.float64), ((2000,), np.float32)],
)
def test_requires_grad_suffix(shape, dtype):
    a = _normal(shape, dtype, seed=3)
    leaf = torch.tensor(a, requires_grad=True)
    expected = repr(leaf).replace("torch.", "fg.")
    assert format_tensor(a, ["requires_grad=True"]) == expected


@pytest.mark.parametrize(
    "shape,dtype,op",
    [((), np.float32, "mul"), ((3,), np.float32, "mul"), ((2, 2), np.float32, "add"),
     ((13,), np.float32, "mul"), ((4, 11), np.float64, "mul"), ((20,), np.float64, "add"),
     ((5,), np.float32, "mean"), ((3, 4), np.float64, "sum")],
)
def test_grad_fn_suffix(shape, dtype, op):
    x = torch.tensor(_normal(shape, dtype, seed=4), requires_grad=True)
    y = {"mul": lambda: x * 2.5, "add": lambda: x + x, "mean": x.mean, "sum": x.sum}[op]()
    suffix = f"grad_fn=<{type(y.grad_fn).__name__}>"
    expected = repr(y).replace("torch.", "fg.")
    assert format_tensor(y.detach().numpy(), [suffix]) == expected


def test_long_suffix_wraps_to_new_line():
    # A suffix that overflows the line goes on its own line, indented under "tensor(".
    y = torch.tensor(_normal((8,), seed=5), requires_grad=True) * 2
    expected = repr(y).replace("torch.", "fg.")
    assert "\n       grad_fn" in expected  # the oracle does wrap here
    assert format_tensor(y.detach().numpy(), ["grad_fn=<MulBackward0>"]) == expected


PRINTOPTION_CASES = [
    dict(precision=2),
    dict(precision=0),
    dict(precision=8),
    dict(threshold=5),
    dict(threshold=5, edgeitems=1),
    dict(threshold=5, edgeitems=0),
    dict(edgeitems=0),
    dict(linewidth=40),
    dict(linewidth=10),
    dict(sci_mode=True),
    dict(sci_mode=False),
    dict(profile="short"),
    dict(profile="full"),
]

PRINTOPTION_ARRAYS = [
    _normal((7,)),
    _normal((3, 8), np.float64),
    np.array([1e-9, 1.0, nan], np.float32),
    np.array([1.0, -2.0, 3.0, 4.0, 5.0, 6.0, 7.0], np.float32),
    np.zeros((3,), np.float32),
    np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    np.arange(7) % 2 == 0,
    np.array(2.5, np.float32),
    _normal((2000,)),
]


@pytest.mark.parametrize("options", PRINTOPTION_CASES, ids=str)
def test_printoptions_match_torch(options):
    with printoptions(**options), torch._tensor_str.printoptions(**options):
        for a in PRINTOPTION_ARRAYS:
            assert_prints_like_torch(a)
            if a.dtype.kind == "f":  # suffix wrapping also follows linewidth
                leaf = torch.tensor(a, requires_grad=True)
                expected = repr(leaf).replace("torch.", "fg.")
                assert format_tensor(a, ["requires_grad=True"]) == expected


def test_printoptions_restore_and_sci_mode_reset():
    before = formatting.get_printoptions()
    with printoptions(precision=2, sci_mode=True):
        assert formatting.get_printoptions()["precision"] == 2
    assert formatting.get_printoptions() == before
    # As in torch, any call that omits sci_mode sets it back to None.
    set_printoptions(sci_mode=True)
    set_printoptions(precision=3)
    assert formatting.get_printoptions()["sci_mode"] is None


def test_formatting_does_not_import_torch():
    source = pathlib.Path(formatting.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "torch" not in imported


def test_rejects_complex():
    with pytest.raises(TypeError):
        format_tensor(np.zeros(2, np.complex64))


_float_magnitudes = st.sampled_from([1e-12, 1e-5, 1e-3, 1.0, 1e2, 1e5, 1e9])


@st.composite
def float_arrays(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    kind = draw(st.sampled_from(["any", "scaled", "integral"]))
    if kind == "any":
        elements = hnp.from_dtype(np.dtype(dtype), allow_nan=True, allow_infinity=True)
        return draw(hnp.arrays(dtype, shape, elements=elements))
    seed = draw(st.integers(0, 2**32 - 1))
    values = np.random.default_rng(seed).normal(size=shape) * draw(_float_magnitudes)
    if kind == "integral":
        values = np.round(values)
    return np.asarray(values, dtype=dtype)


@settings(max_examples=150, deadline=None)
@given(float_arrays())
def test_hypothesis_floats(a):
    assert_prints_like_torch(a)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        st.sampled_from([np.dtype(np.int64), np.dtype(np.bool_)]),
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
    )
)
def test_hypothesis_int_and_bool(a):
    assert_prints_like_torch(a)
