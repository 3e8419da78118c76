"""CTC loss against torch: F.ctc_loss, nn.CTCLoss and torch.ctc_loss (its reduction an int).

- Values and gradients of torch's CPU kernel (the alpha/beta recursions in log space, its
  gradient formula that assumes log_softmax inputs) for padded and concatenated targets,
  unbatched inputs, float32 and float64, each reduction, blank positions, repeated labels,
  empty targets and inputs, impossible alignments with and without zero_infinity.
- The nodes torch records (CtcLossBackward0, WhereBackward0, DivBackward0, MeanBackward0...),
  the second derivative's error, and torch's errors and their order.
- fg.compile of a function calling ctc_loss: the eager value and gradient.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

TF = torch.nn.functional
FF = fg.nn.functional


def _outcome(call):
    """call()'s result, or the exception's class name and text: the outcome compared with torch's."""
    try:
        return call()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)


def _case(seed, T, N, C, S, dtype=np.float32, blank=0, repeat=False):
    """log_probs (a log_softmax), padded targets avoiding the blank, and lengths."""
    rng = np.random.default_rng(seed)
    lp = rng.standard_normal((T, N, C)).astype(dtype)
    lp = lp - np.log(np.exp(lp.astype(np.float64)).sum(-1, keepdims=True)).astype(dtype)
    labels = [c for c in range(C) if c != blank]
    targets = rng.choice(labels, size=(N, S)).astype(np.int64)
    if repeat:
        targets[:, 1::2] = targets[:, 0::2][:, :targets[:, 1::2].shape[1]]
    target_lengths = rng.integers(0, S + 1, N)
    target_lengths[0] = S
    input_lengths = rng.integers(max(1, T // 2), T + 1, N)
    input_lengths[0] = T
    return lp, targets, input_lengths, target_lengths


def _both(lp, targets, input_lengths, target_lengths, lengths_as="tensor", **kw):
    """(torch's loss and gradient by log_probs, fusegrad's), for one F.ctc_loss call."""
    out = []
    for lib, F in ((torch, TF), (fg, FF)):
        x = lib.tensor(lp, requires_grad=True)
        t = lib.tensor(targets)
        if lengths_as == "tensor":
            il, tl = lib.tensor(np.asarray(input_lengths)), lib.tensor(np.asarray(target_lengths))
        elif lengths_as == "list":
            il, tl = [int(v) for v in input_lengths], [int(v) for v in target_lengths]
        else:
            il, tl = tuple(int(v) for v in input_lengths), tuple(int(v) for v in target_lengths)
        loss = F.ctc_loss(x, t, il, tl, **kw)
        grad, = lib.autograd.grad(loss.sum(), x)
        out.append((loss.detach().numpy(), grad.numpy(), type(loss.grad_fn).__name__))
    return out


def _close(a, b):
    """Equal to torch's values: the same operations in the same order (libm's exp and log);
    a tolerance of a few units in the last place where a libm may round differently."""
    assert a.dtype == b.dtype and a.shape == b.shape
    tol = 1e-5 if a.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(6, 3, 5, 3), (12, 4, 7, 5), (1, 2, 3, 1), (20, 1, 4, 6)])
def test_padded_targets(shape, reduction, dtype):
    """Padded (N, S) targets, lengths as tensors."""
    case = _case(sum(shape), *shape, dtype=dtype)
    (a, ga, na), (b, gb, nb) = _both(*case, reduction=reduction)
    _close(a, b)
    _close(ga, gb)
    assert na == nb


