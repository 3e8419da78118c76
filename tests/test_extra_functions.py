"""torch's aliases and further pointwise functions (ir/ops/extra_math.py, tracer/extra_functions.py):
values, dtypes and node names against torch (float32/float64, integer and bool operands, Python
numbers, broadcasting, 0-d and empty tensors), gradients against torch (second derivatives too)
and central finite differences in float64, compiled against eager, in-place forms, as_tensor's
memory sharing, and bad calls with torch's exception class and text."""
import numpy as np
import pytest

import fusegrad as fg
from gradcheck import check_grads

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def _text(exc) -> str:
    # (fusegrad's no-argument methods say TensorBase.f(), as elsewhere in fusegrad; torch 2.13 Tensor.f())
    return str(exc).replace("torch.", "fg.").replace("TensorBase.", "Tensor.")


def _outcome(lib, expr):
    """`expr` over L = lib: (shape, dtype, values, node name, requires_grad), or (exception class, text)."""
    try:
        r = eval(expr, {"L": lib, "NAN": NAN, "INF": INF, "np": np})
    except Exception as exc:     # noqa: BLE001 (the exception is the outcome)
        return type(exc).__name__, _text(exc)
    if isinstance(r, tuple):
        return r
    name = r.grad_fn.name() if r.grad_fn is not None else None
    return (tuple(r.shape), str(r.dtype).split(".")[-1], np.array(r.detach().tolist(), dtype=object),
            name, r.requires_grad)


def _same_outcome(expr, rtol=1e-6):
    ours, theirs = _outcome(fg, expr), _outcome(torch, expr)
    if len(theirs) == 2 or len(ours) == 2:
        assert ours == theirs, expr
        return
    assert ours[0] == theirs[0] and ours[1] == theirs[1] and ours[3:] == theirs[3:], (expr, ours, theirs)
    o, t = ours[2].astype(np.float64 if theirs[1] != "bool" else bool), theirs[2].astype(
        np.float64 if theirs[1] != "bool" else bool)
    if theirs[1] == "bool":
        assert np.array_equal(o, t), (expr, o, t)
    else:
        np.testing.assert_allclose(o, t, rtol=rtol, atol=1e-300, equal_nan=True, err_msg=expr)
        finite = ~np.isnan(t)
        assert np.array_equal(np.signbit(o[finite]), np.signbit(t[finite])), (expr, o, t)


X = "L.tensor([[-2.5, -0.0, 0.0, 0.3], [1.5, INF, -INF, NAN]], requires_grad=True)"
X64 = "L.tensor([[-2.5, -0.0, 0.0, 0.3], [1.5, INF, -INF, NAN]], dtype=L.float64, requires_grad=True)"
Y = "L.tensor([1.5, -2.0, 0.0, -0.0], requires_grad=True)"
U = "L.tensor([[0.2, 0.5, 0.9], [0.0, 1.0, 1.2]], requires_grad=True)"
I = "L.tensor([[3, -2, 0], [7, 1, -5]])"
B = "L.tensor([True, False, True])"

