"""F.layer_norm / nn.LayerNorm against torch: values and gradients of input, weight and bias
(eager and compiled), a second derivative, next_functions, errors and the module's
parameters and repr; the op's kernels against the reference executor."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import float32
from test_codegen_support import build, check, random_args

torch = pytest.importorskip("torch", reason="torch is the oracle")

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((3, 5, 6)) * 2 + 1).astype(np.float32)
W, B = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
W2 = RNG.standard_normal((5, 6)).astype(np.float32)
RAMP = np.linspace(-1, 1, X.size, dtype=np.float32).reshape(X.shape)


def _run(lib, shape, weight, bias, compiled=False):
    x = lib.tensor(X, requires_grad=True)
    w = None if weight is None else lib.tensor(weight, requires_grad=True)
    b = None if bias is None else lib.tensor(bias, requires_grad=True)
    fn = (lambda x: lib.nn.functional.layer_norm(x, shape, w, b))
    y = (fg.compile(fn) if compiled else fn)(x)
    (y * lib.tensor(RAMP)).sum().backward()
    values = [y.detach().numpy(), x.grad.numpy()] + [t.grad.numpy() for t in (w, b) if t is not None]
    names = [None if n is None else type(n).__name__ for n, _ in y.grad_fn.next_functions]
    return values, type(y.grad_fn).__name__, names


CASES = {"weight and bias": ((6,), W, B), "no affine": ((6,), None, None), "two dims, weight": ((5, 6), W2, None),
         "weight only": ((6,), W, None), "all dims": ((3, 5, 6), None, None)}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name, compiled):
    (ours, our_node, our_edges), (theirs, their_node, their_edges) = (_run(fg, *CASES[name], compiled=compiled),
                                                                     _run(torch, *CASES[name]))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=2e-5)
    if not compiled:
        assert (our_node, our_edges) == (their_node, their_edges)


def test_second_derivative_matches_torch():
    def run(lib):
        x, w = lib.tensor(X, requires_grad=True), lib.tensor(W, requires_grad=True)
        y = lib.nn.functional.layer_norm(x, (6,), w)
        (gx,) = lib.autograd.grad((y * y * y).sum(), x, create_graph=True)
        (gx * lib.tensor(RAMP)).sum().backward()
        return gx.detach().numpy(), x.grad.numpy(), w.grad.numpy()
    for o, t in zip(run(fg), run(torch)):
        np.testing.assert_allclose(o, t, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.nn.functional.layer_norm(x, (5,)),
    lambda lib, x: lib.nn.functional.layer_norm(x, 4),
    lambda lib, x: lib.nn.functional.layer_norm(x, (6,), lib.ones(5)),
    lambda lib, x: lib.nn.functional.layer_norm(x, (6,), None, lib.ones(2, 6)),
    lambda lib, x: lib.nn.functional.layer_norm(x.long(), (6,)),
    lambda lib, x: lib.nn.functional.layer_norm(x, (2, 3, 5, 6)),
], ids=["shape", "int shape", "weight shape", "bias shape", "long", "too many dims"])
def test_errors_match_torch(call):
    def error(lib):
        with pytest.raises(Exception) as info:
            call(lib, lib.tensor(X))
        return type(info.value).__name__, str(info.value)
    assert error(fg) == error(torch)


@pytest.mark.parametrize("args", [((4,), {}), (((3, 4),), {"eps": 1e-6, "elementwise_affine": False}),
                                  ((4,), {"bias": False}), ([4], {})], ids=str)
def test_module_matches_torch(args):
    positional, keywords = args
    ours, theirs = fg.nn.LayerNorm(*positional, **keywords), torch.nn.LayerNorm(*positional, **keywords)
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    assert ours.normalized_shape == theirs.normalized_shape


def test_kernels_match_the_reference():
    def body(e, x, w, b):
        return [e.op("layer_norm", x, w, b, ndim=1, eps=1e-5), e.op("layer_norm", x, w, b, ndim=1, eps=0.5)]
    p = build(body, ((7, 9), float32), ((9,), float32), ((9,), float32), grad=True)
    check(p, random_args(p, np.random.default_rng(4)), rtol=1e-4)