@pytest.mark.parametrize("lengths_as", ["list", "tuple", "tensor"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_concatenated_targets(lengths_as, reduction):
    """1-d targets: each sample's labels one after the other."""
    lp, targets, il, tl = _case(3, 9, 4, 6, 4, dtype=np.float64)
    flat = np.concatenate([targets[b, :tl[b]] for b in range(4)])
    (a, ga, na), (b, gb, nb) = _both(lp, flat, il, tl, lengths_as=lengths_as, reduction=reduction)
    _close(a, b)
    _close(ga, gb)
    assert na == nb


@pytest.mark.parametrize("blank", [0, 2, 5])
@pytest.mark.parametrize("repeat", [False, True])
def test_blank_positions_and_repeated_labels(blank, repeat):
    """The blank anywhere in the label range; repeated labels (which need a blank between)."""
    case = _case(7 + blank, 10, 3, 6, 4, blank=blank, repeat=repeat)
    (a, ga, _), (b, gb, _) = _both(*case, reduction="none", blank=blank)
    _close(a, b)
    _close(ga, gb)


def test_label_equal_to_blank():
    """A target label equal to the blank: torch accepts it, and its gradient overwrites the blank's."""
    lp, targets, il, tl = _case(11, 7, 2, 4, 3)
    targets[0, 1] = 0
    (a, ga, _), (b, gb, _) = _both(lp, targets, il, tl, reduction="sum")
    _close(a, b)
    _close(ga, gb)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_impossible_alignments(zero_infinity, reduction):
    """Inputs too short for their targets (repeats need a blank between): an infinite loss and
    NaN gradients, or with zero_infinity both zeroed; empty targets and empty inputs."""
    lp, targets, _, _ = _case(5, 6, 5, 5, 4)
    targets[1] = [1, 1, 1, 2]             # needs 7 steps
    il = [6, 6, 2, 0, 0]
    tl = [4, 4, 3, 0, 2]
    (a, ga, na), (b, gb, nb) = _both(lp, targets, il, tl, reduction=reduction, zero_infinity=zero_infinity)
    np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
    np.testing.assert_array_equal(np.isnan(ga), np.isnan(gb))
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))      # (-0.0 for an empty input and target)
    _close(np.nan_to_num(a), np.nan_to_num(b))
    _close(np.nan_to_num(ga), np.nan_to_num(gb))
    assert na == nb


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("targets_1d", [False, True])
def test_unbatched(reduction, targets_1d):
    """log_probs (T, C): one sample, unsqueezed, the 'none' result squeezed back."""
    lp, targets, _, _ = _case(2, 8, 1, 5, 3)
    tg = targets[0] if targets_1d else targets
    out = []
    for lib, F in ((torch, TF), (fg, FF)):
        x = lib.tensor(lp[:, 0], requires_grad=True)
        loss = F.ctc_loss(x, lib.tensor(tg), lib.tensor([8]), lib.tensor([3]), reduction=reduction)
        grad, = lib.autograd.grad(loss, x)
        fn = loss.grad_fn
        out.append((loss.detach().numpy(), grad.numpy(), type(fn).__name__,
                    [type(f).__name__ for f, _ in fn.next_functions]))
    (a, ga, *na), (b, gb, *nb) = out
    _close(a, b)
    _close(ga, gb)
    assert na == nb


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_graph(reduction, zero_infinity):
    """The nodes torch records, two levels deep, and no edge to the targets or lengths."""
    lp, targets, il, tl = _case(1, 5, 2, 4, 2)
    out = []
    for lib, F in ((torch, TF), (fg, FF)):
        x = lib.tensor(lp, requires_grad=True)
        loss = F.ctc_loss(x, lib.tensor(targets).to(lib.float32), lib.tensor(il), lib.tensor(tl),
                          reduction=reduction, zero_infinity=zero_infinity)

        def names(fn, depth):
            if fn is None or depth == 0:
                return type(fn).__name__
            return (type(fn).__name__, [names(f, depth - 1) for f, _ in fn.next_functions])
        out.append(names(loss.grad_fn, 4))
    assert out[0] == out[1]


def test_second_derivative_raises():
    """torch's gradient op has no derivative: a create_graph gradient's backward raises."""
    lp, targets, il, tl = _case(4, 5, 2, 4, 2, dtype=np.float64)
    out = []
    for lib, F in ((torch, TF), (fg, FF)):
        x = lib.tensor(lp, requires_grad=True)
        loss = F.ctc_loss(x, lib.tensor(targets), lib.tensor(il), lib.tensor(tl))
        g, = lib.autograd.grad(loss, x, create_graph=True)
        out.append((type(g.grad_fn).__name__, _outcome(lambda: lib.autograd.grad(g.sum(), x))))
    assert out[0] == out[1]