VALUE_CALLS = [
    # lerp
    f"L.lerp({X}, {Y}, 0.3)", f"L.lerp({X}, {Y}, 0.7)", f"L.lerp({X64}, L.ones(4, dtype=L.float64), -1.5)",
    f"L.lerp({Y}, L.zeros(3, 1), L.tensor([0.2, 0.5, 0.8, 2.0]))", f"{Y}.lerp(L.ones(()), L.tensor(0.6))",
    "L.lerp(L.ones(()), L.zeros(()), 0.25)", "L.lerp(L.ones(0, 2), L.ones(2), 0.5)",
    "L.lerp(L.ones(2), L.ones(2), L.tensor(1))", "L.lerp(L.ones(2), L.ones(2), True)",
    # addcmul / addcdiv
    f"L.addcmul({Y}, {Y}, L.tensor(2.0), value=-0.5)", f"L.addcmul({I}, {I}, {I}, value=2)",
    f"L.addcmul({I}, {I}, {I}, value=2.5)", f"L.addcmul(L.ones(3), {I}, {I})",
    f"L.addcmul({I}, {I}, L.ones(3, dtype=L.float64))", "L.addcmul(L.ones(()), L.ones(2, 1), L.ones(3))",
    f"L.addcdiv({Y}, {Y}, L.tensor([2.0, 4.0, 0.5, -1.0]), value=3)", f"L.addcdiv({I}, L.ones(3), L.ones(3) * 2)",
    f"{Y}.addcdiv({Y}, {Y})", "L.addcdiv(L.ones(0), L.ones(0), L.ones(0))",
    "L.addcmul(L.ones(2), L.ones(2), L.ones(2), value=L.tensor(3.))",
    # hypot, logaddexp, logaddexp2
    f"L.hypot({X}, {Y})", f"L.hypot({Y}, L.ones(4, dtype=L.float64))", "L.hypot(L.tensor(3.), L.tensor(4.))",
    f"L.logaddexp({X}, {Y})", f"L.logaddexp2({X}, {Y})", f"L.logaddexp({X64}, {X64})",
    f"{Y}.logaddexp(L.tensor([100., -100., 1e-8, 0.]))", "L.logaddexp2(L.ones(0), L.ones(0))",
    # xlogy
    f"L.xlogy({X}, {Y})", f"L.xlogy({I}, {I})", f"L.xlogy(2, {Y})", f"L.xlogy({Y}, 3)", f"L.xlogy({B}, {B})",
    "L.xlogy(L.tensor([0., 0., 1.]), L.tensor([NAN, 0., 0.]))", f"L.xlogy({Y}, L.tensor(2., dtype=L.float64))",
    # logit
    f"L.logit({U})", f"L.logit({U}, eps=0.1)", f"L.logit({U}, 0.3)", f"{U}.logit(-1.0)", f"L.logit({I})",
    f"L.logit({B})", "L.logit(L.tensor(0.25, dtype=L.float64))",
    # unary float results
    *[f"L.{fn}({arg})" for fn in ("erfc", "deg2rad", "rad2deg", "asinh", "atanh", "arcsinh", "arctanh")
      for arg in (X, X64, I, B)],
    *[f"L.{fn}({arg})" for fn in ("acosh", "arccosh") for arg in ("L.tensor([1., 1.5, 10., 0.5, INF])", I)],
    f"{X}.erfc()", f"{X}.asinh()", "L.erfc(L.tensor([-30., 5., 10., 27.]))", "L.erfc(L.ones(0, 3))",
    # sgn, signbit, isposinf, isneginf
    *[f"L.{fn}({arg})" for fn in ("sgn", "signbit", "isposinf", "isneginf") for arg in (X, X64, I, B)],
    f"{X}.sgn()", f"{X}.signbit()", f"{X}.isposinf()", "L.signbit(L.tensor(-0.))",
    # nan_to_num
    f"L.nan_to_num({X})", f"L.nan_to_num({X64})", f"L.nan_to_num({X}, 1.0, 2.0, 3.0)",
    f"L.nan_to_num({X}, nan=1e300)", f"L.nan_to_num({X}, posinf=-1.5)", f"L.nan_to_num({I}, nan=1.5)",
    f"L.nan_to_num({B})", f"{X}.nan_to_num(neginf=0)",
    # float_power
    f"L.float_power({X}, 2)", f"L.float_power({Y}, {Y})", f"L.float_power({I}, 2)", f"L.float_power(2, {Y})",
    f"L.float_power({B}, {B})", f"{Y}.float_power(0.5)", f"L.float_power({Y}, -1)",
    # copysign
    f"L.copysign({X}, -1)", f"L.copysign({X}, {Y})", f"L.copysign({I}, {I})", f"L.copysign({B}, {B})",
    f"L.copysign({I}, -1)", f"L.copysign({Y}, True)", f"{X}.copysign(L.tensor(-0.))",
    # heaviside
    f"L.heaviside({X}, {Y})", f"L.heaviside({I}, L.tensor(7))", f"L.heaviside({B}, {B})",
    "L.heaviside(L.tensor([-1., 0., 2.]), L.tensor(0.5))",
    # fmod
    f"L.fmod({X}, 1.5)", f"L.fmod({X}, {Y})", f"L.fmod({I}, 3)", f"L.fmod({I}, -3)", f"L.fmod({I}, 1.5)",
    f"L.fmod({I}, L.tensor([2, 5, -4]))", f"{Y}.fmod(L.tensor(-0.75, dtype=L.float64))",
    # repeat, tile, type_as
    f"{Y}.repeat(2, 2)", f"{Y}.repeat(2)", f"{Y}.repeat([2, 1, 3])", f"{Y}.repeat(0)", f"{Y}.repeat(1)",
    f"{X}.repeat(1, 2)", "L.tensor(5.).repeat(3)", "L.tensor(5.).repeat(())", f"{I}.repeat(2, 1, 1)",
    f"{B}.repeat(2)", f"L.tile({Y}, (2,))", f"L.tile({X}, (2,))", f"L.tile({Y}, (2, 2))", f"{X}.tile(3)",
    f"L.tile({Y}, ())", f"{Y}.type_as({I})", f"{I}.type_as({Y})", f"{Y}.type_as({Y})", f"{Y}.type_as({B})",
    # aliases
    f"L.absolute({X})", f"{X}.absolute()", f"L.absolute({I})", f"L.negative({X})", f"L.negative({I})",
    f"L.multiply({X}, 2)", f"L.multiply({I}, {Y}[:3])", f"L.divide({X}, {Y})", f"L.divide({I}, 2)",
    f"L.divide({I}, 2, rounding_mode='floor')", f"{X}.divide(-2, rounding_mode='trunc')",
    f"L.subtract({X}, {Y}, alpha=2)", f"L.subtract({X}, 2, alpha=3)", f"L.true_divide({I}, 2)",
    f"L.greater({X}, 0)", f"L.greater_equal({X}, {Y})", f"L.less({I}, 1)", f"L.less_equal({X}, {Y})",
    f"L.not_equal({I}, 0)", f"{X}.greater(0.3)", f"{I}.less_equal({I})", f"{X}.not_equal({X})",
    f"L.concat([{Y}, {Y}])", f"L.concatenate([{X}, {X}], 1)", f"L.concat([{Y}, {Y}], dim=0)",
    f"L.concat([{Y}, {Y}], axis=0)",
]


