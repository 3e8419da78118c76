"""Round 24 of torch parity: fg.tensor of nested data with no elements, and the eager fast
paths of `t.norm()` and `fg.randn(n)` / `fg.rand(n)` (the same results as the parsing path)."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import assert_same_outcome, exact_outcome, lib_outcome, outcome, seeded_both  # noqa: E402  (after the skip)


def _printed(lib, src):
    try:
        return repr(eval(src, {"L": lib})).replace("torch.", "L.").replace("fg.", "L.")
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("src", [
    "L.tensor([[], [1]])", "L.tensor([[], [1.5, True]]).dtype", "L.tensor([[], 5])",
    "L.tensor([[], [[1]]]).shape", "L.tensor([[], [1]], dtype=L.bool)", "L.tensor([[], [True]]).dtype",
    "L.tensor([[], ['a']], dtype=L.float32)", "L.tensor([[], [1.5]], dtype=L.int64)",
    "L.tensor([[[]], [[1, 2]]])",
    # the dtype inference still walks every element; a first element with elements still decides
    "L.tensor([[], ['a']])", "L.tensor([[], [None]])", "L.tensor([[1, 2], []])", "L.tensor([[1], [2, 3]])",
])
def test_nested_data_with_no_elements_is_stored_as_torchs(src):
    """torch stores nothing into a tensor with no elements, so nothing past the first element's
    sizes is checked: `[[], [1]]` is a (2, 0) float tensor."""
    assert _printed(fg, src) == _printed(torch, src)


@pytest.mark.parametrize("call", ["t.norm()", "t.t().norm()", "t[0].norm()", "t.double().norm()", "t.norm(1)",
                                  "t.norm(dim=0)", "t.long().norm()", "t.norm(p=2)", "t.norm(keepdim=True)"])
def test_the_norm_method_without_arguments_is_the_functions(call):
    def case(lib):
        t = lib.tensor([[3.0, -4.0, 1.5], [0.25, 2.0, -6.0]], requires_grad=True)
        r = eval(call, {"t": t})
        if r.requires_grad:
            r.sum().backward()
        return r
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert ours[0] == theirs[0] and ours[2:] == theirs[2:], (ours, theirs)
    if ours[0] == "tensor":
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_the_norm_method_inside_a_compiled_function_and_its_gradient():
    f = fg.compile(lambda x: (x * 2).norm())
    x = fg.tensor([[3.0, -4.0], [1.0, 2.0]], requires_grad=True)
    y = f(x)
    y.backward()
    tx = torch.tensor([[3.0, -4.0], [1.0, 2.0]], requires_grad=True)
    ty = (tx * 2).norm()
    ty.backward()
    np.testing.assert_allclose(y.item(), ty.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("fn", ["randn", "rand"])
@pytest.mark.parametrize("size", [(3,), (2, 5), (17,), (4, 0), (1, 1, 1)])
def test_plain_sized_samples_follow_torchs_stream(fn, size):
    """fg.randn(3) takes a fast path past the argument parsing; its draws are still torch's,
    in order with the other sizes' (interleaved with a parsed call)."""
    def make(lib):
        draws = [getattr(lib, fn)(*size), getattr(lib, fn)(size), getattr(lib, fn)(*size, requires_grad=True)]
        return [d.detach().numpy() for d in draws] + [draws[2].requires_grad, draws[2].is_leaf]
    ours, theirs = seeded_both(7, make)
    assert ours[3:] == theirs[3:] == [True, True]
    for a, b in zip(ours[:3], theirs[:3]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call", ["randn()", "rand()", "randn(True)", "randn(3, requires_grad=1)",
                                  "rand(-1)", "randn(2, -3)", "randn(3.0)"])
def test_bad_sizes_still_take_the_parsing_path(call):
    def case(lib):
        return eval("L." + call, {"L": lib})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert ours[0] == theirs[0] == "error"
    assert ours[1] == theirs[1]
    assert ours[2].split(" - got")[0].split(":")[0] == theirs[2].split(" - got")[0].split(":")[0]


@pytest.mark.parametrize("call", ["randn(3, dtype='float32')", "rand(2, 3, dtype=1)", "randn((2, 3), dtype='f')",
                                  "rand([4], dtype=np.float32)"])
