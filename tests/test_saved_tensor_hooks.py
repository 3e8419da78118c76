"""torch.autograd.graph's saved-tensor hooks (fg.autograd.graph), against torch as the oracle:
which tensors a node packs and in what order, the grad mode each hook runs in, the values the
backward reads (packed copies, not the tensors written in place since), torch's errors, custom
Functions' ctx.saved_tensors, `_saved_*` attributes, save_on_cpu, disable_saved_tensors_hooks,
the Node type and increment_version."""
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _logging_hooks(L, log):
    """pack / unpack hooks recording (event, shape, grad mode, requires_grad, grad_fn name)."""
    def pack(t):
        log.append(("pack", tuple(t.shape), L.is_grad_enabled(), t.requires_grad,
                    type(t.grad_fn).__name__ if t.grad_fn is not None else None))
        return t.detach().clone()

    def unpack(p):
        log.append(("unpack", tuple(p.shape), L.is_grad_enabled()))
        return p
    return pack, unpack


def _outcome(call):
    try:
        return call()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)


def _packs_and_values(L):
    """Several nodes packed, their base written in place after: the backward reads the copies."""
    log = []
    pack, unpack = _logging_hooks(L, log)
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = L.tensor([[0.5], [2.0]], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * w
        z = y.exp()
        q = (z ** 2).sum() + x.tanh().sum()
    with L.no_grad():
        x.add_(1)                       # no version error: the hooks decide what backward reads
    q.backward()
    return log, x.grad.tolist(), w.grad.tolist()


def _pack_order(L):
    """The order each node packs its saved tensors (torch's: other before self; pow's exponent,
    self, result; clamp's min, max, self), and no packing of Python numbers or under no_grad."""
    log = []
    pack, unpack = _logging_hooks(L, log)
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = L.tensor([[0.5], [2.0]], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        x * 2
        L.atan2(x, w)
        x ** w
        L.clamp(x, w, w + 1)
        x / w
        with L.no_grad():
            x.exp()
    return log


def _create_graph(L):
    """Hooks around a create_graph gradient: unpacking runs with grad on, and the second
    derivative through a packed leaf (x * x * x saves x) is right."""
    log = []
    pack, unpack = _logging_hooks(L, log)
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.exp()
        g, = L.autograd.grad(y.sum(), x, create_graph=True)
        first = log[:]
        cube = (x * x * x).sum()
        g3, = L.autograd.grad(cube, x, create_graph=True)
        h, = L.autograd.grad(g3.sum(), x)
    return first, g.tolist(), g3.tolist(), h.tolist()


def _graph_shapes(L):
    """Views, multi-output nodes, a transpose, softmax and matmul, and an in-place write to a
    view of a non-leaf, all packed: the gradients match."""
    count = [0, 0]

    def pack(t):
        count[0] += 1
        return t.detach().clone()

    def unpack(p):
        count[1] += 1
        return p
    m = L.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
    a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        v, _ = m.max(1)
        s = (m[0] * m[:, 1]).sum() + v.sum() + m.t().exp().sum() + m.softmax(0).sum() + (m @ m).sum()
        b = a * 1
        b[1:].exp_()
        s = s + b.sum()
    s.backward()
    return m.grad.tolist(), a.grad.tolist(), count


def _retained_graph(L):
    """Each backward unpacks again; the freed graph's error after the last."""
    log = []
    pack, unpack = _logging_hooks(L, log)
    x = L.tensor([1.0, 2.0], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.exp()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    return log, x.grad.tolist(), _outcome(lambda: y.sum().backward())


def _bad_unpack(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(lambda t: 5, lambda p: p):
        y = x.exp()
    return _outcome(lambda: y.sum().backward())


def _other_dtype_unpacked(L):
    """An unpack_hook returning float64: the gradient is still the leaf's float32."""
    x = L.tensor([1.0, 2.0], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p.double()):
        y = x.exp()
    y.sum().backward()
    return str(x.grad.dtype).split(".")[-1], x.grad.tolist()


def _disabled(L):
    G = L.autograd.graph
    outcomes = []
    with G.saved_tensors_hooks(lambda t: t, lambda p: p):
        outcomes.append(_outcome(lambda: G.disable_saved_tensors_hooks("not here").__enter__()))
    with G.disable_saved_tensors_hooks("outer"):
        with G.disable_saved_tensors_hooks("inner"):
            outcomes.append(_outcome(lambda: G.saved_tensors_hooks(lambda t: t, lambda p: p).__enter__()))
        outcomes.append(_outcome(lambda: G.saved_tensors_hooks(lambda t: t, lambda p: p).__enter__()))
    with G.saved_tensors_hooks(lambda t: t, lambda p: p):
        outcomes.append("registered again")
    return outcomes


def _custom_function_and_attribute(L):
    log = []
    pack, unpack = _logging_hooks(L, log)

    class Double(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            a, = ctx.saved_tensors
            return grad * a
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = Double.apply(x)
        z = x * x
    y.sum().backward()
    saved_self = z.grad_fn._saved_self.tolist()
    return log, x.grad.tolist(), saved_self


@pytest.mark.parametrize("pin_memory", [False, True])
def test_save_on_cpu(pin_memory):
    """save_on_cpu keeps a CPU tensor itself (a write after the forward reaches the backward,
    with no version error), with pin_memory a copy (it does not)."""
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with L.autograd.graph.save_on_cpu(pin_memory=pin_memory):
            y = x.exp()
            z = (x * x).sum()
        with L.no_grad():
            y.mul_(2)
            x.mul_(2)
        (y.sum() + z).backward()
        return x.grad.tolist()
    assert run(fg) == run(torch)


def _node_and_versions(L):
    G = L.autograd.graph
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    facts = [isinstance(y.grad_fn, G.Node), isinstance(x, G.Node), issubclass(type(y.grad_fn), G.Node),
             _outcome(lambda: G.Node())[0]]
    G.increment_version(y)
    G.increment_version([x, x])
    facts += [y._version, x._version, _outcome(lambda: y.sum().backward())[0]]
    return facts


CASES = [_packs_and_values, _pack_order, _create_graph, _graph_shapes, _retained_graph, _bad_unpack,
         _other_dtype_unpacked, _disabled, _custom_function_and_attribute, _node_and_versions]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_matches_torch(case):
    assert case(fg) == case(torch)


def test_compiled_call_inside_hooks_gives_torchs_gradient():
    """A compiled call's node keeps its own program's values (the hooks do not see them): its
    forward and gradient under the hooks are torch's."""
    def f(L, z):
        return (z.exp() * z).sum()
    packed = []
    results = []
    for L, compile_fn in ((torch, lambda fn: fn), (fg, fg.compile)):
        z = L.tensor([0.5, 1.5], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda p: p):
            r = compile_fn(lambda z: f(L, z))(z)
        r.backward()
        results.append((round(r.item(), 5), [round(g, 5) for g in z.grad.tolist()]))
    assert results[0] == results[1]