@pytest.mark.parametrize("expr", VALUE_CALLS)
def test_values_dtypes_and_nodes_as_torch(expr):
    _same_outcome(expr)


BAD_CALLS = [
    "L.lerp(L.ones(2), 2.0, 0.5)", "L.lerp(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64), 0.5)",
    "L.lerp(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64), L.tensor(0))",
    "L.lerp(L.ones(2), L.ones(2, dtype=L.float64), 0.5)", "L.lerp(L.ones(2), L.ones(2), L.tensor([1, 2]))",
    "L.lerp(L.ones(2), L.ones(2))", "L.lerp(L.ones(2), L.ones(3), 0.5)", "L.ones(2).lerp('a', 0.5)",
    "L.addcmul(L.ones(2), L.ones(2), 2.0)", "L.addcmul(L.ones(2), L.ones(2), L.ones(2), 2)",
    "L.addcmul(L.ones(2), L.ones(2), L.ones(2), value='a')", "L.addcmul(L.tensor([True]), L.tensor([True]), L.tensor([True]))",
    "L.addcdiv(L.ones(2), L.tensor([1, 2]), L.tensor([1, 2]))", "L.addcdiv(L.tensor([True]), L.tensor([True]), L.tensor([True]))",
    "L.ones(2).addcmul(L.ones(2))", "L.hypot(L.ones(2), 2.0)", "L.hypot(L.tensor([1]), L.tensor([1]))",
    "L.hypot(L.ones(2))", "L.logaddexp(L.tensor([1]), L.tensor([1]))", "L.logaddexp2(L.tensor([True]), L.tensor([True]))",
    "L.ones(2).logaddexp(1.0)", "L.xlogy(2, 3)", "L.xlogy(L.ones(2), 'a')", "L.ones(2).xlogy(None)",
    "L.logit(L.ones(2), eps='a')", "L.logit(L.ones(2), 0.1, 0.2)", "L.logit('a')", "L.erfc()", "L.erfc(1.0)",
    "L.ones(2).erfc(1)", "L.ones(2).sgn(1)", "L.ones(2).asinh_(dim=1)", "L.sgn([1.])",
    "L.nan_to_num(L.ones(2), nan='a')", "L.nan_to_num(L.ones(2), 1, 2, 3, 4)", "L.ones(2).nan_to_num(posinf='a')",
    "L.float_power(L.ones(2), 'a')", "L.float_power(2, 3)", "L.ones(2).float_power_(2)",
    "L.copysign(2, L.ones(2))", "L.copysign(L.ones(2), 'a')", "L.heaviside(L.ones(2), 0.5)",
    "L.heaviside(L.ones(2), L.ones(2, dtype=L.float64))", "L.fmod(2, L.ones(2))", "L.fmod(L.ones(2), 'a')",
    "L.fmod(L.tensor([1, 2]), 0)", "L.fmod(L.tensor([1, 2]), L.tensor([0, 1]))",
    "L.fmod(L.tensor([True]), L.tensor([True]))", "L.ones(2, 3).repeat(2)", "L.ones(2).repeat(-1)",
    "L.ones(2).repeat(2.5)", "L.ones(2).repeat('a')", "L.ones(2).repeat((2,), 3)", "L.ones(2).repeat()",
    "L.tile(L.ones(2), 2)", "L.tile(L.ones(2), 'a')", "L.ones(2).tile()", "L.ones(2).type_as(3)",
    "L.ones(2).type_as()", "L.absolute(L.tensor([True]))", "L.tensor([True]).absolute()",
    "L.negative(L.tensor([True]))", "L.not_equal(1, L.ones(2))", "L.divide(L.ones(2), 2, rounding_mode='x')",
    "L.tensor([5]).divide_(2)", "L.tensor([True]).square_()", "L.ones(2).clamp_min_('a')",
    "L.ones(2, dtype=L.int64).clamp_min_(1.5)", "L.ones(2).addcmul_(L.ones(3, 1), L.ones(2))",
    "L.ones(2, dtype=L.int64).addcdiv_(L.ones(2), L.ones(2))", "L.tensor([1]).atanh_()",
    "L.ones(2, requires_grad=True).lerp_(L.ones(2), 0.5)", "L.ones(2, requires_grad=True).clip_(0, 1)",
    "L.ones(2).multiply_('a')", "L.ones(2).square_(1)",
]


