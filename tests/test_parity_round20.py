"""Round 20 of torch parity: what this session's probes found (each test names the behaviour
and checks it against torch 2.13, eager and inside fg.compile)."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)

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
