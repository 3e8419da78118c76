"""Packed sequences (torch.nn.utils.rnn) and the recurrent layers over them.

- PackedSequence (a namedtuple: fields, repr, constructors, .to/.double/.is_cuda/.is_pinned),
  pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence and
  invert_permutation: values, int64 batch sizes and indices, node names
  (PackPaddedSequenceBackward0 listing only its input), gradients through pack and pad, and
  torch's errors and texts in torch's order.
- nn.RNN / nn.GRU / nn.LSTM over a PackedSequence: output data, h_n / c_n taken at each
  sequence's last step and put back in the batch's order, gradients of the input, the initial
  states and every weight, for 1 and 2 layers, both directions, batch_first, sorted or not,
  with and without initial states (and LSTM's projection), and their errors.
- The same pack -> LSTM -> pad inside fg.compile, with lengths as a list or a tensor.
"""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402
from fusegrad.nn.utils import rnn as frnn  # noqa: E402
from torch.nn.utils import rnn as trnn  # noqa: E402

LIBS = ((torch, trnn), (fg, frnn))


def _outcome(call):
    """call()'s result, or the exception's (class name, message): the outcome compared with torch's."""
    try:
        return call()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy())


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _assert_same(a, b, exact=True):
    """Equal tensors (value, shape, dtype) or equal plain values."""
    if hasattr(a, "detach"):
        assert hasattr(b, "detach"), (a, b)
        assert _dtype_name(a) == _dtype_name(b)
        assert tuple(a.shape) == tuple(b.shape)
        if exact:
            np.testing.assert_array_equal(_np(a), _np(b))
        else:
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)
    else:
        assert a == b


def _padded(L, shape, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    return L.tensor(rng.standard_normal(shape), dtype=getattr(L, dtype), requires_grad=True)


# ------------------------------------------------------------------ pack / pad

PACK_CASES = [
    # (lengths, batch_first, enforce_sorted, trailing shape, lengths as)
    ([4, 2, 1], False, True, (2,), "list"),
    ([4, 2, 1], True, True, (2,), "list"),
    ([2, 4, 1], False, False, (2,), "tensor"),
    ([2, 4, 1, 4], True, False, (), "list"),
    ([3, 3, 3], False, False, (2, 3), "float tensor"),
    ([1], True, True, (3,), "list"),
    ([4, 1, 2, 1], False, False, (1,), "tensor"),
]


@pytest.mark.parametrize("lengths,batch_first,enforce_sorted,trailing,kind", PACK_CASES)
def test_pack_pad_round_trip_values_nodes_and_gradients(lengths, batch_first, enforce_sorted, trailing, kind):
    results = []
    for L, R in LIBS:
        T, B = max(lengths), len(lengths)
        x = _padded(L, ((B, T) if batch_first else (T, B)) + trailing)
        given = {"list": lengths, "tensor": L.tensor(lengths),
                 "float tensor": L.tensor(lengths, dtype=L.float64)}[kind]
        p = R.pack_padded_sequence(x, given, batch_first=batch_first, enforce_sorted=enforce_sorted)
        padded, out_lengths = R.pad_packed_sequence(p, batch_first=batch_first, padding_value=-2.5,
                                                    total_length=T + 1)
        weights = L.tensor(np.arange(padded.numel(), dtype=np.float64).reshape(tuple(padded.shape)))
        (padded * weights).sum().backward()
        fn = p.data.grad_fn
        results.append(dict(data=p.data, batch_sizes=p.batch_sizes, sorted=p.sorted_indices,
                            unsorted=p.unsorted_indices, padded=padded, lengths=out_lengths, grad=x.grad,
                            node=type(fn).__name__, edges=len(fn.next_functions),
                            padded_node=type(padded.grad_fn).__name__))
    for key in results[0]:
        _assert_same(results[0][key], results[1][key])


def test_packed_sequence_repr_fields_and_methods():
    outs = []
    for L, R in LIBS:
        seqs = [L.tensor([1, 2, 3]), L.tensor([4, 5]), L.tensor([6])]
        p = R.pack_sequence(seqs)
        q = R.pack_sequence([L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0, 5.0])], enforce_sorted=False)
        d = q.double()
        outs.append(dict(repr=repr(p), repr_q=repr(q), fields=p._fields, is_cuda=p.is_cuda, pinned=p.is_pinned(),
                         name=type(p).__name__, same=p.to(L.int64) is p, d_dtype=_dtype_name(d.data),
                         d_sorted=d.sorted_indices, d_unsorted=d.unsorted_indices, d_bs=d.batch_sizes,
                         long=_dtype_name(q.long().data), float=_dtype_name(d.float().data),
                         cpu=q.cpu() is q, tuple_len=len(tuple(q)),
                         unpacked=R.unpack_sequence(q), unpacked_p=R.unpack_sequence(p)))
    a, b = outs
    for key in a:
        if key.startswith("unpacked"):
            assert len(a[key]) == len(b[key])
            for s, t in zip(a[key], b[key]):
                _assert_same(s, t)
        else:
            _assert_same(a[key], b[key])