@pytest.mark.parametrize("expr", BAD_CALLS)
def test_bad_calls_raise_torchs_errors(expr):
    theirs = _outcome(torch, expr)
    assert len(theirs) == 2, f"torch accepts {expr}"
    ours = _outcome(fg, expr)
    assert ours[0] == theirs[0], (expr, ours, theirs)
    assert ours[1].split(" - got")[0] == theirs[1].split(" - got")[0], (expr, ours, theirs)


# ------------------------------------------------------------------ gradients against torch
GRAD_CASES = {
    "lerp_scalar": (lambda L, a, b: L.lerp(a, b, 0.3) + L.lerp(a, b, 0.8), "ab"),
    "lerp_tensor": (lambda L, a, b, w: L.lerp(a, b, w), "abw"),
    "addcmul": (lambda L, a, b, c: L.addcmul(a, b, c, value=-1.5), "abc"),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c, value=0.5), "abp"),
    "hypot": (lambda L, a, b: L.hypot(a, b), "ab"),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b), "ab"),
    "logaddexp2": (lambda L, a, b: L.logaddexp2(a, b), "ab"),
    "xlogy": (lambda L, a, p: L.xlogy(a, p), "ap"),
    "logit": (lambda L, u: L.logit(u), "u"),
    "logit_eps": (lambda L, u: L.logit(u, eps=0.25), "u"),
    "erfc": (lambda L, a: L.erfc(a), "a"),
    "deg2rad": (lambda L, a: L.deg2rad(a) * L.rad2deg(a), "a"),
    "sgn": (lambda L, a: L.sgn(a) * a, "a"),
    "nan_to_num": (lambda L, a: L.nan_to_num(a.log(), posinf=3.0) * a, "a"),
    "float_power": (lambda L, p, a: L.float_power(p, a) + L.float_power(p, 3), "pa"),
    "copysign": (lambda L, a, b: L.copysign(a, b) * 1.5 + L.copysign(a, -1.0), "ab"),
    "asinh": (lambda L, a: L.asinh(a), "a"),
    "acosh": (lambda L, g: L.acosh(g), "g"),
    "atanh": (lambda L, u: L.atanh(u), "u"),
    "fmod": (lambda L, a, b: L.fmod(a, b) + L.fmod(a, 0.7), "ab"),
    "repeat": (lambda L, c: c.repeat(2, 3, 2) * L.arange(24.).reshape(2, 3, 4), "c"),
    "tile": (lambda L, a: L.tile(a, (2, 1, 2)) * L.arange(24.).reshape(2, 3, 4), "a"),
}


