"""Round 32 of torch parity (probes O and P): an in-place op whose operand is a view of the
tensor it writes (`b.add_(b.view(3))`) reaches the gradient of the operand's value before
the write, and the view's history is regenerated from the new one afterwards.

The operand's edge used to be taken after the write, when the view was already stale: it
was regenerated from the tensor's old node then and kept that history, so a backward
through the view silently lost the write (a.grad [2, 2, 2] where torch's is [4, 4, 4])."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

STATEMENTS = ["b.add_(w)", "b.sub_(w)", "b.add_(w, alpha=2.0)", "w.add_(b)", "b.copy_(w * 3)",
              "b[:] = w * 2", "b.lerp_(w * 1, 0.3)", "b.mul_(w)", "b.addcmul_(w, w, value=0.5)"]


def _walk(node, depth=0):
    if node is None:
        return None
    return node.name(), [_walk(n, depth + 1) for n, _ in node.next_functions] if depth < 4 else "..."


def _run(L, statement: str):
    a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    w = b.view(3)
    exec(statement, {"b": b, "w": w})
    try:
        (w.sum() + (b * b).sum()).backward()
    except RuntimeError as error:       # (mul_ and addcmul_ save w, which the write changed)
        return "raises", str(error)[:60]
    return a.grad.tolist(), w.tolist(), _walk(w.grad_fn), _walk(b.grad_fn)


@pytest.mark.parametrize("statement", STATEMENTS)
def test_in_place_op_reading_a_view_of_its_tensor(statement):
    assert _run(fg, statement) == _run(torch, statement)


def test_fg_grad_through_such_a_write():
    def f(x):
        b = x * 2
        w = b.view(3)
        b.add_(w)
        return w.sum()
    g = fg.grad(f)(fg.tensor([1.0, 2.0, 3.0]))
    assert g.tolist() == [4.0, 4.0, 4.0]
    assert fg.compile(fg.grad(f))(fg.tensor([1.0, 2.0, 3.0])).tolist() == [4.0, 4.0, 4.0]


# torch's copy_to for `t[key] = value` (probe P): a value of another shape drops its leading 1s
# and is expanded; where that adds only size-1 dims over the same memory, in other strides, it
# is the partial-overlap error (`b[0] = b` of a (1, 1) b), and a 0-d value fills.
SETITEMS = [("b[0] = b", (1, 1)), ("b[0] = b", (1, 1, 1)), ("b[0] = b", (1, 2)), ("b[0] = b[0:1]", (1, 1)),
            ("b[0] = b[0]", (1, 1)), ("b[0, 0] = b[0, 0]", (1, 1)), ("b[:] = b[None]", (1, 2)),
            ("b[:] = b[None]", (1, 1)), ("b[:] = b[None]", (1, 3, 1)), ("b[0] = b.t()", (1, 1)),
            ("b[0] = b[:, :, 0]", (1, 1, 2)), ("b[0] = b", (2, 3)), ("b[:, 0] = b[0]", (3, 3))]


def _setitem(L, statement, shape):
    b = L.ones(*shape)
    try:
        exec(statement, {"b": b})
    except RuntimeError as error:
        return str(error)
    return b.tolist()


@pytest.mark.parametrize("statement, shape", SETITEMS, ids=[f"{s}-{shape}" for s, shape in SETITEMS])
def test_setitem_of_a_value_sharing_the_memory(statement, shape):
    assert _setitem(fg, statement, shape) == _setitem(torch, statement, shape)


# ---- probe R: optimizer and module hooks, load_state_dict of a named optimizer
def _optimizer_hooks(L):
    log = []
    p = L.nn.Parameter(L.ones(2))
    opt = L.optim.SGD([p], lr=0.1)
    first = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), a[0] is o, sorted(k))))
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", len(a))))
    opt.register_state_dict_pre_hook(lambda o: log.append("state_dict pre"))
    opt.register_state_dict_post_hook(lambda o, sd: log.append(("state_dict post", sorted(sd))))
    opt.register_state_dict_post_hook(lambda o, sd: log.append("prepended"), prepend=True)
    opt.register_load_state_dict_pre_hook(lambda o, sd: log.append(("load pre", sorted(sd))))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load post"))
    p.grad = L.ones(2)
    opt.step()
    opt.step(lambda: L.tensor(1.0))
    opt.step(closure=lambda: L.tensor(2.0))
    first.remove()
    opt.step()
    opt.load_state_dict(opt.state_dict())
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: L.tensor(5.0)}))
    log.append(("returned", float(opt.step())))
    opt.register_step_pre_hook(lambda o, a, k: 3)
    try:
        opt.step()
    except RuntimeError as error:
        log.append(str(error).split(" must ")[1])
    return log, p.tolist()


def test_optimizer_hooks_run_as_torchs():
    assert _optimizer_hooks(fg) == _optimizer_hooks(torch)


def test_load_state_dict_keeps_the_optimizers_parameter_names():
    def names(L):
        model = L.nn.Linear(3, 2)
        opt = L.optim.Adam(model.named_parameters())
        opt.load_state_dict(L.optim.Adam(model.parameters()).state_dict())
        return opt.param_groups[0].get("param_names"), opt.state_dict()["param_groups"][0].get("param_names")
    assert names(fg) == names(torch) == (["weight", "bias"], ["weight", "bias"])


def _always_called_hooks(L):
    import warnings
    log = []

    class Raises(L.nn.Module):
        def forward(self, a):
            raise ValueError("boom")

    def broken(module, args, output):
        raise KeyError("inner")

    m = Raises()
    m.register_forward_hook(lambda mod, args, out: log.append(("plain", out)))
    m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, kw, out: log.append(("kwargs", out, kw)), always_call=True,
                            with_kwargs=True)
    m.register_forward_hook(broken, always_call=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            m(L.ones(1))
        except ValueError as error:
            log.append(("raised", str(error)))
    log.append([str(w.message) for w in caught])
    return log


def test_forward_hooks_with_always_call_run_when_forward_raises():
    assert _always_called_hooks(fg) == _always_called_hooks(torch)


def _vectors(L):
    L.manual_seed(0)
    model = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.ReLU(), L.nn.Linear(2, 1))
    vector = L.nn.utils.parameters_to_vector(model.parameters())
    out = [tuple(vector.shape), type(vector.grad_fn).__name__, [round(v, 6) for v in vector.tolist()]]
    values = L.arange(float(vector.numel()))
    L.nn.utils.vector_to_parameters(values, model.parameters())
    out += [[p.tolist() for p in model.parameters()], model[0].weight.requires_grad]
    values[0] = 100.0                   # (the parameters share the vector's memory, as torch's)
    out.append(model[0].weight[0, 0].item())
    try:
        L.nn.utils.vector_to_parameters([1, 2], model.parameters())
    except TypeError as error:
        out.append(str(error))
    return out


def test_parameters_to_vector_and_back():
    assert _vectors(fg) == _vectors(torch)


# ---- probe Q: in-place view ops (t_, transpose_, unsqueeze_, squeeze_) on a tensor with views
# and history. A view made before reads the same memory afterwards (its chain is replayed
# through the inverse of the base's change, as torch's as_strided regeneration); under
# no_grad the node keeps its old shape and the engine sums or refuses a gradient of another
# shape, as torch's validate_outputs.
import itertools  # noqa: E402

METADATA_OPS = ["unsqueeze_(0)", "unsqueeze_(1)", "t_()", "transpose_(0, 1)", "squeeze_()", "detach_()"]
EARLIER_VIEWS = ["v[0]", "v[:, 1]", "v.t()", "v.view(4)", "v"]
GRID = list(itertools.product(METADATA_OPS, EARLIER_VIEWS, [True, False]))


def _metadata_write(L, op, view, no_grad):
    a = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    v = a * 2
    w = eval(view, {"v": v})
    if no_grad:
        with L.no_grad():
            eval("v." + op, {"v": v})
    else:
        eval("v." + op, {"v": v})
    try:
        (w * L.arange(w.numel(), dtype=L.float32).reshape(w.shape)).sum().backward()
    except RuntimeError as error:
        return "raises", str(error)
    return tuple(a.grad.shape), a.grad.tolist(), w.tolist()


@pytest.mark.parametrize("op, view, no_grad", GRID, ids=[f"{o}-{v}-{'nograd' if n else 'grad'}" for o, v, n in GRID])
def test_in_place_view_op_then_backward_through_an_earlier_view(op, view, no_grad):
    assert _metadata_write(fg, op, view, no_grad) == _metadata_write(torch, op, view, no_grad)


def test_gradient_of_a_shape_changed_under_no_grad_is_summed_or_refused():
    def run(L, op):
        a = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = a * a.t()
        with L.no_grad():
            eval("v." + op, {"v": v})
        try:
            (v * 3).sum().backward()
        except RuntimeError as error:
            return str(error)
        return a.grad.tolist()
    for op in ("unsqueeze_(0)", "unsqueeze_(1)", "t_()"):
        assert run(fg, op) == run(torch, op), op


def test_requires_grad_of_a_split_part_after_its_base_was_written():
    def run(L):
        a = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        u = a * 2
        part = u.unbind(0)[1]
        u.add_(1)
        out = [part.requires_grad]
        for attr in ("is_leaf", "grad_fn"):
            try:
                getattr(part, attr)
            except RuntimeError as error:
                out.append(str(error)[:60])
        return out
    assert run(fg) == run(torch)


# ---- probe S: the autograd engine
def test_backward_inputs_makes_a_non_leaf_retain_its_grad():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        z = (y * y).sum()
        z.backward(inputs=[y], retain_graph=True)
        out = [y.retains_grad, y.grad.tolist(), x.grad]
        z.backward(retain_graph=True)           # (y keeps collecting, as torch's retain_grad)
        (y * 3).sum().backward()
        return out + [y.grad.tolist(), x.grad.tolist()]
    assert run(fg) == run(torch)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_a_view_made_without_grad_as_input_or_root(mode):
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with getattr(L, mode)():
            v = x[1:]
        y = (x * 2).sum()
        out = [L.autograd.grad(y, [v], retain_graph=True, allow_unused=True)]
        for call in (lambda: L.autograd.grad(y, [v], retain_graph=True), lambda: v.backward(L.ones(2))):
            try:
                call()
            except RuntimeError as error:
                out.append(str(error))
        return out
    assert run(fg) == run(torch)


def test_a_view_of_a_normal_tensor_made_in_inference_mode_is_normal():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        g = (x * 1).detach()
        with L.inference_mode():
            v = g.unsqueeze(0)
        y = (x * v).sum()
        y.backward()
        return v.is_inference(), y.item(), x.grad.tolist()
    assert run(fg) == run(torch)


def test_autograd_grad_captures_before_the_hooks_of_a_node_it_runs_through():
    """torch's engine captures an input's gradient before its tensor hooks where the node
    runs on (another input needs its VJP), after them where it does not."""
    def run(L):
        out = []
        for outputs, inputs, seed in (("z", ("y", "x"), None), ("y", ("y", "x"), "ones"), ("y", ("y",), "ones"),
                                      ("z", ("y",), None)):
            x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            y = x * 1
            y.register_hook(lambda g: g * 2)
            z = (y * 3).sum()
            scope = {"x": x, "y": y, "z": z}
            grads = L.autograd.grad(scope[outputs], [scope[k] for k in inputs],
                                    L.ones(3) if seed else None)
            out.append([g.tolist() for g in grads])
        return out
    assert run(fg) == run(torch)


@pytest.mark.parametrize("op", ["unsqueeze_(0)", "unsqueeze_(1)"])
def test_shape_changed_under_no_grad_with_create_graph(op):
    """The create_graph backward (engine.GraphProgram) reconciles the shapes as the plain one."""
    def run(L):
        a = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = a * a
        with L.no_grad():
            eval("v." + op, {"v": v})
        try:
            g, = L.autograd.grad((v * 3).sum(), [a], create_graph=True)
            h, = L.autograd.grad(g.sum(), [a])
        except RuntimeError as error:
            return str(error)
        return g.tolist(), h.tolist()
    assert run(fg) == run(torch)


# ---- probe R: ParameterList and ParameterDict
def _parameter_containers(L):
    out = []
    plist = L.nn.ParameterList([L.nn.Parameter(L.ones(3)), L.zeros(2, 2)])
    plist.append(L.ones(1))
    plist.extend([L.ones(2)])
    plist += [L.ones(4)]
    out += [len(plist), [type(p).__name__ for p in plist], [n for n, _ in plist.named_parameters()],
            repr(plist).replace("torch.", "").replace("fg.", ""), tuple(plist[-1].shape), len(plist[1:3]),
            type(plist[1:3]).__name__]
    for call, kind in ((lambda: plist[9], IndexError), (lambda: plist(1), RuntimeError),
                       (lambda: plist.extend(L.ones(2)), TypeError)):
        try:
            call()
        except kind as error:
            out.append(str(error))
    pdict = L.nn.ParameterDict({"b": L.ones(2), "a": L.nn.Parameter(L.zeros(1))})
    pdict["c"] = L.ones(3)
    out += [list(pdict.keys()), [n for n, _ in pdict.named_parameters()], repr(pdict), "a" in pdict,
            tuple(pdict.pop("a").shape), list(pdict), len(pdict), pdict.get("zz", 5), pdict.popitem()[0]]
    for call, kind in ((lambda: pdict[1], TypeError), (lambda: pdict.update([("x",)]), ValueError)):
        try:
            call()
        except kind as error:
            out.append(str(error))
    pdict.update([("x", L.ones(1))])
    out.append(list(pdict.keys()))

    class Weighted(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = L.nn.ParameterList([L.nn.Parameter(L.ones(2) * i) for i in range(3)])

        def forward(self, x):
            return sum(w * x for w in self.ws)
    model = Weighted()
    model(L.ones(2)).sum().backward()
    out += [[p.grad.tolist() for p in model.parameters()], list(model.state_dict())]
    L.optim.SGD(model.parameters(), lr=0.1).step()
    out.append([p.tolist() for p in model.ws])
    return out


def test_parameter_list_and_dict_as_torchs():
    assert _parameter_containers(fg) == _parameter_containers(torch)