@pytest.mark.parametrize("perm", [[2, 0, 1], [0], [3, 1, 0, 2], None])
def test_invert_permutation(perm):
    a = trnn.invert_permutation(None if perm is None else torch.tensor(perm))
    b = frnn.invert_permutation(None if perm is None else fg.tensor(perm))
    _assert_same(a, b) if perm is not None else (a, b) == (None, None)


def _constructors(L, R):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    bs = L.tensor([2, 1])
    return {
        "plain": lambda: R.PackedSequence(x, bs),
        "pair": lambda: R.PackedSequence((x, bs)),
        "sorted": lambda: R.PackedSequence(x, bs, L.tensor([1, 0])).unsorted_indices,
        "both": lambda: R.PackedSequence(x, bs, L.tensor([1, 0]), L.tensor([0, 1])).unsorted_indices,
        "no batch sizes": lambda: R.PackedSequence(x),
        "pair of three": lambda: R.PackedSequence((x, bs, bs)),
    }


@pytest.mark.parametrize("case", list(_constructors(torch, trnn)))
def test_packed_sequence_constructor(case):
    a = _outcome(_constructors(torch, trnn)[case])
    b = _outcome(_constructors(fg, frnn)[case])
    if isinstance(a, tuple) and isinstance(a[0], str):
        assert a == b
    elif isinstance(a, tuple):
        assert type(a).__name__ == type(b).__name__
        for s, t in zip(a, b):
            (_assert_same(s, t) if s is not None else t is None)
    else:
        _assert_same(a, b)


def _errors(L, R):
    x = L.tensor(np.random.default_rng(0).standard_normal((4, 3, 2)))
    packed = R.pack_padded_sequence(x, [4, 2, 1])
    return {
        "unsorted lengths": lambda: R.pack_padded_sequence(x, [1, 4, 2]),
        "unsorted with a zero": lambda: R.pack_padded_sequence(x, [4, 0, 1]),
        "zero length": lambda: R.pack_padded_sequence(x, [4, 2, 0]),
        "negative length": lambda: R.pack_padded_sequence(x, [4, 2, -1]),
        "zero length unsorted": lambda: R.pack_padded_sequence(x, [0, 4, 2], enforce_sorted=False),
        "too few lengths": lambda: R.pack_padded_sequence(x, [4, 2]),
        "too many lengths batch_first": lambda: R.pack_padded_sequence(x, [4, 2, 1], batch_first=True),
        "2-d lengths": lambda: R.pack_padded_sequence(x, L.tensor([[4, 2, 1]])),
        "0-d lengths": lambda: R.pack_padded_sequence(x, L.tensor(3)),
        "empty input": lambda: R.pack_padded_sequence(L.zeros(0, 3), [1, 1, 1]),
        "empty input, bad lengths": lambda: R.pack_padded_sequence(L.zeros(4, 3, 0), [[1, 1, 1]]),
        "1-d input": lambda: R.pack_padded_sequence(L.zeros(4), [1, 1, 1]),
        "1-d input batch_first": lambda: R.pack_padded_sequence(L.zeros(4), L.tensor([[1]]), batch_first=True),
        "total_length too small": lambda: R.pad_packed_sequence(packed, total_length=3),
        "empty sequence list": lambda: R.pack_sequence([]),
        "pack_sequence unsorted": lambda: R.pack_sequence([L.ones(2), L.ones(3)]),
    }


@pytest.mark.parametrize("case", list(_errors(torch, trnn)))
def test_pack_errors(case):
    expected = _outcome(_errors(torch, trnn)[case])
    got = _outcome(_errors(fg, frnn)[case])
    assert isinstance(expected, tuple) and isinstance(expected[0], str), expected
    assert got == expected


def test_lengths_longer_than_the_input_pack_the_steps_there_are():
    # torch's slices clamp to the input's length while its batch sizes count every length
    for enforce_sorted, lengths in ((True, [5, 2, 1]), (False, [4, 5, 1])):
        a = trnn.pack_padded_sequence(_padded(torch, (4, 3, 2)), lengths, enforce_sorted=enforce_sorted)
        b = frnn.pack_padded_sequence(_padded(fg, (4, 3, 2)), lengths, enforce_sorted=enforce_sorted)
        _assert_same(a.data, b.data)
        _assert_same(a.batch_sizes, b.batch_sizes)


