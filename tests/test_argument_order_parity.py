"""torch's argument parser checks a call's parameters in their order, and only then the
keywords it does not know: `fg.zeros(t, keepdim=1)` is "argument 'size' (position 1) must be
tuple of ints, not Tensor", not Python's "unexpected keyword argument". Calls with several
things wrong, found by a random-argument fuzzer against torch 2.13: each raises torch's class
and text (after naming the library alike), or returns what torch's does."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for argument texts")

def _grad_of_an_iterator(L):
    x = L.ones(2, requires_grad=True)
    return [g.tolist() for g in L.autograd.grad(iter([(x * 2).sum()]), x)]


CALLS = {
    # creation functions: the size, then the fill value, then unknown keywords
    "empty-keyword-only": lambda L: L.empty(end_dim=L.tensor([])),
    "zeros-tensor-size-and-keyword": lambda L: L.zeros(L.tensor([1.0]), keepdim=1),
    "zeros-extra-positional-and-keyword": lambda L: L.zeros(L.int64, (1, 3, 0), alpha=1, requires_grad=[1]),
    "ones-keyword-only": lambda L: L.ones(keepdim=np.array([1.0])),
    "full-keywords-only": lambda L: L.full(p=slice(0, 2), retain_graph=1),
    "full-none-fill-and-keywords": lambda L: L.full((), None, end_dim=1, gradient=(1, 2)),
    "full-tensor-sizes": lambda L: L.full((L.tensor([1.0]), L.tensor([[1.0]]))),
    "full-str-size": lambda L: L.full("a"),
    "full-str-element": lambda L: L.full(["a"]),
    "randn-keywords": lambda L: L.randn(L.tensor([1.0]), 0.5, gradient=1, end_dim=2),
    "rand-one-keyword": lambda L: L.rand(start_dim=L.tensor([1.0])),
    "rand-two-keywords": lambda L: L.rand(retain_graph=1, requires_grad=L.tensor([1])),
    "rand-dtype-positional": lambda L: L.rand(L.float32, [L.tensor([1.0])], None),
    "empty-memory-format": lambda L: tuple(L.empty(2, 3, memory_format=L.contiguous_format).shape),
    "empty-preserve-format": lambda L: L.empty(2, memory_format=L.preserve_format),
    "empty-bad-memory-format": lambda L: L.empty(2, memory_format=1),
    "tensor-extra-positional-and-keyword": lambda L: L.tensor(-1.5, L.ones(2), retain_graph=1),
    # tensor lists: their elements are checked before the arguments after them
    "stack-int-element-then-dim": lambda L: L.stack([1, 3, 3], L.ones(2)),
    "stack-second-element": lambda L: L.stack([L.ones(2), 3], "a"),
    "cat-int-element-str-dim": lambda L: L.cat([1, L.ones(2)], "a"),
    "stack-keywords-only": lambda L: L.stack(min=2.0, start_dim=5),
    "cat-keyword-only": lambda L: L.cat(end_dim=1),
    "stack-dtype-tensors": lambda L: L.stack(L.int64, L.tensor(2.5), alpha=1),
    "stack-none-tensors": lambda L: L.stack(None, "a", alpha=(0,)),
    "stack-three-positional": lambda L: L.stack(L.ones(2), [2, -1, 3], [L.ones(2)], dim=False),
    "cat-out": lambda L: L.cat([L.ones(2), L.ones(2)], out=L.zeros(4)).tolist(),
    "detach-tuple-and-keywords": lambda L: L.detach((slice(1, None),), gradient=1, requires_grad=()),
    "detach-two-positional": lambda L: L.detach(2.0, None, dtype=L.float32),
    "flatten-tensor-dims-and-keywords": lambda L: L.flatten(L.ones(2, 3), L.ones(1), L.ones(1), gradient=True),
    "flatten-str-input": lambda L: L.flatten("a", 5, L.int64, alpha=[-1]),
    "t-two-positional": lambda L: L.t(L.int64, 5, dtype=0),
    "t-keywords-only": lambda L: L.t(alpha=1, start_dim=L.int64),
    # unknown keywords are listed in reverse, and one with a default never matches
    "copy_-unknown-keywords": lambda L: L.ones(2).copy_(L.ones(2), a=1, b=2, c=3),
    "add_-alpha-and-unknown": lambda L: L.ones(2).add_(L.ones(2), alpha=2, bogus=1),
    "copy_-non_blocking-and-unknown": lambda L: L.ones(2).copy_(L.ones(2), non_blocking=True, bogus=1),
    "add_-out-and-alpha": lambda L: L.ones(2).add_(L.ones(2), out=1, alpha=2),
    "max-array-keywords": lambda L: L.max(L.ones(3), dtype=None, min=0),
    # norm is a Python function in torch: its binding fails first
    "norm-unknown-keyword": lambda L: L.norm(-1, keepdim=L.tensor(2.5), exponent=1),
    "norm-seven-positional": lambda L: L.norm(L.ones(2), 2, 0, True, None, None, 5),
    "Tensor.norm-unknown-keyword": lambda L: L.ones(2).norm(bogus=1, keepdim=1),
    "Tensor.norm-six-positional": lambda L: L.ones(2).norm("a", "b", "c", "d", "e"),
    "Tensor.norm-dtype-fourth": lambda L: L.ones(2).norm(2, 0, False, L.float64).tolist(),
    # methods
    "long-bad-memory-format": lambda L: L.ones(2).long(memory_format=1),
    "long-positional-and-keyword": lambda L: L.ones(2).long(L.tensor([1]), exponent=L.tensor([True])),
    "double-positional-and-keyword": lambda L: L.ones(2).double(None, (2, 3), keepdim=(-1, 0)),
    "float-contiguous-format": lambda L: str(L.ones(2).float(memory_format=L.contiguous_format).dtype).split(".")[1],
    "reshape-keyword-only": lambda L: L.ones(2).reshape(exponent=L.tensor([1])),
    "reshape-tensor-and-keyword": lambda L: L.tensor(2.5).reshape(L.ones(2, 3), keepdim=(0,)),
    "flatten-method-dtype-and-keyword": lambda L: L.ones(2, 2).flatten(L.float32, dtype=1),
    "flatten-method-three-and-keyword": lambda L: L.ones(2, 2).flatten([1], 2, 3, dtype=1),
    "flatten-method-float-keyword": lambda L: L.ones(2, 2).flatten(start_dim=1.5),
    "expand-two-positional-and-keywords": lambda L: L.ones(3).expand((slice(1, None),), L.int64, dtype=1),
    "expand-bool-and-keywords": lambda L: L.ones(3).expand(False, p=(0, 1)),
    "expand-keywords-only": lambda L: L.ones(3).expand(exponent=1.0, p=L.float32),
    "permute-two-positional-and-keyword": lambda L: L.ones(3).permute(L.int64, L.ones(3), p=1, retain_graph=None),
    # nn.functional.linear is a native function; the *_like factories; type names in texts
    "linear-missing-weight": lambda L: L.nn.functional.linear(L.tensor(2.5)),
    "linear-tuple-input-and-keyword": lambda L: L.nn.functional.linear((L.ones(1), L.ones(1)), None, inputs=1),
    "linear-bad-bias": lambda L: L.nn.functional.linear(L.ones(2, 2), L.ones(2, 2), "a"),
    "linear-keyword-bias": lambda L: L.nn.functional.linear(L.ones(2, 2), L.ones(2, 2), bias=1),
    "ones_like-extra-positional-and-keywords": lambda L: L.ones_like([L.ones(2)], -1, label_smoothing=1, dtype=L.float32),
    "zeros_like-two-positional": lambda L: L.zeros_like(L.ones(2), L.ones(2)),
    "set_grad_enabled-tensor": lambda L: L.set_grad_enabled(L.ones(1)),
    "set_grad_enabled-dtype": lambda L: L.set_grad_enabled(L.float32),
    "set_grad_enabled-parameter": lambda L: L.set_grad_enabled(L.nn.Parameter(L.ones(1))),
    "linear-dtype-input": lambda L: L.nn.functional.linear(L.float32, L.ones(2)),
    "cross_entropy-dtype-input": lambda L: L.nn.functional.cross_entropy(L.float32, L.ones(2)),
    # autograd.grad makes its outputs a tuple before it looks at the inputs
    "grad-slice-outputs-empty-inputs": lambda L: L.autograd.grad(slice(0, 2), ()),
    "grad-outputs-iterator": lambda L: _grad_of_an_iterator(L),
    # the deprecated alpha-first overload takes a 0-d tensor alpha without grad, as a Number
    "add_-tensor-alpha-first": lambda L: L.ones(2).add_(L.tensor(2.0), L.ones(2)).tolist(),
    "sub_-tensor-alpha-first": lambda L: L.ones(2).sub_(L.tensor(2.0), L.ones(2)).tolist(),
    "add_-tensor-alpha-first-mismatch": lambda L: L.ones(2, 2, dtype=L.float64).add_(L.tensor(2.5), L.ones(2, 3)),
    "add-grad-alpha-first": lambda L: L.ones(2).add(L.tensor(2.0, requires_grad=True), L.ones(2)),
    # no_grad / enable_grad: Python's texts name torch's class; any argument but None is decorated
    "no-grad-two-arguments": lambda L: L.no_grad(1, 2),
    "no-grad-keyword": lambda L: L.no_grad(lr=1),
    "enable-grad-three-arguments": lambda L: L.enable_grad(1, 2, 3),
    "no-grad-of-a-tuple": lambda L: type(L.no_grad(())).__name__,
    "no-grad-of-an-int-called": lambda L: L.no_grad(3)(1),
}


def _outcome(L, name):
    # (the deprecated alpha-first overload warns once a process, in both libraries: fusegrad's
    # state is put back, so that a later test sees its first warning)
    from fusegrad.tracer import functional
    warned = list(functional._WARNED_ALPHA_FIRST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = ("ok", CALLS[name](L))
        except Exception as exc:  # noqa: BLE001 - the class and text are compared
            result = (type(exc).__name__, str(exc).replace("torch.", "fg.").replace("fusegrad", "torch"))
        finally:
            functional._WARNED_ALPHA_FIRST[:] = warned
    return result


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_calls_are_refused_in_torchs_order(name):
    want = _outcome(torch, name)
    got = _outcome(fg, name)
    assert got == want