@pytest.mark.parametrize("reduction", [0, 1, 2, 5, -1])
def test_aten_form(reduction):
    """torch.ctc_loss: the reduction an int (other numbers: no reduction); list lengths."""
    lp, targets, il, tl = _case(6, 6, 3, 5, 3)
    out = []
    for lib in (torch, fg):
        loss = lib.ctc_loss(lib.tensor(lp), lib.tensor(targets), [int(v) for v in il], tuple(int(v) for v in tl),
                            0, reduction, False)
        out.append(loss.numpy())
    _close(*out)


def test_module():
    """nn.CTCLoss: torch's repr, attributes and values."""
    lp, targets, il, tl = _case(8, 6, 3, 5, 3)
    out = []
    for lib in (torch, fg):
        m = lib.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
        out.append((repr(m), m.blank, m.reduction, m.zero_infinity,
                    float(m(lib.tensor(lp), lib.tensor(targets), lib.tensor(il), lib.tensor(tl)))))
    assert out[0][:4] == out[1][:4]
    assert out[0][4] == pytest.approx(out[1][4], rel=1e-6)
    assert repr(fg.nn.CTCLoss()) == repr(torch.nn.CTCLoss()) == "CTCLoss()"


def _error_calls(L, F):
    """Bad calls, each a function of (library, functional)."""
    lp = L.tensor(_case(0, 6, 3, 5, 3)[0])
    tg = L.tensor(_case(0, 6, 3, 5, 3)[1])
    il, tl = L.tensor([6, 5, 4]), L.tensor([3, 2, 1])
    return {
        "blank too big": lambda: F.ctc_loss(lp, tg, il, tl, blank=5),
        "blank negative": lambda: F.ctc_loss(lp, tg, il, tl, blank=-1),
        "input length too long": lambda: F.ctc_loss(lp, tg, L.tensor([7, 5, 4]), tl),
        "input length negative": lambda: F.ctc_loss(lp, tg, L.tensor([6, -1, 4]), tl),
        "target length negative": lambda: F.ctc_loss(lp, tg, il, L.tensor([3, -2, 1])),
        "target length too long": lambda: F.ctc_loss(lp, tg, il, L.tensor([4, 2, 1])),
        "1-d targets too long": lambda: F.ctc_loss(lp, tg.flatten(), il, tl),
        "1-d targets, negative length": lambda: F.ctc_loss(lp, tg.flatten(), il, L.tensor([-1, 2, 1])),
        "input lengths size": lambda: F.ctc_loss(lp, tg, il[:2], tl),
        "target lengths size": lambda: F.ctc_loss(lp, tg, il, tl[:2]),
        "targets rows": lambda: F.ctc_loss(lp, tg[:2], il, tl),
        "log_probs 4-d": lambda: F.ctc_loss(lp[None], tg, il, tl),
        "log_probs 1-d": lambda: F.ctc_loss(lp[:, 0, 0], tg, il, tl),
        "log_probs 0-d": lambda: F.ctc_loss(lp[0, 0, 0], tg, il, tl),
        "targets 3-d": lambda: F.ctc_loss(lp, tg[:, :, None], il, tl),
        "targets 0-d": lambda: F.ctc_loss(lp, tg[0, 0], il, tl),
        "integer log_probs": lambda: F.ctc_loss(lp.long(), tg, il, tl),
        "empty log_probs": lambda: F.ctc_loss(lp[:0], tg, il, tl),
        "float input lengths": lambda: F.ctc_loss(lp, tg, il.float(), tl),
        "bool target lengths": lambda: F.ctc_loss(lp, tg, il, tl.bool()),
        "bad reduction": lambda: F.ctc_loss(lp, tg, il, tl, reduction="bad"),
        "mixed lengths": lambda: F.ctc_loss(lp, tg, [6, 5, 4], tl),
        "float lengths list": lambda: F.ctc_loss(lp, tg, (6, 5, 4), (3.0, 2, 1)),
        "float blank": lambda: F.ctc_loss(lp, tg, il, tl, blank=1.0),
        "int zero_infinity": lambda: F.ctc_loss(lp, tg, il, tl, zero_infinity=1),
        "one-element tensor with a tuple": lambda: F.ctc_loss(lp[:, :1], tg[:1], L.tensor([6]), (3,)),
        "aten form missing arguments": lambda: L.ctc_loss(lp, tg, il),
        # several wrong: torch's order
        "integer log_probs, float lengths": lambda: F.ctc_loss(lp.long(), tg, il.float(), tl),
        "integer log_probs, bad blank": lambda: F.ctc_loss(lp.long(), tg, il, tl, blank=9),
        "bad blank, lengths size": lambda: F.ctc_loss(lp, tg, il[:2], tl, blank=9),
        "targets 3-d, bad blank": lambda: F.ctc_loss(lp, tg[None], il, tl, blank=9),
        "negative target length, targets rows": lambda: F.ctc_loss(lp, tg[:2], il, L.tensor([-1, 2, 1])),
        "targets rows, input too long": lambda: F.ctc_loss(lp, tg[:2], L.tensor([9, 5, 4]), tl),
        "negative target length, input too long": lambda: F.ctc_loss(lp, tg, L.tensor([9, 5, 4]),
                                                                     L.tensor([-1, 2, 1])),
        "empty 2-d log_probs": lambda: F.ctc_loss(lp[:0, 0], tg, il, tl),
        "bad reduction, integer log_probs": lambda: F.ctc_loss(lp.long(), tg, il, tl, reduction="x"),
    }