def test_a_sample_dtype_that_is_none_reports_the_call_as_torchs_parser(call):
    """randn/rand have overloads: torch's parser reports the whole call, not the argument."""
    def case(lib):
        return eval("L." + call, {"L": lib, "np": np})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert ours[:2] == theirs[:2] == ("error", "TypeError")
    assert ours[2].split(", but expected")[0] == theirs[2].split(", but expected")[0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("value", ["1j", "2+0j", "2.5+0j", "0j", "np.complex64(3)", "np.complex128(1j)"])
@pytest.mark.parametrize("write", ["x.fill_(v)", "x[0] = v", "x[[1]] = v", "x[x == x] = v",
                                   "x.masked_fill_(x == x, v)", "x = L.masked_fill(x, x == x, v)"])
def test_a_complex_number_written_into_a_real_tensor_converts_as_torchs(write, value, dtype):
    """fusegrad has no complex dtype; a complex number written into a tensor converts as
    torch's: its real part, nonzero-ness for bool, or torch's error where the imaginary
    part is not zero (fill_ of one raised an internal TypeError)."""
    def case(lib):
        env = {"L": lib, "np": np, "v": eval(value, {"np": np}), "x": lib.zeros(2, dtype=getattr(lib, dtype))}
        exec(write, env)
        return env["x"]
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert ours[0] == theirs[0] and ours[2:] == theirs[2:], (ours, theirs)
    if ours[0] == "tensor":
        np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("call", ["L.pow(L.ones(2), 1j)", "L.pow(1j, L.ones(2))", "L.ones(2).pow(1j)"])
def test_an_op_that_would_make_a_complex_tensor_says_so(call):
    """torch's parser takes a complex number as a Scalar (a complex result); fusegrad has no
    complex dtype and says that (it raised an internal TypeError)."""
    with pytest.raises(TypeError, match=r"^pow\(\): fusegrad has no complex dtype, and got a complex number$"):
        eval(call, {"L": fg, "np": np})


@pytest.mark.parametrize("call", ["L.ones(2).type(1j)", "L.ones(2).type(3)", "L.get_rng_state(3)",
                                  "L.set_rng_state(L.get_rng_state(), 1)", "L.ones(2).type(float)"])
def test_argument_errors_of_type_and_the_rng_state_functions_are_torchs(call):
    def case(lib):
        return eval(call, {"L": lib})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert ours == theirs and ours[0] == "error"


def test_a_generators_state_still_round_trips():
    g = fg.Generator().manual_seed(5)
    state = g.get_state()
    first = fg.randn(4, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(fg.randn(4, generator=g).numpy(), first.numpy())
    tg = torch.Generator().manual_seed(5)
    np.testing.assert_array_equal(torch.randn(4, generator=tg).numpy(), first.numpy())


@pytest.mark.parametrize("call", ["L.ones(2).pow(np.complex64(2))", "L.ones(2) + np.complex64(2)",
                                  "L.ones(2).mul(np.complex128(2))", "L.ones(2) == np.complex64(2)"])
def test_a_numpy_complex_operand_is_read_as_torchs_parser_reads_it(call):
    """torch's parser reads a NumPy complex scalar as a real number where it is no Python
    complex (np.complex64), and a Python complex (np.complex128 is one) as complex."""
    def case(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(call, {"L": lib, "np": np})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    if theirs[0] == "tensor" and theirs[2].startswith("complex"):
        assert ours[:2] == ("error", "TypeError")
    else:
        assert ours[0] == theirs[0] and ours[2:] == theirs[2:], (ours, theirs)
        np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("call", ["L.bernoulli(L.ones(2), 'a')", "L.bernoulli(L.ones(2), None)",
                                  "L.bernoulli(L.ones(2), [1])", "L.ones(2).bernoulli(None)", "L.ones(2).bernoulli('a')",
                                  "L.ones(2).bernoulli(True)", "L.ones(2).bernoulli(0.0)", "L.bernoulli(L.ones(2) * 0.0)",
                                  "L.ones(2).bernoulli(L.tensor(1.0))", "L.ones(2).bernoulli(p=1)",
                                  "L.ones(2).bernoulli(1j)"])
def test_bernoullis_arguments_are_parsed_as_torchs(call):
    """A p that is no number (None included: torch has no such default) raises torch's parser
    text, for the function and the method (it raised a comparison's TypeError, or drew)."""
    ours, theirs = lib_outcome(fg, lambda lib: eval(call, {"L": lib})), \
        lib_outcome(torch, lambda lib: eval(call, {"L": lib}))
    assert_same_outcome(ours, theirs)


_FREED_CASES = {
    "exp, grad": "h = x.exp(); h.sum().backward(); r = L.autograd.grad((h * w).sum(), x, create_graph=True)",
    "exp, backward": "h = x.exp(); h.sum().backward(); (h * w).sum().backward(create_graph=True); r = x.grad",
    "tanh retained": "h = x.tanh(); h.sum().backward(retain_graph=True); "
                     "r = L.autograd.grad((h * w).sum(), x, create_graph=True)",
    "add saves nothing": "h = x + 1; h.sum().backward(); r = L.autograd.grad((h * w).sum(), x, create_graph=True)",
    "relu, other input": "h = (x * w).relu(); h.sum().backward(); r = L.autograd.grad((h * w).sum(), w, create_graph=True)",
    "exp, not on the path": "h = x.exp(); h.sum().backward(); r = L.autograd.grad((h * w).sum(), w, create_graph=True)",
}


@pytest.mark.parametrize("case", sorted(_FREED_CASES))
def test_a_create_graph_backward_through_a_freed_node_raises_as_torchs(case):
    """A node whose saved values a first backward freed raises when a create_graph backward
    runs it, also where another node saved the same value (MulBackward0 saved h): it passed."""
    def run(lib):
        env = {"L": lib, "x": lib.tensor([0.3, 1.2], requires_grad=True), "w": lib.tensor([0.5, 0.1], requires_grad=True)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(_FREED_CASES[case], env)
        r = env["r"]
        return r[0] if isinstance(r, tuple) else r
    ours, theirs = lib_outcome(fg, run), lib_outcome(torch, run)
    assert_same_outcome(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("value", ["2**63", "10**19", "(2**64 - 1)", "2**64", "2**63 - 1", "-2**63"])
@pytest.mark.parametrize("expr", ["L.tensor([3]) / V", "V / L.tensor([3])", "L.true_divide(L.tensor([3]), V)",
                                  "L.tensor([True]) + V", "L.tensor([True]) / V", "L.tensor([True]) < V",
                                  "L.tensor([True]) * V", "L.tensor([True]) // V", "L.tensor([True]).pow(V)",
                                  "L.tensor([3]) + V", "L.tensor([3.]) / V"])
def test_python_ints_past_int64_divide_and_promote_as_torchs(expr, value):
    """torch reads an int in [2**63, 2**64) as a uint64: a true division takes its value (it
    took its int64 bits, a negative number), and bool tensors refuse the promotion."""
    call = expr.replace("V", value)
    ours, theirs = lib_outcome(fg, lambda lib: eval(call, {"L": lib})), \
        lib_outcome(torch, lambda lib: eval(call, {"L": lib}))
    assert_same_outcome(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("case", [
    "t = L.arange(4.); a = t.numpy(); a.shape = (2, 2); r = t",
    "t = L.arange(4.); a = np.asarray(t); a[1] = 9; a.shape = (2, 2); r = t",
    "t = L.arange(2.); a = t.numpy(); a.flags.writeable = False; t.add_(1); r = t",
    "a = np.arange(4.); t = L.from_numpy(a); a.shape = (2, 2); r = t",
    "a = np.arange(4.); t = L.from_numpy(a); a[0] = 5; t.mul_(2); r = t + L.from_numpy(a)",
    "a = np.arange(4.); t = L.from_numpy(a); a.flags.writeable = False; t.add_(1); r = t",
])
def test_numpy_arrays_share_memory_not_the_array_object(case):
    """t.numpy() and fg.from_numpy(a) share memory with a new array object, as torch's: setting
    the array's shape or flags leaves the tensor as it was (it reshaped the tensor)."""
    def run(lib):
        env = {"L": lib, "np": np}
        exec(case, env)
        return env["r"]
    ours, theirs = lib_outcome(fg, run), lib_outcome(torch, run)
    assert ours[0] == theirs[0] == "tensor" and ours[2:] == theirs[2:]
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert fg.arange(3.).numpy() is not fg.arange(3.).numpy()


@pytest.mark.parametrize("exponent", ["L.tensor(0.5)", "L.tensor([0.5])", "L.tensor([[0.5]])", "L.tensor([0.5]).expand(4)",
                                      "L.tensor([0.5, 0.5, 0.5, 0.5])", "L.tensor(0.5, dtype=L.float64)"])
@pytest.mark.parametrize("base", ["x", "x.view(4, 1)", "x[1]", "x.view(2, 2)[:, :1]"])
def test_pow_of_a_tensor_to_a_one_number_tensor_exponent_is_pow_not_sqrt(base, exponent):
    """torch's pow of two tensors is pow, element by element: (-inf) ** 0.5 is inf and (-0.) **
    0.5 is 0. NumPy's loop took one exponent for all as sqrt (nan, -0.)."""
    def case(lib):
        x = lib.tensor([-float("inf"), -0.0, 4.0, -4.0])
        env = {"L": lib, "x": x}
        return eval(f"({base}) ** ({exponent})", env)
    ours, theirs = exact_outcome(lambda: case(fg)), exact_outcome(lambda: case(torch))
    assert ours == theirs


_MASK_WRITES = {
    "getitem": "c = x > 2; y = x[c]; c.fill_(False); y.sum().backward(); r = x.grad",
    "getitem 2-d": "x2 = x.view(3, 1) * 1; c = x2 > 2; y = x2[c]; c[0, 0] = True; y.sum().backward(); r = x.grad",
    "getitem with an index": "x2 = x.view(1, 3) * 1; c = L.tensor([True]); y = x2[c, 1]; c.zero_(); y.sum().backward(); "
                             "r = x.grad",
    "setitem": "t = x * 1; v = L.tensor(2.0, requires_grad=True); c = x > 2; t[c] = v; c.fill_(False); "
               "t.sum().backward(); r = v.grad",
    "unchanged": "c = x > 2; y = x[c]; y.sum().backward(); r = x.grad",
    "0-d mask": "c = L.tensor(True); y = x[c]; c.fill_(False); y.sum().backward(); r = x.grad",
}


@pytest.mark.parametrize("case", sorted(_MASK_WRITES))
def test_a_mask_written_in_place_before_the_backward_raises_as_torchs(case):
    """torch's IndexBackward0 / IndexPutBackward0 save the mask: writing it in place before
    the backward raises the version error naming it (CPUBoolType); it ran silently."""
    def run(lib):
        env = {"L": lib, "x": lib.tensor([1.0, 5.0, 3.0], requires_grad=True)}
        exec(_MASK_WRITES[case], env)
        return env["r"]
    ours, theirs = lib_outcome(fg, run), lib_outcome(torch, run)
    assert_same_outcome(ours, theirs)


@pytest.mark.parametrize("new", ["L.tensor([5.0, 6.0, 7.0])", "L.tensor([5.0])"])
@pytest.mark.parametrize("old", ["[1.0, 2.0]", "[1.0]", "[1.0, 2.0, 3.0]"])
def test_accumulating_into_a_grad_of_another_shape_raises_torchs_broadcast_errors(old, new):
    """`w.data = ...` of another shape, then a second backward: torch's in-place add of the
    gradients raises its broadcast text (NumPy's ValueError escaped)."""
    def run(lib):
        w = lib.tensor(eval(old), requires_grad=True)
        (w * w).sum().backward()
        w.data = eval(new, {"L": lib})
        (w * w).sum().backward()
        return w.grad
    ours, theirs = lib_outcome(fg, run), lib_outcome(torch, run)
    assert_same_outcome(ours, theirs)


@pytest.mark.parametrize("expr", ["x.lerp(e, 0.3)", "x.lerp(e, L.tensor(0.3))", "L.addcdiv(x, e + 1, e + 1, value=2)",
                                  "L.addcdiv(L.ones(2), x, e)", "L.addcmul(x, e, e, value=2)", "x * 2", "x / 2",
                                  "2 - x", "x.clamp(1.5)", "L.where(x > 1.5, x, 2.0)"])
@pytest.mark.parametrize("how", ["backward", "create_graph"])
def test_a_second_backward_through_scalar_operands_raises_exactly_where_torchs_does(expr, how):
    """lerp keeps a number weight as an attribute (no error: fusegrad raised); addcdiv saves its
    operands whatever needs a gradient (an error: fusegrad ran); x * 2 saves the wrapped 2."""
    def run(lib):
        x, e = lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([0.5, 0.25])
        s = eval(expr, {"L": lib, "x": x, "e": e}).sum()
        if how == "backward":
            s.backward()
            s.backward()
            return x.grad
        lib.autograd.grad(s, x, create_graph=True)
        return lib.autograd.grad(s, x, create_graph=True)[0]
    ours, theirs = lib_outcome(fg, run), lib_outcome(torch, run)
    assert_same_outcome(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("call", ["L.zeros(L.tensor([3]))", "L.zeros(3, L.tensor([2]))", "L.zeros((L.tensor([2]), 3))",
                                  "L.zeros(L.tensor([[3]]))", "L.empty(L.tensor([2]))", "L.randn(L.tensor([2]))",
                                  "L.ones(2).view(L.tensor([2]))", "L.ones(2).reshape(L.tensor([[2]]))",
                                  "L.zeros(L.tensor([2.0]))", "L.ones(L.tensor([2, 3]))", "L.ones(2).view(L.tensor([1, 2]))",
                                  "L.ones(2, 3).permute(L.tensor([1, 0]))"])
def test_a_one_element_integer_tensor_is_a_size_as_in_torchs_parser(call):
    def case(lib):
        lib.manual_seed(0)
        return eval(call, {"L": lib})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours[:2] == theirs[:2] and ours[2].split(":")[0] == theirs[2].split(":")[0]
    else:
        assert ours[1].shape == theirs[1].shape


@pytest.mark.parametrize("args", ["0, 3, (2,)", "1, 2, (2,)", "2, (2,)", "3, (2,)", "2, 3, (2,)", "-1, 1, (2,)",
                                  "0, 1, (2,)"])
def test_randint_into_bool_checks_its_bounds_as_torchs(args):
    def case(lib):
        lib.manual_seed(3)
        return eval(f"L.randint({args}, dtype=L.bool)", {"L": lib})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert_same_outcome(ours, theirs)


@pytest.mark.parametrize("data", ["[np.bool_(True), 1]", "[[np.bool_(True)], [2]]", "[np.bool_(True), np.int64(2)]",
                                  "[np.bool_(True), 1.5]", "[np.bool_(True), True]"])
@pytest.mark.parametrize("dtype", ["None", "L.int64", "L.bool"])
def test_numpy_bools_stored_into_int64_raise_as_torchs(data, dtype):
    """torch stores into int64 through the index protocol, which np.bool_ lacks."""
    def case(lib):
        return eval(f"L.tensor({data}, dtype={dtype})", {"L": lib, "np": np})
    ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
    assert_same_outcome(ours, theirs)


@pytest.mark.parametrize("data", ["[1, 2]", "[1, 0, 3, 4]", "[[1, 0], [2, 3]]", "[[[1, 1], [1, 1]], [[1, 0], [1, 1]]]"])
def test_nonzero_is_column_major_as_torchs(data):
    ours, theirs = fg.tensor(eval(data)).nonzero(), torch.tensor(eval(data)).nonzero()
    assert ours.stride() == theirs.stride() and ours.tolist() == theirs.tolist()


def _graph_names(node, depth=0):
    if node is None or depth > 2:
        return None
    return type(node).__name__, tuple(_graph_names(n, depth + 1) for n, _ in node.next_functions)


@pytest.mark.parametrize("expr", ["x.lerp(e, 0.3)", "L.lerp(e, x, 0.5)", "L.addcmul(x, e, e, value=2)",
                                  "L.addcmul(e, x, x, value=2)", "L.addcdiv(x, e + 1, e + 1, value=2)",
                                  "L.fmod(x, 1.5)", "F.elu(x, alpha=0.5)", "L.copysign(x, -1.0)", "L.xlogy(x, 2.0)",
                                  "L.xlogy(2.0, x)", "x.lerp(e, L.tensor(0.3))", "L.fmod(x, e + 1)"])
def test_next_functions_list_torchs_tensor_inputs_only(expr):
    """A number operand (lerp's weight, addcmul's value, fmod's divisor) is no edge of torch's
    node: next_functions has one entry per tensor input of its signature."""
    def graph(lib):
        x, e = lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([0.5, 0.25])
        return _graph_names(eval(expr, {"L": lib, "F": lib.nn.functional, "x": x, "e": e}).grad_fn)
    assert graph(fg) == graph(torch)


def test_a_tensor_made_of_tensors_requiring_grad_warns_as_torchs(monkeypatch):
    """torch's text (its TORCH_WARN_ONCE warns once a process, so torch is not run here)."""
    from fusegrad.tracer import tensor as tensor_module
    monkeypatch.setattr(tensor_module, "_SCALAR_WARNED", [])       # (as in a fresh process)
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"^Converting a tensor with requires_grad=True to a scalar may lead to "
                                         r"unexpected behavior\.\nConsider using tensor\.detach\(\) first\."):
        made = fg.tensor([x[0], x[1]])
    assert made.tolist() == [1.0, 2.0] and not made.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fg.tensor([fg.tensor(1.0), 2.0, [3.0][0]])         # (no tensor requiring grad: no warning)


def test_the_gradient_of_a_number_power_keeps_torchs_scalar_pow_where_a_tensor_exponent_does_not():
    """x ** 1.5's gradient takes x ** 0.5 as torch's pow(Tensor, Scalar), a square root (nan at
    -inf, -0. at -0.); x ** tensor(0.5) is pow for each element (inf, 0.)."""
    def case(lib):
        x = lib.tensor([-float("inf"), -0.0, 4.0, -4.0], requires_grad=True)
        (x ** 1.5).sum().backward()
        return x.grad
    assert exact_outcome(lambda: case(fg)) == exact_outcome(lambda: case(torch))


@pytest.mark.parametrize("call", ["F.dropout(L.tensor(2.0), 0.5)", "L.tensor(0.5).bernoulli()",
                                  "L.tensor(3.0).bernoulli_(L.tensor(0.5))", "L.tensor(3.0).bernoulli_(0.3)",
                                  "L.nn.Dropout(0.5)(L.tensor(2.0))", "L.bernoulli(L.tensor(0.7))"])
def test_bernoulli_and_dropout_of_a_0d_tensor_draw_as_torchs(call):
    """(they raised an internal AttributeError: a 0-d comparison is a NumPy scalar)"""
    def draws(lib):
        lib.manual_seed(1)
        return [eval(call, {"L": lib, "F": lib.nn.functional}).item() for _ in range(8)]
    assert draws(fg) == draws(torch)


@pytest.mark.parametrize("cls, removed", [("SGD", ("nesterov", "maximize", "foreach", "differentiable", "fused")),
                                          ("Adam", ("amsgrad", "capturable")), ("AdamW", ("decoupled_weight_decay",)),
                                          ("RMSprop", ("centered", "momentum"))])
def test_an_older_optimizer_state_dict_loads_with_torchs_defaults(cls, removed):
    """A state dict lacking newer settings, with a number `step` and an entry no parameter
    takes, loads as torch's: the settings filled in, `step` a tensor, the entry kept."""
    def run(lib):
        p = lib.nn.Parameter(lib.ones(2))
        opt = getattr(lib.optim, cls)([p], lr=0.1)
        p.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        for key in removed:
            sd["param_groups"][0].pop(key)
        if "step" in sd["state"].get(0, {}):
            sd["state"][0]["step"] = 1
        sd["state"][7] = {"x": 1}
        again = getattr(lib.optim, cls)([p], lr=0.1)
        again.load_state_dict(sd)
        again.step()
        step = again.state[p].get("step")
        return (p.tolist(), {k: again.param_groups[0][k] for k in removed}, sorted(again.state_dict()["state"]),
                None if step is None else (type(step).__name__, float(step)))
    assert run(fg) == run(torch)


@pytest.mark.parametrize("dtypes", [("float64", "float32", "float32"), ("float32", "float64", "float64"),
                                    ("float32", "float64", "float32"), ("float32", "float32", "float64"),
                                    ("float64", "float64", "float32"), ("float64", "float32", "float64"),
                                    ("float64", None, "float32"), ("float64", "float32", None)])
def test_layer_norm_parameter_dtype_errors_are_torchs(dtypes):
    def run(lib):
        x, w, b = dtypes
        lib.nn.functional.layer_norm(lib.ones(2, 3, dtype=getattr(lib, x)), (3,),
                                     lib.ones(3, dtype=getattr(lib, w)) if w else None,
                                     lib.zeros(3, dtype=getattr(lib, b)) if b else None)
    ours, theirs = lib_outcome(fg, run), lib_outcome(torch, run)
    assert ours == theirs and ours[0] == "error"


@pytest.mark.parametrize("call", ["L.sub(L.tensor([0.0]), L.tensor([2**63 - 1]), alpha=2)",
                                  "L.add(L.tensor([0.0], dtype=L.float64), L.tensor([1e-45]), alpha=-1.5)",
                                  "L.sub(L.tensor([1.7976931348623157e308], dtype=L.float64), L.tensor([3.4028234e38]), "
                                  "alpha=2)",
                                  "L.rsub(L.tensor([1.0]), L.tensor([3]), alpha=2)"])
def test_alpha_scales_in_the_result_dtype_as_torchs(call):
    """(an int64 operand times alpha wrapped in int64 before the float add)"""
    assert exact_outcome(lambda: eval(call, {"L": fg})) == exact_outcome(lambda: eval(call, {"L": torch}))


def test_alpha_with_a_promoted_operand_keeps_torchs_graph_and_gradients():
    def run(lib):
        x = lib.tensor([1.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([2.0], requires_grad=True)
        out = lib.add(x, y, alpha=3)
        out.sum().backward()
        return ([type(n).__name__ for n, _ in out.grad_fn.next_functions], x.grad.tolist(), y.grad.tolist(),
                str(y.grad.dtype).split(".")[-1])
    assert run(fg) == run(torch)


@pytest.mark.parametrize("y", [2.0, 0.5, 0.0, -1.0, float("inf"), float("-inf"), float("nan")])
def test_xlogys_gradient_at_zero_is_torch_2_13s(y):
    """torch 2.13: d/dx xlogy(x, y) is log(y) at x = 0 for a positive y, 0 for y <= 0."""
    def run(lib):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        lib.xlogy(x, lib.tensor([y, y])).sum().backward()
        return x.grad
    assert exact_outcome(lambda: run(fg)) == exact_outcome(lambda: run(torch))


@pytest.mark.parametrize("data", ["[[0.0, 0.0, 3.4028234e38]]", "[[1e20, -1e20, 3.0, 5.0]]"])
@pytest.mark.parametrize("call", ["t.std(dim=1)", "t.var(dim=1)", "t.std()", "t.var(correction=0)"])
def test_a_compiled_float32_variance_does_not_overflow_in_its_squares(call, data):
    """The compiled variance squares its deviations in float64, as the reference and torch's
    kernel (float32 squares of 1e20 overflowed to inf)."""
    expected = eval(call, {"t": torch.tensor(eval(data))})
    got = fg.compile(lambda t: eval(call, {"t": t}) * 1)(fg.tensor(eval(data)))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


_SCHEDULERS = {
    "StepLR": "S.StepLR(o, 1, 0.5)", "CosineAnnealingLR": "S.CosineAnnealingLR(o, 10)",
    "LambdaLR": "S.LambdaLR(o, lambda e: 0.9 ** e)", "ExponentialLR": "S.ExponentialLR(o, 0.9)",
    "OneCycleLR": "S.OneCycleLR(o, 1.0, total_steps=10)", "CyclicLR": "S.CyclicLR(o, 0.01, 0.1)",
    "ReduceLROnPlateau": "S.ReduceLROnPlateau(o, patience=0)", "LinearLR": "S.LinearLR(o)",
}


@pytest.mark.parametrize("name", sorted(_SCHEDULERS))
def test_schedulers_fill_a_tensor_lr_in_place_as_torchs(name):
    """An optimizer made with a tensor lr keeps that tensor: schedulers fill it (they replaced
    it, or made it a float), and the initial lr is a copy of it."""
    def run(lib):
        p, lr = lib.nn.Parameter(lib.ones(2)), lib.tensor(0.1)
        o = lib.optim.SGD([p], lr=lr, momentum=0.9)
        s = eval(_SCHEDULERS[name], {"S": lib.optim.lr_scheduler, "o": o})
        for _ in range(3):
            p.grad = lib.ones(2)
            o.step()
            s.step(1.0) if name == "ReduceLROnPlateau" else s.step()
        group = o.param_groups[0]
        return (group["lr"] is lr, round(float(lr), 6), type(group.get("initial_lr")).__name__), p.tolist()
    ours, theirs = run(fg), run(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)     # (torch's add with alpha is a fused multiply-add)


@pytest.mark.parametrize("call", ["L.isclose(L.tensor([2**60 + 1]), L.tensor([2**60]), rtol=0, atol=0.5)",
                                  "L.isclose(L.tensor([2**62]), L.tensor([-2**62]))",
                                  "L.isclose(L.tensor([-2**63]), L.tensor([0]))",
                                  "L.isclose(L.tensor([2**24 + 1]), L.tensor([2**24]), rtol=0, atol=0.5)",
                                  "L.isclose(L.tensor([5]), L.tensor([3]), rtol=0, atol=2)"])
def test_isclose_of_integers_measures_errors_in_the_default_dtype_as_torchs(call):
    """(int64 differences wrapped around: -2**63 was close to 0)"""
    assert eval(call, {"L": fg}).tolist() == eval(call, {"L": torch}).tolist()


def _written_through_a_transposed_view(x):
    v = x * 2
    r = v.t()[1]
    r.mul_(3)
    return v, r


def _zeroed_transposed_view(x):
    v = x * 1
    r = v.t().zero_()
    return v, r


def _three_views(x):
    y = x * 1
    y.t()[0].add_(1.0)
    return y, y.t(), y[1]


@pytest.mark.parametrize("fn", [_written_through_a_transposed_view, _zeroed_transposed_view, _three_views])
def test_compiled_views_of_an_intermediate_written_through_a_transpose_share_its_memory(fn):
    """The intermediate's array was made row-major after the views were given the transposed
    one: the views came back as copies (a later write of one output missed the others)."""
    def run(lib, call):
        outs = call(lib.arange(6.0).reshape(2, 3))
        strides = [o.stride() for o in outs]
        outs[0].add_(100.0)
        return strides, [o.tolist() for o in outs]
    assert run(fg, fg.compile(fn)) == run(torch, fn)


@pytest.mark.parametrize("expr", ["(d ** 0)[:, None]", "(d ** 0)[0]", "(d ** 0).detach()", "(d ** 0).view(-1)",
                                  "(d ** 0).t()"])
def test_a_compiled_view_of_a_broadcast_value_is_memory_of_its_own(expr):
    """d ** 0 is an expand of 1 in the program: its views came back as stride-0 broadcasts,
    which an in-place write refused."""
    def run(lib, call):
        out = call(lib.arange(6.0).reshape(2, 3))
        strides = out.stride()
        out.mul_(2)
        return strides, out.tolist()
    fn = eval(f"lambda d: {expr}")
    assert run(fg, fg.compile(fn)) == run(torch, fn)


@pytest.mark.parametrize("src", ["x = L.ones(1).expand(3); x.copy_(x)", "x = L.ones(1).expand(3); x.copy_(x.detach())",
                                 "x = L.ones(1, 3).expand(2, 3); x.t().copy_(x.t())", "x = L.ones(3); x.copy_(x)",
                                 "x = L.ones(3, requires_grad=True) * 1; x.copy_(x)", "x = L.ones(2, 2); x.copy_(x.t())",
                                 "x = L.ones(3); x[:2].copy_(x[1:])", "x = L.ones(3, requires_grad=True); x.copy_(x)"])
def test_copying_a_tensor_into_itself_is_torchs_no_op(src):
    """torch's copy_ from the same memory in the same layout returns at once (an expand too:
    no overlap error), counting the write; a partial overlap still raises."""
    def run(lib):
        env = {"L": lib}
        exec(src, env)
        x = env["x"]
        return x._version, x.requires_grad, None if x.grad_fn is None else type(x.grad_fn).__name__, x.tolist()
    ours, theirs = outcome(lambda: run(fg)), outcome(lambda: run(torch))
    assert ours == theirs


@pytest.mark.parametrize("body", ["n = x.t() * 1; n.fill_(4); return n.detach()", "n = x.t() * 1; n.zero_(); return n.data",
                                  "n = x.t() * 1; n[0] = 3; return n.detach()",
                                  "n = x.t() * 1; n.fill_(4); return n.detach(), n.contiguous()"])
def test_a_compiled_detach_of_a_written_transposed_temporary_keeps_its_layout(body):
    """(the temporary's value after the write was laid out row-major once it died)"""
    env = {}
    exec("def f(x):\n    " + body.replace("; ", "\n    "), env)
    f = env["f"]
    ours, theirs = fg.compile(f)(fg.arange(6.0).reshape(2, 3)), f(torch.arange(6.0).reshape(2, 3))
    ours, theirs = (ours if isinstance(ours, tuple) else (ours,)), (theirs if isinstance(theirs, tuple) else (theirs,))
    assert [t.stride() for t in ours] == [t.stride() for t in theirs]
    assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]