def test_pad_packed_int_data_and_padding_value():
    a = trnn.pad_packed_sequence(trnn.pack_sequence([torch.tensor([1, 2, 3]), torch.tensor([4, 5])]),
                                 batch_first=True, padding_value=7.9, total_length=5)
    b = frnn.pad_packed_sequence(frnn.pack_sequence([fg.tensor([1, 2, 3]), fg.tensor([4, 5])]),
                                 batch_first=True, padding_value=7.9, total_length=5)
    _assert_same(a[0], b[0])
    _assert_same(a[1], b[1])


# ------------------------------------------------------------------ recurrent layers


def _run_packed_rnn(L, R, mode, num_layers, bidirectional, batch_first, with_hx, lengths, enforce_sorted,
                    proj_size=0):
    L.manual_seed(0)
    kwargs = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    if proj_size:
        kwargs["proj_size"] = proj_size
    m = getattr(L.nn, mode)(3, 5, **kwargs).double()
    B, T = len(lengths), max(lengths)
    x = _padded(L, (B, T, 3) if batch_first else (T, B, 3), seed=1)
    D = num_layers * (2 if bidirectional else 1)
    h0 = _padded(L, (D, B, proj_size or 5), seed=2)
    c0 = _padded(L, (D, B, 5), seed=3)
    p = R.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    hx = ((h0, c0) if mode == "LSTM" else h0) if with_hx else None
    out, hidden = m(p, hx)
    h, c = hidden if mode == "LSTM" else (hidden, hidden)
    padded, out_lengths = R.pad_packed_sequence(out, batch_first=batch_first)
    (padded.square().sum() + (h * 1.3).sum() + c.sin().sum()).backward()
    res = dict(kind=type(out).__name__, data=out.data, batch_sizes=out.batch_sizes, sorted=out.sorted_indices,
               unsorted=out.unsorted_indices, padded=padded, lengths=out_lengths, h=h, c=c, x_grad=x.grad,
               data_node=type(out.data.grad_fn).__name__, h_node=type(h.grad_fn).__name__,
               h0_grad=h0.grad if with_hx else None, c0_grad=c0.grad if with_hx and mode == "LSTM" else None)
    for name, parameter in m.named_parameters():
        res[name] = parameter.grad
    return res


RNN_CASES = [(mode, layers, bidir, bf, hx, lengths, es)
             for mode, layers, bidir, bf, hx in itertools.product(("RNN", "GRU", "LSTM"), (1, 2), (False, True),
                                                                 (False, True), (False, True))
             for lengths, es in ((([3, 5, 1, 5], False),) if (layers + bidir + bf + hx) % 2 else (([5, 3, 3, 1], True),))]


@pytest.mark.parametrize("mode,num_layers,bidirectional,batch_first,with_hx,lengths,enforce_sorted", RNN_CASES)
def test_rnn_over_packed_sequence(mode, num_layers, bidirectional, batch_first, with_hx, lengths, enforce_sorted):
    args = (mode, num_layers, bidirectional, batch_first, with_hx, lengths, enforce_sorted)
    a = _run_packed_rnn(torch, trnn, *args)
    b = _run_packed_rnn(fg, frnn, *args)
    assert a.keys() == b.keys()
    for key in a:
        if a[key] is None:
            assert b[key] is None, key
        else:
            _assert_same(a[key], b[key], exact=not hasattr(a[key], "detach") or a[key].dtype == torch.int64)


@pytest.mark.parametrize("bidirectional,with_hx", [(False, True), (True, False), (True, True)])
def test_lstm_projection_over_packed_sequence(bidirectional, with_hx):
    args = ("LSTM", 2, bidirectional, False, with_hx, [2, 4, 3], False, 3)
    a = _run_packed_rnn(torch, trnn, *args)
    b = _run_packed_rnn(fg, frnn, *args)
    for key in a:
        if a[key] is not None:
            _assert_same(a[key], b[key], exact=not hasattr(a[key], "detach") or a[key].dtype == torch.int64)


def test_rnn_over_packed_sequence_in_training_mode_with_dropout_zero_and_float32():
    outs = []
    for L, R in LIBS:
        L.manual_seed(0)
        m = L.nn.GRU(2, 3, num_layers=2)
        x = L.tensor(np.random.default_rng(4).standard_normal((3, 2, 2)), dtype=L.float32)
        out, h = m(R.pack_padded_sequence(x, [3, 2]))
        outs.append((out.data, h))
    for s, t in zip(*outs):
        np.testing.assert_allclose(_np(s), _np(t), rtol=1e-5, atol=1e-6)