@pytest.mark.parametrize("name", list(_error_calls(torch, TF)))
def test_errors(name):
    """torch's exception classes and texts, in torch's order where several apply."""
    expected = _outcome(_error_calls(torch, TF)[name])
    got = _outcome(_error_calls(fg, FF)[name])
    assert isinstance(expected, tuple), "torch accepted the call"
    assert got == expected


def test_out_of_range_label_raises():
    """A label outside [0, C): torch's CPU kernel reads whatever memory that index names;
    fusegrad raises instead (a deliberate difference, README)."""
    lp, targets, il, tl = _case(0, 6, 2, 5, 3)
    targets[1, 0] = 7
    with pytest.raises(RuntimeError, match="out of range"):
        FF.ctc_loss(fg.tensor(lp), fg.tensor(targets), fg.tensor(il), fg.tensor(tl))


def test_lengths_as_zero_dim_tensors_and_int_lists():
    """Lengths: a tuple of 0-d integer tensors is an int list to torch's parser; 2-d length
    tensors are read flattened."""
    lp, targets, il, tl = _case(9, 5, 2, 4, 2)
    out = []
    for lib, F in ((torch, TF), (fg, FF)):
        x, t = lib.tensor(lp), lib.tensor(targets)
        a = F.ctc_loss(x, t, (lib.tensor(int(il[0])), lib.tensor(int(il[1]))), [int(v) for v in tl], reduction="none")
        b = F.ctc_loss(x, t, lib.tensor(il)[None], lib.tensor(tl)[None], reduction="none")
        out.append((a.numpy(), b.numpy()))
    _close(out[0][0], out[1][0])
    _close(out[0][1], out[1][1])


@pytest.mark.parametrize("lengths_as", ["list", "tensor"])
def test_compiled(lengths_as):
    """fg.compile of a function calling ctc_loss: the eager value and gradient, on two calls
    with other lengths (the lengths are inputs of the program, not constants of it)."""
    def step(x, targets, il, tl):
        return FF.ctc_loss(x.log_softmax(2), targets, il, tl, reduction="mean")

    compiled = fg.compile(step)
    for seed in (0, 1):
        lp, targets, il, tl = _case(seed, 7, 3, 5, 3)
        il, tl = (list(map(int, il)), list(map(int, tl))) if lengths_as == "list" else (fg.tensor(il), fg.tensor(tl))
        results = []
        for fn in (step, compiled):
            x = fg.tensor(lp, requires_grad=True)
            loss = fn(x, fg.tensor(targets), il, tl)
            loss.backward()
            results.append((loss.detach().numpy(), x.grad.numpy()))
        _close(results[0][0], results[1][0])
        _close(results[0][1], results[1][1])
