"""Round 58 of torch parity: torch.autograd's debugging tools, which fusegrad lacked.

- gradcheck / gradgradcheck (fusegrad/autograd_gradcheck.py): reverse mode's Jacobian against
  central finite differences, torch's slow mode, with its texts (GradcheckError, a RuntimeError,
  prints both Jacobians), its warning for inputs that are not float64 and its error where no
  input requires grad;
- anomaly mode (fusegrad/autograd_anomaly.py): detect_anomaly() and set_detect_anomaly(), after
  which a backward raises "Function 'DivBackward0' returned nan values in its 1th output."
  where a node's gradient holds a NaN (create_graph too);
- Variable (a detached alias that requires grad as asked; every tensor is one), Tensor.layout
  (fg.strided) and Tensor.is_cpu;
- nn.utils.rnn.pad_sequence / unpad_sequence, nn.utils.clip_grads_with_norm_;
- fg.func against torch.func (argnum errors in its words), copy.deepcopy and pickle (version 1,
  as torch's copies made by set_);
- Tensor.exponential_, geometric_, cauchy_, log_normal_ and torch.multinomial, drawing torch's numbers
  for a seed (tracer/generator.py, tracer/sampling.py); torch.bernoulli's draws row-major, dropout's in
  its input's memory order (both differed for a transposed input), distributions' Exponential,
  Categorical and OneHotCategorical sampled as torch's; rrelu's training slopes (one draw per element
  at or below 0) and F.gumbel_softmax drawing torch's numbers; distributions.Cauchy and Geometric;
- Module.compile(), register_load_state_dict_post_hook, to_empty, share_memory; Tensor.dim_order;
  pow(t, e, m) refused as torch's.
"""
import copy
import pickle
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _result_or_error(body, L, summary=lambda r: r, fg_names: bool = False):
    """summary(body(L)), or the exception's class and text (with torch's names read as
    fusegrad's where `fg_names`)."""
    try:
        return summary(body(L))
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        text = str(exc)
        return type(exc).__name__, text.replace("torch.", "fg.") if fg_names else text


def _outcome(L, body):
    """body(L)'s result and the first line of each warning, or the exception's class and text."""
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = body(L)
        return result, [str(w.message).split("\n")[0] for w in seen]
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc).replace("torch.", "fg.")