def _rnn_errors(L, R):
    L.manual_seed(0)
    lstm = L.nn.LSTM(3, 4)
    gru = L.nn.GRU(3, 4, num_layers=2)
    x = L.tensor(np.random.default_rng(0).standard_normal((4, 3, 3)), dtype=L.float32)
    p = R.pack_padded_sequence(x, [4, 2, 1])
    pu = R.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
    wide = R.pack_padded_sequence(L.zeros(4, 3, 2), [4, 2, 1])
    return {
        "hidden batch": lambda: gru(p, L.zeros(2, 2, 4)),
        "hidden size": lambda: gru(p, L.zeros(2, 3, 5)),
        "lstm cell size": lambda: lstm(p, (L.zeros(1, 3, 4), L.zeros(1, 3, 3))),
        "lstm hidden size": lambda: lstm(p, (L.zeros(1, 3, 2), L.zeros(1, 3, 4))),
        "unsorted hidden batch": lambda: gru(pu, L.zeros(2, 2, 4)),
        "input size": lambda: lstm(wide),
        "dtype": lambda: lstm(p.double()),
        "3-d data": lambda: gru(R.PackedSequence(x, L.tensor([3, 3, 3, 3]))),
        "rnn dtype": lambda: L.nn.RNN(3, 4)(p.double()),
        "rnn input size": lambda: L.nn.RNN(2, 4)(p),
        "lstm both sizes": lambda: lstm(p, (L.zeros(1, 3, 5), L.zeros(1, 3, 5))),
        "lstm small batch": lambda: lstm(p, (L.zeros(1, 2, 4), L.zeros(1, 2, 4))),
        "lstm large batch": lambda: lstm(p, (L.zeros(1, 4, 4), L.zeros(1, 4, 4))),
        "lstm extra layer": lambda: lstm(p, (L.zeros(2, 3, 4), L.zeros(2, 3, 4))),
        "lstm 2-d states": lambda: lstm(p, (L.zeros(3, 4), L.zeros(3, 4))),
        "lstm states dtype": lambda: lstm(p, (L.zeros(1, 3, 4, dtype=L.float64), L.zeros(1, 3, 4))),
        "bidirectional odd states": lambda: L.nn.LSTM(3, 4, bidirectional=True)(p, (L.zeros(1, 3, 4),
                                                                                    L.zeros(1, 3, 4))),
        "two layers, one state": lambda: L.nn.LSTM(3, 4, num_layers=2)(p, (L.zeros(1, 3, 4), L.zeros(1, 3, 4))),
        "projection, equal sizes": lambda: L.nn.LSTM(3, 4, proj_size=2)(p, (L.zeros(1, 3, 4), L.zeros(1, 3, 4))),
        "projection, wrong h": lambda: L.nn.LSTM(3, 4, proj_size=2)(p, (L.zeros(1, 3, 3), L.zeros(1, 3, 4))),
    }


@pytest.mark.parametrize("case", list(_rnn_errors(torch, trnn)))
def test_rnn_packed_errors(case):
    expected = _outcome(_rnn_errors(torch, trnn)[case])
    got = _outcome(_rnn_errors(fg, frnn)[case])
    assert isinstance(expected, tuple) and isinstance(expected[0], str), expected
    assert got == expected


# ------------------------------------------------------------------ fg.compile


@pytest.mark.parametrize("enforce_sorted,tensor_lengths", [(True, False), (True, True), (False, False),
                                                           (False, True)])
def test_pack_lstm_pad_inside_compile_matches_eager(enforce_sorted, tensor_lengths):
    fg.manual_seed(0)
    m = fg.nn.LSTM(3, 4, bidirectional=True)
    x = fg.randn(5, 3, 3, requires_grad=True)

    def step(x, lengths):
        p = frnn.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
        out, (h, c) = m(p)
        padded, out_lengths = frnn.pad_packed_sequence(out, total_length=6)
        return padded.square().sum() + h.sum() + c.sum(), out_lengths

    compiled = fg.compile(step)
    runs = [[5, 3, 1], [5, 5, 2]] if enforce_sorted else [[3, 5, 1], [2, 2, 5]]
    for lengths in runs:
        given = fg.tensor(lengths) if tensor_lengths else lengths
        results = []
        for fn in (step, compiled):
            x.grad = None
            m.zero_grad()
            loss, out_lengths = fn(x, given)
            loss.backward()
            results.append((loss, out_lengths, x.grad.clone(), m.weight_hh_l0_reverse.grad.clone()))
        (le, lens_e, gx_e, gw_e), (lc, lens_c, gx_c, gw_c) = results
        _assert_same(lens_e, lens_c)
        np.testing.assert_allclose(_np(lc), _np(le), rtol=1e-6)
        np.testing.assert_allclose(_np(gx_c), _np(gx_e), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(gw_c), _np(gw_e), rtol=1e-5, atol=1e-6)