def _inputs(kinds: str, dtype):
    rng = np.random.default_rng(len(kinds))
    make = {
        "a": lambda: rng.standard_normal((3, 2)), "b": lambda: rng.standard_normal((3, 2)),
        "c": lambda: rng.standard_normal(2), "w": lambda: rng.uniform(-0.5, 1.5, (3, 2)),
        "p": lambda: rng.uniform(0.5, 2.0, (3, 2)), "u": lambda: rng.uniform(0.05, 0.95, (3, 2)),
        "g": lambda: rng.uniform(1.2, 3.0, (3, 2)),
    }
    return [make[k]().astype(dtype) for k in kinds]


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_and_second_derivatives_as_torch(case, dtype):
    fn, kinds = GRAD_CASES[case]
    arrays = _inputs(kinds, dtype)
    found = []
    for lib in (torch, fg):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        seed = lib.tensor(np.linspace(-1.0, 2.0, out.numel()).reshape(tuple(out.shape)).astype(str(out.dtype)
                                                                                                .split(".")[-1]))
        grads = lib.autograd.grad(out, xs, seed, create_graph=True)
        total = sum((g * g).sum() for g in grads if g.requires_grad)
        second = lib.autograd.grad(total, xs, allow_unused=True) if torch.is_tensor(total) or \
            isinstance(total, fg.Tensor) else [None] * len(xs)
        found.append((out.grad_fn.name(), [x.detach().numpy(force=True) for x in (out, *grads)],
                      [None if s is None else s.numpy(force=True) for s in second]))
    assert found[0][0] == found[1][0]
    rtol = 2e-5 if dtype == "float32" else 1e-10
    for theirs, ours in zip(found[0][1], found[1][1]):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-6 if dtype == "float32" else 1e-12)
    for theirs, ours in zip(found[0][2], found[1][2]):
        if theirs is None or ours is None:     # (torch's efficient zeros: no path)
            assert not np.any(theirs if ours is None else ours)
            continue
        np.testing.assert_allclose(ours, theirs, rtol=rtol * 10, atol=1e-5 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("case", ["lerp_tensor", "addcmul", "addcdiv", "hypot", "logaddexp", "logaddexp2", "xlogy",
                                  "logit", "logit_eps", "erfc", "deg2rad", "asinh", "acosh", "atanh", "copysign",
                                  "repeat", "tile", "float_power"])
def test_gradients_by_finite_differences(case):
    fn, kinds = GRAD_CASES[case]
    check_grads(lambda *xs: fn(fg, *xs), *_inputs(kinds, "float64"), order=2)


def test_special_value_gradients_as_torch():
    """Gradients where the formulas meet their special values: lerp at weight 0.5, xlogy at 0,
    logit outside [0, 1] and its eps, nan_to_num's infinities, copysign of zeros, heaviside's none."""
    data = np.array([-0.5, 0.0, 0.5, 1.0, 1.5, NAN, INF, -INF], np.float32)
    found = []
    for lib in (torch, fg):
        x = lib.tensor(data, requires_grad=True)
        parts = [lib.lerp(x, x * 2, lib.tensor(np.full(8, 0.5, np.float32))), lib.xlogy(x, x.abs()),
                 lib.logit(x), lib.logit(x, eps=0.2), lib.nan_to_num(x), lib.copysign(x, -x),
                 lib.hypot(x, lib.zeros(8))]
        grads = [lib.autograd.grad(p.sum(), x, retain_graph=True)[0].numpy() for p in parts]
        found.append(grads)
    for ours, theirs in zip(found[1], found[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, equal_nan=True)
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        fg.heaviside(fg.ones(2, requires_grad=True), fg.ones(2)).sum().backward()


# ------------------------------------------------------------------ in-place forms
IN_PLACE = [
    ("lerp_", "(L.ones(3) * 2, 0.3)"), ("lerp_", "(L.zeros(3), L.tensor([0.2, 0.6, 1.0]))"),
    ("addcmul_", "(L.ones(3) * 2, L.arange(3.), value=2)"), ("addcdiv_", "(L.ones(3) * 2, L.arange(1., 4.))"),
    ("hypot_", "(L.ones(3),)"), ("xlogy_", "(L.arange(1., 4.),)"), ("logit_", "(0.1,)"), ("erfc_", "()"),
    ("deg2rad_", "()"), ("rad2deg_", "()"), ("sgn_", "()"), ("nan_to_num_", "(1.0,)"), ("copysign_", "(-1,)"),
    ("asinh_", "()"), ("arctanh_", "()"), ("heaviside_", "(L.ones(3),)"), ("fmod_", "(0.25,)"),
    ("absolute_", "()"), ("negative_", "()"), ("multiply_", "(3,)"), ("divide_", "(2, rounding_mode='floor')"),
    ("subtract_", "(1, alpha=2)"), ("true_divide_", "(4,)"), ("clip_", "(0.3, 0.5)"), ("square_", "()"),
    ("clamp_min_", "(0.45,)"), ("clamp_max_", "(L.tensor([0.1, 0.5, 1.0]),)"),
]


@pytest.mark.parametrize("method,args", IN_PLACE)
def test_in_place_forms_as_torch(method, args):
    data = np.array([0.1, 0.4, 0.8], np.float32)
    found = []
    for lib in (torch, fg):
        leaf = lib.tensor(data, requires_grad=True)
        y = leaf * 1
        version = y._version
        out = eval(f"y.{method}{args}" if args != "()" else f"y.{method}()", {"L": lib, "y": y})
        assert out is y
        name = y.grad_fn.name()
        differentiable = name != "torch::autograd::NotImplemented"
        if differentiable and method in ("asinh_", "arctanh_"):
            # torch records AsinhBackward1 / AtanhBackward1, whose backward raises (fusegrad
            # differentiates them as the out-of-place forms)
            differentiable = lib is fg
        if differentiable:
            y.sum().backward()
        found.append((y.detach().numpy(), name, y._version > version,
                      leaf.grad.numpy(force=True) if differentiable and leaf.grad is not None else None))
    np.testing.assert_allclose(found[1][0], found[0][0], rtol=1e-6)
    assert found[1][1:3] == found[0][1:3]
    if found[0][3] is not None:
        np.testing.assert_allclose(found[1][3], found[0][3], rtol=1e-5, atol=1e-7)


def test_integer_in_place_forms_as_torch():
    for code in ["t = L.tensor([3, -2, 5]); t.square_(); t.clamp_min_(0); t.fmod_(2); t.clamp_max_(L.tensor(0))",
                 "t = L.tensor([3, -2, 5]); t.nan_to_num_(); t.sgn_(); t.absolute_(); t.multiply_(4)",
                 "t = L.tensor([True, False]); t.sgn_()"]:
        results = []
        for lib in (torch, fg):
            env = {"L": lib}
            exec(code, env)
            results.append((env["t"].tolist(), env["t"]._version))
        assert results[0] == results[1], code


# ------------------------------------------------------------------ compiled against eager
def _every_op(x, y, u):
    w = u * 0.9
    return (fg.lerp(x, y, 0.3) + fg.lerp(x, y, w) + fg.addcmul(x, y, u, value=0.5) + fg.addcdiv(x, y, u + 1)
            + fg.hypot(x, y) + fg.logaddexp(x, y) + fg.logaddexp2(x, y) + fg.xlogy(u, u + 0.5)
            + fg.logit(u) + fg.logit(u, eps=0.3) + fg.erfc(x) + fg.deg2rad(x) + fg.rad2deg(y) * 0.01 + fg.sgn(x) * x
            + fg.nan_to_num(fg.log(x), neginf=-5.0) + fg.copysign(x, y) + fg.asinh(x) + fg.acosh(u + 1.5)
            + fg.atanh(u * 0.5) + fg.fmod(x, y) + fg.fmod(x, 0.6) + fg.float_power(u, 2).float()
            + x.repeat(1, 1) + fg.tile(y, (1, 1)) + fg.absolute(x) + fg.negative(y) + fg.divide(x, 2)
            + fg.heaviside(x, y).detach() + fg.signbit(x) + fg.isposinf(x / 0) + fg.isneginf(y / 0))


def test_compiled_matches_eager_forward_and_backward():
    rng = np.random.default_rng(11)
    x, y = (fg.tensor(rng.standard_normal((3, 4)).astype(np.float32)) for _ in range(2))
    u = fg.tensor(rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32))

    def f(x, y, u):
        return (_every_op(x, y, u) * fg.arange(12.).reshape(3, 4)).sum()

    value, grads = fg.compile(fg.value_and_grad(f, argnums=(0, 1, 2)))(x, y, u)
    want_value, want_grads = fg.value_and_grad(f, argnums=(0, 1, 2))(x, y, u)
    np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    # the forward values elementwise, special values included
    special = fg.tensor([[-2.5, -0.0, 0.0, 0.3], [1.5, INF, -INF, NAN], [1e-3, -7.0, 30.0, 2.0]])
    got, want = fg.compile(_every_op)(special, x, u), _every_op(special, x, u)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)