def _wrong_backward(L):
    class WrongSin(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 2
    return WrongSin.apply


def _x(L):
    return L.tensor([0.3, -1.2, 2.0], dtype=L.float64, requires_grad=True)


def _y(L):
    return L.tensor([[0.5, 1.0, -2.0], [1.5, 0.2, 0.7]], dtype=L.float64, requires_grad=True)


GRADCHECK_CASES = {
    "sin": lambda L: L.autograd.gradcheck(lambda x: x.sin(), (_x(L),)),
    "one_tensor": lambda L: L.autograd.gradcheck(lambda x: x.sin(), _x(L)),
    "wrong": lambda L: L.autograd.gradcheck(_wrong_backward(L), (_x(L),)),
    "wrong_no_raise": lambda L: L.autograd.gradcheck(_wrong_backward(L), (_x(L),), raise_exception=False),
    "float32_warns": lambda L: L.autograd.gradcheck(lambda x: x * 2, (L.tensor([0.3, -1.2], requires_grad=True),),
                                                    eps=1e-3, atol=1e-2),
    "nothing_requires_grad": lambda L: L.autograd.gradcheck(lambda x: x * 2, (L.tensor([1.0], dtype=L.float64),)),
    "two_inputs_two_outputs": lambda L: L.autograd.gradcheck(lambda x, y: (x * y.sum(0), y.exp()), (_x(L), _y(L))),
    "number_argument": lambda L: L.autograd.gradcheck(lambda x, k: x * k, (_x(L), 3.0)),
    "integer_output": lambda L: L.autograd.gradcheck(lambda x: x.argmax(), (_x(L),)),
    "matmul": lambda L: L.autograd.gradcheck(lambda a, b: a @ b, (_y(L), _y(L).t().detach().requires_grad_())),
    "leaves_versions": lambda L: (lambda x: (L.autograd.gradcheck(lambda x: x.sin(), (x,)), x._version,
                                             x.tolist()))(_x(L)),
    "gradgrad": lambda L: L.autograd.gradgradcheck(lambda x: x.sin() * x, (_x(L),)),
    "gradgrad_two": lambda L: L.autograd.gradgradcheck(lambda x, y: (x.unsqueeze(0) * y).tanh().sum(1), (_x(L), _y(L))),
}


@pytest.mark.parametrize("case", sorted(GRADCHECK_CASES))
def test_gradcheck_matches_torch(case):
    assert _outcome(fg, GRADCHECK_CASES[case]) == _outcome(torch, GRADCHECK_CASES[case])


def test_gradcheck_error_is_a_runtime_error_that_prints_both_jacobians():
    with pytest.raises(fg.autograd.GradcheckError) as caught:
        fg.autograd.gradcheck(_wrong_backward(fg), (_x(fg),))
    assert isinstance(caught.value, RuntimeError)
    assert str(caught.value).startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor(")


def _nan_division(L, check_nan=True):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly(check_nan=check_nan):
        (x / x).sum().backward()
    return [repr(v) for v in x.grad.tolist()]


def _nan_product(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        (x * float("nan")).sum().backward()


def _infinite_gradient(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        x.sqrt().sum().backward()       # (inf is no anomaly)
    return x.grad.tolist()


def _later_node(L):
    x = L.tensor([-1.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        (x.sqrt() * 2).sum().backward()


def _autograd_grad(L, create_graph):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        L.autograd.grad((x / x).sum(), x, create_graph=create_graph)


def _flags(L):
    seen = [L.is_anomaly_enabled()]
    L.autograd.set_detect_anomaly(True)
    seen.append(L.is_anomaly_enabled())
    L.autograd.set_detect_anomaly(False)
    seen.append(L.is_anomaly_enabled())
    with L.autograd.set_detect_anomaly(True, check_nan=False):
        seen.append((L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()))
    seen.append((L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()))
    with L.autograd.detect_anomaly():
        seen.append(L.is_anomaly_enabled())
    seen.append(L.is_anomaly_enabled())
    return seen


def _off_again(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        pass
    (x / x).sum().backward()
    return [repr(v) for v in x.grad.tolist()]


ANOMALY_CASES = {
    "nan_division": _nan_division,
    "nan_division_unchecked": lambda L: _nan_division(L, check_nan=False),
    "nan_product": _nan_product,
    "infinite_gradient": _infinite_gradient,
    "later_node": _later_node,
    "autograd_grad": lambda L: _autograd_grad(L, False),
    "autograd_grad_create_graph": lambda L: _autograd_grad(L, True),
    "flags": _flags,
    "off_again": _off_again,
}


@pytest.mark.parametrize("case", sorted(ANOMALY_CASES))
def test_anomaly_mode_matches_torch(case):
    assert _outcome(fg, ANOMALY_CASES[case]) == _outcome(torch, ANOMALY_CASES[case])


def test_anomaly_mode_in_a_compiled_call_names_its_node():
    x = fg.tensor([0.0, 1.0], requires_grad=True)
    out = fg.compile(lambda x: (x / x).sum())(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fg.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            out.backward()


VARIABLE_CASES = {
    "requires_grad": lambda L: (lambda t: (lambda v: (v.tolist(), v is t, v.requires_grad, t.requires_grad,
                                                       v.grad_fn))(L.autograd.Variable(t, requires_grad=True)))(L.ones(2)),
    "plain": lambda L: (lambda t: (lambda v: (v is t, v.requires_grad))(L.autograd.Variable(t)))(L.ones(2)),
    "of_a_result": lambda L: L.autograd.Variable(L.ones(2, requires_grad=True) * 2).grad_fn,
    "shares_memory": lambda L: (lambda t: (L.autograd.Variable(t).add_(1), t.tolist())[1])(L.ones(2)),
    "empty": lambda L: L.autograd.Variable().tolist(),
    "not_a_tensor": lambda L: L.autograd.Variable(3),
    "isinstance": lambda L: (isinstance(L.ones(1), L.autograd.Variable), isinstance(3, L.autograd.Variable)),
    "layout": lambda L: (repr(L.ones(2).layout).split(".")[-1], L.ones(2).layout == L.strided, L.ones(2).is_cpu),
}


@pytest.mark.parametrize("case", sorted(VARIABLE_CASES))
def test_variable_and_layout_match_torch(case):
    assert _outcome(fg, VARIABLE_CASES[case]) == _outcome(torch, VARIABLE_CASES[case])


# ------------------------------------------------------------------ nn.utils.rnn, clip_grads_with_norm_
def _rnn(L):
    return fg.nn.utils.rnn if L is fg else torch.nn.utils.rnn


def _sequences(L):
    return L.ones(3, 2, requires_grad=True), L.ones(1, 2) * 2, L.ones(2, 2) * 3


def _summary(result):
    if isinstance(result, (list, tuple)):
        return [_summary(r) for r in result]
    if hasattr(result, "grad_fn"):
        return (result.tolist(), str(result.dtype).split(".")[-1],
                type(result.grad_fn).__name__ if result.grad_fn else None, tuple(result.shape))
    return result


PADDING_CASES = {
    "time_first": lambda L: _rnn(L).pad_sequence(list(_sequences(L))),
    "batch_first": lambda L: _rnn(L).pad_sequence(list(_sequences(L)), batch_first=True, padding_value=-1.0),
    "left": lambda L: _rnn(L).pad_sequence(list(_sequences(L)), batch_first=True, padding_side="left"),
    "empty": lambda L: _rnn(L).pad_sequence([]),
    "trailing_mismatch": lambda L: _rnn(L).pad_sequence([L.ones(3, 2), L.ones(2, 3)]),
    "bad_side": lambda L: _rnn(L).pad_sequence(list(_sequences(L)), padding_side="middle"),
    "one_d": lambda L: _rnn(L).pad_sequence([L.ones(2), L.ones(3)]),
    "first_dtype_wins": lambda L: _rnn(L).pad_sequence([L.ones(2, dtype=L.int64), L.ones(3) * 2.5]),
    "gradient": lambda L: (lambda s: ((_rnn(L).pad_sequence(list(s)) * L.arange(18.).reshape(3, 3, 2)).sum().backward(),
                                      s[0].grad)[1])(_sequences(L)),
    "unpad": lambda L: _rnn(L).unpad_sequence(_rnn(L).pad_sequence(list(_sequences(L)), batch_first=True),
                                              L.tensor([3, 1, 2]), batch_first=True),
    "unpad_time_first": lambda L: _rnn(L).unpad_sequence(_rnn(L).pad_sequence(list(_sequences(L))), L.tensor([3, 1, 2])),
}


@pytest.mark.parametrize("case", sorted(PADDING_CASES))
def test_pad_sequence_matches_torch(case):
    assert _outcome(fg, lambda L: _summary(PADDING_CASES[case](L))) == \
        _outcome(torch, lambda L: _summary(PADDING_CASES[case](L)))


def test_clip_grads_with_norm_matches_torch():
    def clipped(L):
        L.manual_seed(0)
        layer = L.nn.Linear(3, 2)
        layer(L.ones(4, 3)).pow(2).sum().backward()
        total = L.nn.utils.get_total_norm([p.grad for p in layer.parameters()])
        L.nn.utils.clip_grads_with_norm_(layer.parameters(), 0.5, total)
        return [p.grad.tolist() for p in layer.parameters()]
    ours, theirs = clipped(fg), clipped(torch)
    assert len(ours) == len(theirs)
    for x, y in zip(ours, theirs):
        assert len(_flat(x)) == len(_flat(y))
        assert all(abs(a - b) < 1e-6 for a, b in zip(_flat(x), _flat(y)))


def _flat(values):
    return [v for row in values for v in (row if isinstance(row, list) else [row])]


# ------------------------------------------------------------------ fg.func against torch.func
def _func(L):
    return fg.func if L is fg else torch.func


def _pair(L):
    return L.tensor([0.5, -1.0, 2.0]), L.tensor([1.5, 0.25, -0.5])


def _summed_product(x, y):
    return (x * y).sum()


def _scaled(x, y):
    return x * y.sum()


FUNC_CASES = {
    "grad": lambda L: _func(L).grad(lambda x: x.sin().sum())(_pair(L)[0]),
    "grad_two": lambda L: _func(L).grad(_summed_product, argnums=(0, 1))(*_pair(L)),
    "grad_aux": lambda L: _func(L).grad(lambda x: ((x ** 2).sum(), x.mean()), has_aux=True)(_pair(L)[0]),
    "grad_and_value": lambda L: _func(L).grad_and_value(lambda x: x.sin().sum())(_pair(L)[0]),
    "grad_of_vector": lambda L: _func(L).grad(lambda x: x.exp())(_pair(L)[0]),
    "grad_argnum_out_of_range": lambda L: _func(L).grad(_summed_product, argnums=3)(*_pair(L)),
    "grad_negative_argnum_out_of_range": lambda L: _func(L).grad(_summed_product, argnums=-3)(*_pair(L)),
    "jacrev_argnum_out_of_range": lambda L: _func(L).jacrev(_summed_product, argnums=(0, 5))(*_pair(L)),
    "jacrev": lambda L: _func(L).jacrev(lambda x: x.reshape(-1, 1) @ x.reshape(1, -1))(_pair(L)[0]),
    "jacrev_two": lambda L: _func(L).jacrev(_scaled, argnums=(0, 1))(*_pair(L)),
    "jacrev_tuple_out": lambda L: _func(L).jacrev(lambda x: (x.sum(), x * 2))(_pair(L)[0]),
    "jacfwd": lambda L: _func(L).jacfwd(lambda x: x.softmax(0))(_pair(L)[0]),
    "hessian": lambda L: _func(L).hessian(lambda x: x.norm())(_pair(L)[0]),
    "hessian_two": lambda L: _func(L).hessian(_summed_product, argnums=(0, 1))(*_pair(L)),
    "vjp": lambda L: (lambda out, fn: (out, fn(L.ones(3))))(*_func(L).vjp(_scaled, *_pair(L))),
    "jvp": lambda L: _func(L).jvp(_scaled, _pair(L), (L.ones(3), L.ones(3))),
    "vmap_in_dims": lambda L: _func(L).vmap(_summed_product, in_dims=(0, None))(L.arange(6.).reshape(2, 3), _pair(L)[1]),
    "vmap_out_dims": lambda L: _func(L).vmap(lambda x: x.exp() * 2, out_dims=1)(L.arange(6.).reshape(2, 3)),
    "vmap_of_grad": lambda L: _func(L).vmap(_func(L).grad(lambda x: x.sin().sum()))(L.arange(6.).reshape(2, 3)),
    "grad_of_grad": lambda L: _func(L).grad(_func(L).grad(lambda x: (x ** 3).sum()))(L.tensor(2.0)),
    "grad_of_dict": lambda L: _func(L).grad(lambda d: (d["a"] * d["b"]).sum())(dict(zip("ab", _pair(L)))),
    "vmap_size_mismatch": lambda L: _func(L).vmap(_summed_product)(L.ones(2, 3), L.ones(3, 3)),
}


def _rounded(result):
    if isinstance(result, (tuple, list)):
        return type(result).__name__, [_rounded(r) for r in result]
    if isinstance(result, dict):
        return {k: _rounded(v) for k, v in result.items()}
    if hasattr(result, "detach"):
        return tuple(result.shape), [round(v, 5) for v in result.detach().reshape(-1).tolist()]
    return result


@pytest.mark.parametrize("case", sorted(FUNC_CASES))
def test_func_transforms_match_torch_func(case):
    # (warnings not compared: torch.func's first jacfwd warns about torch.jit.script internally)
    assert _result_or_error(FUNC_CASES[case], fg, _rounded) == _result_or_error(FUNC_CASES[case], torch, _rounded)


def test_fg_grad_keeps_its_value_error_for_an_argnum_out_of_range():
    # (API.md pins fg.grad's ValueError; fg.func.grad is torch.func.grad's RuntimeError)
    with pytest.raises(ValueError, match="argnums 3 is out of range"):
        fg.grad(_summed_product, argnums=3)(*_pair(fg))


# ------------------------------------------------------------------ copy.deepcopy and pickle
def _leaf_with_grad(L):
    x = L.tensor([1., 2.], requires_grad=True)
    (x * x).sum().backward()
    return x


def _tensor_facts(value):
    if hasattr(value, "requires_grad"):
        return (type(value).__name__, value.tolist(), value.requires_grad, value.is_leaf,
                None if value.grad is None else value.grad.tolist(), value._version)
    if isinstance(value, (list, tuple)):
        return [_tensor_facts(v) for v in value]
    return value


COPY_CASES = {
    "deepcopy_leaf": lambda L: copy.deepcopy(_leaf_with_grad(L)),
    "deepcopy_own_memory": lambda L: (lambda x: (lambda y: (y.data.add_(1), x.tolist(), y.tolist()))(copy.deepcopy(x)))(
        L.ones(2))[1:],
    "deepcopy_non_leaf": lambda L: copy.deepcopy(L.ones(2, requires_grad=True) * 2),
    "deepcopy_result_without_grad": lambda L: copy.deepcopy(L.ones(2) * 2),
    "deepcopy_parameter": lambda L: copy.deepcopy(L.nn.Parameter(L.ones(2))),
    "deepcopy_after_writes": lambda L: (lambda x: (x.add_(1), x.add_(1), copy.deepcopy(x)))(L.ones(2))[2],
    "deepcopy_module_shares_within": lambda L: (lambda lin: (lambda c: (c[0].weight is c[1].weight,
                                                                         c[0].weight is lin.weight))(
        copy.deepcopy(L.nn.Sequential(lin, lin))))(L.nn.Linear(2, 2)),
    "deepcopy_grad_is_own": lambda L: (lambda x: (lambda y: (y.grad.add_(5), x.grad.tolist(), y.grad.tolist()))(
        copy.deepcopy(x)))(_leaf_with_grad(L))[1:],
    "pickle_leaf": lambda L: pickle.loads(pickle.dumps(L.tensor([1., 2.], requires_grad=True))),
    "pickle_non_leaf": lambda L: pickle.loads(pickle.dumps(L.ones(2, requires_grad=True) * 2)),
    "pickle_parameter": lambda L: pickle.loads(pickle.dumps(L.nn.Parameter(L.ones(2)))),
}


@pytest.mark.parametrize("case", sorted(COPY_CASES))
def test_copies_match_torch(case):
    got, expected = (_result_or_error(COPY_CASES[case], L, _tensor_facts, fg_names=True) for L in (fg, torch))
    if isinstance(got, tuple) and got and got[0] in ("Tensor", "Parameter"):
        got, expected = got[1:], expected[1:]       # (the class names: fusegrad's Tensor is torch's)
    assert got == expected


# ------------------------------------------------------------------ exponential_, geometric_, cauchy_, log_normal_, multinomial
_PROBABILITIES = [0.1, 0.5, 0.05, 0.35]
SAMPLING_CASES = {
    **{f"{fill}_{dtype}_{n}": (lambda fill, dtype, n, args: lambda L: getattr(L.empty(n, dtype=getattr(L, dtype)), fill)(
        *args)[-5:])(fill, dtype, n, args)
       for fill, args in (("exponential_", (2.5,)), ("geometric_", (0.3,)), ("cauchy_", (1.0, 0.5)), ("log_normal_", ()))
       for dtype in ("float32", "float64") for n in (5, 40, 5000)},
    "geometric_int64": lambda L: L.empty(7, dtype=L.int64).geometric_(0.2),
    "exponential_transposed": lambda L: L.empty(3, 4).t().exponential_(),
    "exponential_keyword": lambda L: L.empty(3).exponential_(lambd=0.5),
    "stream_after_exponential": lambda L: (L.empty(3).exponential_(), L.randn(3))[1],
    "stream_after_odd_log_normal": lambda L: (L.empty(3, dtype=L.float64).log_normal_(),
                                              L.empty(3, dtype=L.float64).normal_())[1],
    "exponential_of_a_result": lambda L: (L.ones(3, requires_grad=True) * 1).exponential_(),
    "exponential_of_a_leaf": lambda L: L.ones(3, requires_grad=True).exponential_(),
    "exponential_generator": lambda L: L.empty(4).exponential_(generator=L.Generator().manual_seed(3)),
    "exponential_bad_lambda": lambda L: L.empty(2).exponential_(0),
    "exponential_int64": lambda L: L.empty(2, dtype=L.int64).exponential_(),
    "cauchy_int64": lambda L: L.empty(2, dtype=L.int64).cauchy_(),
    "cauchy_bool": lambda L: L.empty(2, dtype=L.bool).cauchy_(),
    "log_normal_int64": lambda L: L.empty(2, dtype=L.int64).log_normal_(),
    "geometric_bool": lambda L: L.empty(2, dtype=L.bool).geometric_(0.5),
    "geometric_without_p": lambda L: L.empty(2).geometric_(),
    "geometric_bad_p": lambda L: L.empty(2).geometric_(1.0),
    "geometric_two_arguments": lambda L: L.empty(2).geometric_(0.5, 2),
    "exponential_two_arguments": lambda L: L.empty(2).exponential_(1, 2),
    "exponential_string": lambda L: L.empty(2).exponential_("a"),
    "multinomial_one": lambda L: L.multinomial(L.tensor(_PROBABILITIES), 1),
    "multinomial_three": lambda L: L.multinomial(L.tensor(_PROBABILITIES), 3),
    "multinomial_replacement": lambda L: L.multinomial(L.tensor(_PROBABILITIES), 10, replacement=True),
    "multinomial_rows": lambda L: L.multinomial(L.tensor([_PROBABILITIES, _PROBABILITIES[::-1]]), 2),
    "multinomial_rows_replacement": lambda L: L.multinomial(L.tensor([_PROBABILITIES, _PROBABILITIES[::-1]]), 6, True),
    "multinomial_float64": lambda L: L.multinomial(L.tensor(_PROBABILITIES, dtype=L.float64), 4),
    "multinomial_method": lambda L: L.tensor(_PROBABILITIES).multinomial(2),
    "multinomial_unnormalised": lambda L: L.multinomial(L.tensor([1., 3., 0., 6.]), 8, True),
    "stream_after_multinomial": lambda L: (L.multinomial(L.tensor(_PROBABILITIES), 2), L.rand(2))[1],
    "multinomial_of_softmax": lambda L: L.multinomial(L.softmax(L.arange(27.) * 0.1, 0), 1),
    "multinomial_generator": lambda L: L.multinomial(L.ones(5), 3, generator=L.Generator().manual_seed(7)),
    "multinomial_no_samples": lambda L: L.multinomial(L.tensor(_PROBABILITIES), 0),
    "multinomial_too_many": lambda L: L.multinomial(L.tensor(_PROBABILITIES), 5),
    "multinomial_negative": lambda L: L.multinomial(L.tensor([0.2, -0.8]), 1),
    "multinomial_nan_with_replacement": lambda L: L.multinomial(L.tensor([0.2, float("nan")]), 3, True),
    "multinomial_inf_first": lambda L: L.multinomial(L.tensor([float("inf"), -1.]), 3, True),
    "multinomial_zero_sum": lambda L: L.multinomial(L.zeros(2), 1),
    "multinomial_int64": lambda L: L.multinomial(L.tensor([1, 2]), 1),
    "multinomial_3d": lambda L: L.multinomial(L.ones(2, 2, 2), 1),
    "multinomial_float_count": lambda L: L.multinomial(L.tensor(_PROBABILITIES), 2.0),
    "multinomial_requires_grad": lambda L: L.multinomial(L.tensor(_PROBABILITIES, requires_grad=True), 2),
}


@pytest.mark.parametrize("case", sorted(SAMPLING_CASES))
def test_sampling_draws_torchs_numbers(case):
    def result(L):
        L.manual_seed(5)
        return _result_or_error(SAMPLING_CASES[case], L, lambda r: (
            r.tolist(), str(r.dtype).split(".")[-1], tuple(r.stride()),
            type(r.grad_fn).__name__ if r.grad_fn is not None else None))
    assert result(fg) == result(torch)


def test_multinomial_in_a_compiled_call_draws_as_eagerly():
    def sample(logits):
        return fg.multinomial(logits.softmax(-1), 2), fg.empty(3).exponential_() + logits[:3]
    fg.manual_seed(1)
    eager = sample(fg.arange(5.))
    fg.manual_seed(1)
    compiled = fg.compile(sample)(fg.arange(5.))
    assert [t.tolist() for t in compiled] == [t.tolist() for t in eager]


# ------------------------------------------------------------------ draw orders of bernoulli, dropout, distributions
def _transposed(L):
    return L.arange(1., 13.).reshape(3, 4).t()


DRAW_ORDER_CASES = {
    # (torch.bernoulli fills a fresh contiguous tensor: row-major draws whatever p's layout)
    "bernoulli_of_transposed": lambda L: L.bernoulli(L.tensor([[0.3, 0.7, 0.5], [0.9, 0.1, 0.5]]).t()),
    "bernoulli_of_expand": lambda L: L.bernoulli(L.tensor([0.3, 0.7]).expand(4, 2)),
    "bernoulli_p_of_transposed": lambda L: L.bernoulli(L.zeros(2, 3).t(), 0.5),
    # (dropout's noise is empty_like(input), drawn in input's memory order)
    "dropout_of_transposed": lambda L: L.nn.functional.dropout(_transposed(L), 0.5),
    "dropout_of_expand": lambda L: L.nn.functional.dropout(L.ones(4).expand(3, 4), 0.5),
    "alpha_dropout_of_transposed": lambda L: L.nn.functional.alpha_dropout(_transposed(L), 0.5, True),
    "dropout1d_of_transposed": lambda L: L.nn.functional.dropout1d(_transposed(L), 0.5),
    "distributions_exponential": lambda L: L.distributions.Exponential(L.tensor([0.5, 2.0])).sample((3,)),
    "distributions_categorical": lambda L: L.distributions.Categorical(probs=L.tensor([0.1, 0.5, 0.4])).sample((6,)),
    "distributions_categorical_one": lambda L: L.distributions.Categorical(probs=L.tensor([0.1, 0.5, 0.4])).sample(),
    "distributions_categorical_batch": lambda L: L.distributions.Categorical(
        logits=L.tensor([[0.1, 0.5, 0.4], [1., 0., -1.]])).sample((2, 2)),
    "distributions_one_hot": lambda L: L.distributions.OneHotCategorical(probs=L.tensor([0.1, 0.5, 0.4])).sample((3,)),
    "distributions_bernoulli": lambda L: L.distributions.Bernoulli(probs=L.tensor([0.3, 0.7])).sample((4,)),
}


@pytest.mark.parametrize("case", sorted(DRAW_ORDER_CASES))
def test_draws_come_in_torchs_order(case):
    def result(L):
        L.manual_seed(3)
        r = DRAW_ORDER_CASES[case](L)
        return [round(v, 5) for v in r.reshape(-1).tolist()], tuple(r.shape), str(r.dtype).split(".")[-1]
    assert result(fg) == result(torch)


# ------------------------------------------------------------------ random initialisers, rrelu, gumbel_softmax
def _t(L):
    return L.arange(1., 13.).reshape(3, 4).t()


RANDOM_CASES = {
    "rand_like_transposed": lambda L: L.rand_like(_t(L)),
    "randn_like_transposed": lambda L: L.randn_like(_t(L)),
    "randint_like_transposed": lambda L: L.randint_like(_t(L), 10),
    "rand_like_expand": lambda L: L.rand_like(L.ones(4).expand(3, 4)),
    "normal__transposed": lambda L: _t(L).normal_(),
    "random__transposed": lambda L: _t(L).random_(10),
    "exponential__transposed": lambda L: _t(L).exponential_(),
    "normal_of_transposed_mean": lambda L: L.normal(_t(L), 1.0),
    "kaiming_uniform": lambda L: L.nn.init.kaiming_uniform_(L.empty(3, 5), a=0.1),
    "xavier_normal": lambda L: L.nn.init.xavier_normal_(L.empty(3, 5), gain=2.0),
    "trunc_normal": lambda L: L.nn.init.trunc_normal_(L.empty(6), std=0.5),
    "orthogonal": lambda L: L.nn.init.orthogonal_(L.empty(3, 4)),
    "embedding": lambda L: L.nn.Embedding(4, 3).weight,
    "conv2d": lambda L: L.nn.Conv2d(2, 3, 2).weight.reshape(-1)[:6],
    "lstm": lambda L: L.nn.LSTM(3, 2).weight_hh_l0,
    "multihead_attention": lambda L: L.nn.MultiheadAttention(4, 2).in_proj_weight.reshape(-1)[:6],
    "rrelu_training": lambda L: L.nn.functional.rrelu(L.tensor([[-1., -2., 3., -4.], [0., 5., -0.5, 1.]]).t(),
                                                      0.1, 0.7, training=True),
    "rrelu_training_float64": lambda L: L.nn.functional.rrelu(L.tensor([-1., -2., 3., -4.], dtype=L.float64),
                                                              training=True),
    "rrelu_training_then_stream": lambda L: (L.nn.functional.rrelu(L.tensor([-1., 2., -3.]), training=True),
                                             L.rand(2))[1],
    "gumbel_softmax": lambda L: L.nn.functional.gumbel_softmax(L.tensor([[1., 2., 3.], [0., -1., 2.]]), tau=0.5),
    "gumbel_softmax_hard": lambda L: L.nn.functional.gumbel_softmax(L.tensor([[1., 2., 3.], [0., -1., 2.]]).t(),
                                                                    hard=True, dim=0),
}


@pytest.mark.parametrize("case", sorted(RANDOM_CASES))
def test_random_values_are_torchs(case):
    def result(L):
        L.manual_seed(11)
        r = RANDOM_CASES[case](L)
        return [round(float(v), 5) for v in r.detach().reshape(-1).tolist()], str(r.dtype).split(".")[-1]
    assert result(fg) == result(torch)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_gradients_match_torch(hard):
    def gradient(L):
        L.manual_seed(11)
        logits = L.tensor([[1., 2., 3.], [0., -1., 2.]], requires_grad=True)
        out = L.nn.functional.gumbel_softmax(logits, tau=0.5, hard=hard)
        (out * L.arange(6.).reshape(2, 3)).sum().backward()
        return [round(v, 5) for v in logits.grad.reshape(-1).tolist()], type(out.grad_fn).__name__
    assert gradient(fg) == gradient(torch)


# ------------------------------------------------------------------ distributions.Cauchy and Geometric
def _cauchy(L):
    return L.distributions.Cauchy(L.tensor([0.0, 1.0]), L.tensor([1.0, 2.0]))


def _geometric(L):
    return L.distributions.Geometric(L.tensor([0.3, 0.8]))


NEW_DISTRIBUTION_CASES = {
    "cauchy_sample": lambda L: _cauchy(L).sample((3,)),
    "cauchy_rsample_gradient": lambda L: (lambda loc, scale: (L.distributions.Cauchy(loc, scale).rsample((3,)).sum()
                                                              .backward(), scale.grad)[1])(
        L.tensor([0.0], requires_grad=True), L.tensor([2.0], requires_grad=True)),
    "cauchy_log_prob": lambda L: _cauchy(L).log_prob(L.tensor([0.5, -1.0])),
    "cauchy_cdf": lambda L: _cauchy(L).cdf(L.tensor([0.5, -1.0])),
    "cauchy_icdf": lambda L: _cauchy(L).icdf(L.tensor([0.3, 0.9])),
    "cauchy_entropy": lambda L: _cauchy(L).entropy(),
    "cauchy_mean": lambda L: _cauchy(L).mean,
    "cauchy_variance": lambda L: _cauchy(L).variance,
    "cauchy_repr": lambda L: repr(_cauchy(L)),
    "cauchy_bad_scale": lambda L: L.distributions.Cauchy(0.0, -1.0, validate_args=True),
    "cauchy_expand": lambda L: _cauchy(L).expand((3, 2)).sample(),
    "cauchy_kl": lambda L: L.distributions.kl_divergence(_cauchy(L), L.distributions.Cauchy(L.tensor([1.0, 0.0]),
                                                                                            L.tensor([0.5, 3.0]))),
    "geometric_sample": lambda L: _geometric(L).sample((4,)),
    "geometric_logits_sample": lambda L: L.distributions.Geometric(logits=L.tensor([0.0, -1.0])).sample((2,)),
    "geometric_log_prob": lambda L: _geometric(L).log_prob(L.tensor([0.0, 3.0])),
    "geometric_log_prob_certain": lambda L: L.distributions.Geometric(L.tensor([1.0, 0.5])).log_prob(L.tensor([0.0, 0.0])),
    "geometric_entropy": lambda L: _geometric(L).entropy(),
    "geometric_moments": lambda L: L.stack([_geometric(L).mean, _geometric(L).variance, _geometric(L).mode]),
    "geometric_repr": lambda L: repr(_geometric(L)),
    "geometric_zero_probs": lambda L: L.distributions.Geometric(L.tensor([0.0, 0.5]), validate_args=True),
    "geometric_probs_above_one": lambda L: L.distributions.Geometric(L.tensor([1.5]), validate_args=True),
    "geometric_neither": lambda L: L.distributions.Geometric(),
    "geometric_bad_sample": lambda L: L.distributions.Geometric(L.tensor([0.3]), validate_args=True).log_prob(
        L.tensor([-1.0])),
    "geometric_kl": lambda L: L.distributions.kl_divergence(_geometric(L), L.distributions.Geometric(L.tensor([0.5, 0.5]))),
}


@pytest.mark.parametrize("case", sorted(NEW_DISTRIBUTION_CASES))
def test_cauchy_and_geometric_match_torch(case):
    def summary(r):
        if isinstance(r, str):
            return r.replace("torch.", "fg.")
        return [repr(round(v, 5)) for v in r.reshape(-1).tolist()], tuple(r.shape), str(r.dtype).split(".")[-1]

    def result(L):
        L.manual_seed(3)
        return _result_or_error(NEW_DISTRIBUTION_CASES[case], L, summary, fg_names=True)
    assert result(fg) == result(torch)


# ------------------------------------------------------------------ Module.compile, load_state_dict post-hooks, to_empty
def test_module_compile_runs_the_module_compiled_with_torchs_values():
    # (torch's side runs eagerly, the oracle of the values: importing torch's compiler turns off
    # torch.distributions' argument validation for the rest of the process, which other tests
    # compare with; torch's Module.compile returns None too)
    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 1))
        if L is fg:
            assert model.compile() is None
        out = model(L.ones(2, 3))
        out.sum().backward()
        return [round(v, 5) for v in out.reshape(-1).tolist()], round(model[0].weight.grad.sum().item(), 5), \
            list(model.state_dict())
    assert run(fg) == run(torch)
    model = fg.nn.Linear(2, 1)
    model.compile()
    before = fg.cache_info().misses
    model(fg.ones(3, 2))
    assert fg.cache_info().misses == before + 1        # (the call went through fg.compile)


LOAD_HOOK_CASES = {
    "clears_missing_keys": lambda L: (lambda m: (m.register_load_state_dict_post_hook(
        lambda mod, keys: keys.missing_keys.clear()), repr(m.load_state_dict({"weight": L.ones(2, 2)})))[1])(
        L.nn.Linear(2, 2)),
    "sees_keys": lambda L: (lambda m, seen: (m.register_load_state_dict_post_hook(
        lambda mod, keys: seen.append((type(mod).__name__, list(keys.missing_keys), list(keys.unexpected_keys)))),
        m.load_state_dict({"0.weight": L.ones(2, 2), "x": L.ones(1)}, strict=False), seen)[2])(
        L.nn.Sequential(L.nn.Linear(2, 2)), []),
    "returns_a_value": lambda L: (lambda m: (m.register_load_state_dict_post_hook(lambda mod, keys: 1),
                                             m.load_state_dict(m.state_dict())))(L.nn.Linear(2, 2)),
    "removed": lambda L: (lambda m: (m.register_load_state_dict_post_hook(lambda mod, keys: 1).remove(),
                                     repr(m.load_state_dict(m.state_dict())))[1])(L.nn.Linear(2, 2)),
    "to_empty": lambda L: [tuple(p.shape) for p in L.nn.Linear(2, 3).to_empty(device="cpu").parameters()],
    "share_memory": lambda L: type(L.nn.Linear(2, 3).share_memory()).__name__,
}


@pytest.mark.parametrize("case", sorted(LOAD_HOOK_CASES))
def test_module_state_hooks_match_torch(case):
    assert _result_or_error(LOAD_HOOK_CASES[case], fg) == _result_or_error(LOAD_HOOK_CASES[case], torch)


# ------------------------------------------------------------------ dim_order, pow with a modulo
DIM_ORDER_CASES = {
    "contiguous": lambda L: L.ones(2, 3),
    "transposed": lambda L: L.ones(2, 3).t(),
    "permuted_unit": lambda L: L.ones(2, 1, 3).permute(2, 1, 0),
    "unit_transposed": lambda L: L.ones(3, 1).t(),
    "permuted": lambda L: L.ones(2, 3, 4).permute(1, 2, 0),
    "expand": lambda L: L.ones(4).expand(3, 4),
}


@pytest.mark.parametrize("case", sorted(DIM_ORDER_CASES))
@pytest.mark.parametrize("check", [False, True])
def test_dim_order_matches_torch(case, check):
    def dim_order(L):
        return DIM_ORDER_CASES[case](L).dim_order(ambiguity_check=check)
    assert _result_or_error(dim_order, fg) == _result_or_error(dim_order, torch)


def test_three_argument_pow_is_refused_as_torch():
    def result(L):
        try:
            return pow(L.tensor([2]), 3, 5)
        except TypeError as exc:
            return str(exc)
    assert result(fg) == result(torch)
    assert (fg.tensor([2]) ** 3).tolist() == [8]