def test_compiled_integer_fmod_raises_torchs_error():
    f = fg.compile(lambda a, b: fg.fmod(a, b) * 2)
    np.testing.assert_array_equal(f(fg.tensor([7, -7, 5]), fg.tensor([3, 3, -2])).numpy(), [2, -2, 2])
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        f(fg.tensor([7, -7, 5]), fg.tensor([3, 0, -2]))


# ------------------------------------------------------------------ as_tensor
def test_as_tensor_shares_memory_as_torch():
    x = fg.ones(2, requires_grad=True)
    assert fg.as_tensor(x) is x and fg.as_tensor(x, dtype=fg.float32) is x
    y = fg.as_tensor(x, dtype=fg.float64)
    assert y.dtype == fg.float64 and y.grad_fn.name() == "ToCopyBackward0"
    for dtype in (np.float32, np.float64, np.int64, np.bool_):
        array = np.zeros(3, dtype)
        t = fg.as_tensor(array)
        array[1] = 1
        assert t.tolist()[1] == 1 and t.dtype == fg.from_numpy(array).dtype
    array = np.zeros(3)
    t = fg.as_tensor(array, dtype=fg.float32)
    array[1] = 1
    assert t.dtype == fg.float32 and t.tolist() == [0.0, 0.0, 0.0]
    assert fg.as_tensor([1, 2]).dtype == fg.int64 and fg.as_tensor([1.5], dtype=fg.float64).tolist() == [1.5]
    assert fg.as_tensor(3.0).dim() == 0 and not fg.as_tensor([1.0]).requires_grad
    with pytest.raises(TypeError):
        fg.as_tensor([1.0], dtype="a")


def test_repeat_of_views_and_its_saved_nothing():
    """repeat reads a strided operand; its backward saves nothing (an in-place change after it is fine)."""
    for lib in (torch, fg):
        leaf = lib.arange(6.).reshape(2, 3).requires_grad_()
        y = leaf * 1
        r = y.t().repeat(2, 1)
        y.add_(1)
        (r * lib.arange(12.).reshape(6, 2)).sum().backward()
        if lib is torch:
            want = (r.tolist(), leaf.grad.tolist())
    assert (r.tolist(), leaf.grad.tolist()) == want


# ------------------------------------------------------------------ signs of zeros and NaNs
_SIGNED = [np.nan, 1.0, -0.0, 0.0, -3.0, np.inf]


def _same_bits_as_torch(got, want):
    got, want = np.asarray(got), want.detach().numpy()
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    assert np.signbit(got).tolist() == np.signbit(want).tolist(), (got, want)


@pytest.mark.parametrize("low", [0.0, -0.0])
def test_hardtanh_gradient_below_a_signed_zero_bound_as_torch(low):
    """hardtanh's gradient is 0 where x is outside (low, 1): +0.0, whichever sign the bound's zero
    has (the decomposed gradient's const 0 was merged with the bound's const -0.0)."""
    xs = [-1.0, 0.0, 2.0, -0.0, 0.5, 5.0]
    tx = torch.tensor(xs, requires_grad=True)
    torch.nn.functional.hardtanh(tx, low, 1.0).sum().backward()
    for run in ("eager", "compiled"):
        x = fg.tensor(xs, requires_grad=True)

        def step(t):
            y = fg.nn.functional.hardtanh(t, low, 1.0)
            y.sum().backward()
            return y
        (fg.compile(step) if run == "compiled" else step)(x)
        _same_bits_as_torch(x.grad.numpy(), tx.grad)


def test_addmm_of_one_column_keeps_the_products_zero_sign_as_torch():
    """addmm(b, x[2, 1], y[1, 2], beta=0): each element is one product, whose -0.0 torch keeps."""
    b, m1, m2 = np.zeros((2, 2), np.float32), np.array([[-1.0], [0.0]], np.float32), np.array([[1.0, -2.0]], np.float32)
    want = torch.addmm(torch.tensor(b), torch.tensor(m1), torch.tensor(m2), beta=0)
    _same_bits_as_torch(fg.addmm(fg.tensor(b), fg.tensor(m1), fg.tensor(m2), beta=0).numpy(), want)


def test_pow_of_a_bool_exponent_differentiates_by_torchs_general_formula():
    """x ** False is 1, but torch's Scalar(false) is unequal to 0.0, so its PowBackward0 takes
    grad * (0 * x ** -1): NaN at 0, where x ** 0 (int or float) has zero gradient. Both in one
    process, eager and compiled, in both orders (the signatures must not share a cache entry)."""
    xs = [0.0, 2.0, -3.0, np.inf]
    for exponents in ((False, 0.0, 0, True), (0.0, False, True, 0)):
        for exponent in exponents:
            tx = torch.tensor(xs, requires_grad=True)
            want = tx.pow(exponent)
            want.sum().backward()
            for run in ("eager", "compiled"):
                x = fg.tensor(xs, requires_grad=True)

                def step(t):
                    y = t.pow(exponent)
                    y.sum().backward()
                    return y
                value = (fg.compile(step) if run == "compiled" else step)(x)
                np.testing.assert_array_equal(value.detach().numpy(), want.detach().numpy())
                np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy(), err_msg=f"{run} {exponent!r}")
