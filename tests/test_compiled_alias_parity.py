"""What a compiled call returns, and what memory its results share, against torch eager.

Each probe runs one Python function three ways: with torch (the oracle), with fusegrad
eagerly and under fg.compile. Then the same steps run after the call (an in-place write
to one result, a backward through another) and everything observable is compared: the
structure of the result, values, shapes, dtypes, requires_grad, is_leaf, grad_fn names,
`.grad`s, error classes and texts, and for every pair of tensors (results and arguments)
whether they share storage, whether their data_ptr()s are equal and, where they share
storage, whether their version counters agree.

Two things differ by design under fg.compile and are compared loosely there: a result's
grad_fn is the call's CompiledFunctionBackward (as torch.compile's), so only its presence
is compared; and the version error of a backward through it names that node, so the
"which is output N of ..." part of the text is not compared.

Also checked: the program outputs (`f.last_run.forward.outputs`) hold each value once and
nothing dead (a detach or view returned with its tensor is made from the tensor's array
after the call, not written by the kernel), cached programs reused by calls with other
liveness, the kernel path's outputs, fg.value_and_grad / fg.grad under fg.compile, and a
compiled training step (the loss and its detach, `.grad` accumulated in place).
"""
import re
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for aliasing, versions and errors")


@pytest.fixture(autouse=True)
def _tiered(monkeypatch):
    """Tiny programs: run them on the reference executor (no Numba compile per test)."""
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")


@pytest.fixture
def kernels(monkeypatch):
    """Every program compiles on its first call and runs as kernels (after the background
    compiles that earlier tiered tests started have finished)."""
    fg.wait_for_compiles()
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")


# ================================================================ the harness
def leaf(L):
    return L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)


def plain(L):
    return L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def nonleaf(L):
    return L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True) * 1


def _function(body: str):
    """`def f(L, x)` whose statements are `body`'s, separated by ';' (one function per run:
    `kept` is its own list, for closures that hold tensors past the call)."""
    namespace = {"kept": []}
    exec("def f(L, x):\n" + "".join(f"    {line.strip()}\n" for line in body.split(";")), namespace)
    return namespace["f"], namespace["kept"]


def _collect(obj, found: list):
    """The structure of a result, each tensor replaced by 'T' (collected into `found`)."""
    if isinstance(obj, (torch.Tensor, fg.Tensor)):
        found.append(obj)
        return "T"
    if isinstance(obj, (tuple, list)):
        return type(obj).__name__, [_collect(o, found) for o in obj]
    if isinstance(obj, dict):
        return "dict", [(k, _collect(v, found)) for k, v in obj.items()]
    return repr(obj)


def _storage(t):
    if isinstance(t, torch.Tensor):
        return t.untyped_storage().data_ptr()
    root = t._data
    while isinstance(root.base, np.ndarray):
        root = root.base
    return id(root)


def _error(exc):
    return None if exc is None else (type(exc).__name__, str(exc))


def outcome(L, body, make, after="", backward=None, compiled=False):
    """What `body` run on library L (compiled or not) and the steps after it give: a dict
    of exactly comparable facts, and the list of values (compared with a tolerance)."""
    fn, kept = _function(body)
    args = [m(L) for m in make]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # .grad of a non-leaf, and the like
        try:
            out = (fg.compile(fn) if compiled else fn)(L, *args)
        except Exception as exc:                # noqa: BLE001 - the class and text are compared
            return {"call error": _error(exc)}, []
        tensors = []
        facts = {"structure": _collect(out, tensors)}
        # the arguments, and their .grads as the call leaves them (identity and memory compared too)
        facts["grads at return"] = [a.grad is None for a in args]
        tensors += list(kept) + args + [a.grad for a in args if a.grad is not None]
        facts["grad_fn"] = [None if t.grad_fn is None else type(t.grad_fn).__name__ for t in tensors]
        scope = {"L": L, "out": out, "kept": kept, "args": args}
        try:
            exec(after, scope)
            facts["after error"] = None
        except Exception as exc:                # noqa: BLE001
            facts["after error"] = _error(exc)
        values = [t.detach().numpy().copy() for t in tensors]
        facts["meta"] = [(tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad, t.is_leaf) for t in tensors]
        facts["identity"] = [next(j for j, u in enumerate(tensors) if u is t) for t in tensors]
        pairs = {}
        for i, a in enumerate(tensors):
            for j in range(i + 1, len(tensors)):
                b = tensors[j]
                shared = _storage(a) == _storage(b)
                pairs[i, j] = (shared, a.data_ptr() == b.data_ptr(), a._version == b._version if shared else None)
        facts["pairs"] = pairs
        facts["backward error"] = None
        if backward and facts["after error"] is None:
            try:
                exec(backward, scope)
            except Exception as exc:            # noqa: BLE001
                facts["backward error"] = _error(exc)
        grads = [a.grad for a in args]
        facts["grads"] = [g is None for g in grads]
        values += [g.detach().numpy().copy() for g in grads if g is not None]
    return facts, values


def _loosened(facts: dict) -> dict:
    """Facts as compared for a compiled call (see the module docstring)."""
    facts = dict(facts)
    if "grad_fn" in facts:
        facts["grad_fn"] = [name is not None for name in facts["grad_fn"]]
    for key in ("after error", "backward error", "call error"):
        if facts.get(key) is not None:
            kind, text = facts[key]
            facts[key] = (kind, re.sub(r", which is output \d+ of \w+,", "", text))
    return facts


def _assert_same(got, want, what):
    (got_facts, got_values), (want_facts, want_values) = got, want
    assert got_facts == want_facts, what
    assert len(got_values) == len(want_values), what
    for g, w in zip(got_values, want_values):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=what)


def assert_parity(body, make=(leaf,), after="", backward=None):
    """`body` eagerly and compiled on fusegrad behaves as on torch (see the module docstring)."""
    want = outcome(torch, body, make, after, backward)
    _assert_same(outcome(fg, body, make, after, backward), want, "fusegrad eager")
    got_facts, got_values = outcome(fg, body, make, after, backward, compiled=True)
    _assert_same((_loosened(got_facts), got_values), (_loosened(want[0]), want[1]), "fg.compile")


# ================================================================ returned aliases, written after the call
SOURCES = {"mul": "x * 2", "exp": "x.exp()"}        # exp saves its result: a write to it breaks backward
ALIASES = {
    "detach": "y.detach()", "data": "y.data", "select": "y[0]", "view": "y.view(3, 2)", "t": "y.t()",
    "detach-select": "y.detach()[0]", "select-detach": "y[0].detach()", "detach-detach": "y.detach().detach()",
    "data-select": "y.data[1]", "slice-detach": "y[:, 1:].detach()",
}
AFTER = {
    "none": "", "alias.add_": "out[1].add_(1)", "alias.mul_": "out[1].mul_(2)", "alias.zero_": "out[1].zero_()",
    "alias.fill_": "out[1].fill_(7)", "alias.copy_": "out[1].copy_(L.ones_like(out[1]))",
    "alias[0]=": "out[1][0] = 9", "y.mul_ no_grad": "with L.no_grad(): out[0].mul_(10)",
    "y.add_": "out[0].add_(1)",
}


@pytest.mark.parametrize("after", AFTER.values(), ids=AFTER.keys())
@pytest.mark.parametrize("alias", ALIASES.values(), ids=ALIASES.keys())
@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_an_alias_returned_with_its_tensor(source, alias, after):
    """(y, an alias of y): written through either after the call, then y.sum().backward()
    (torch's version error exactly where a write reached y's saved result)."""
    assert_parity(f"y = {source}; return y, {alias}", after=after, backward="out[0].sum().backward()")


# ================================================================ what a call returns
RETURNS = [
    # (body, arguments, steps after the call, backward)
    ("y = x * 2; return y, y", (leaf,), ["", "out[0].add_(1)"], "out[1].sum().backward()"),
    ("return x", (leaf,), ["", "with L.no_grad(): out.add_(1)"], "out.sum().backward()"),
    ("return x", (plain,), ["", "out.add_(1)"], None),
    ("return x, x", (plain,), ["", "out[0].add_(1)"], None),
    ("return x.detach()", (leaf,), ["", "out.add_(1)"], None),
    ("return x.data", (leaf,), ["", "out.add_(1)"], None),
    ("return x.detach()[0]", (leaf,), ["", "out.add_(1)"], None),
    ("return x[0]", (leaf,), ["", "with L.no_grad(): out.add_(1)"], "out.sum().backward()"),
    ("return x[0]", (plain,), ["", "out.add_(1)", "args[0].add_(1)"], None),
    ("return x.t(), x", (plain,), ["", "out[0].add_(1)"], None),
    ("return x.view(3, 2)", (plain,), ["", "out.add_(1)"], None),
    ("return x[0]", (nonleaf,), ["", "out.add_(1)"], "out.sum().backward()"),
    ("return x[0], x.detach()", (nonleaf,), ["", "out[0].add_(1)", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("x.add_(1); return x.detach()", (plain,), ["", "out.add_(1)"], None),
    ("x.add_(1); return x", (plain,), ["", "out.add_(1)"], None),
    ("x.add_(1); return x[0]", (plain,), ["", "out.add_(1)"], None),
    ("d = x.detach(); d.add_(1); return x * 1", (nonleaf,), [""], "out.sum().backward()"),
    ("d = x.detach(); d[0] = 7; return x * x, d", (leaf,),
     ["", "out[1].add_(1)", "args[0].detach().zero_()", "args[0].data.zero_()"], "out[0].sum().backward()"),
    ("d = x.data; d[0] = 7; return x * x, d", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    # the leaf read after its .data (which a view read first): its reads go through an identity
    # alias of the memory, which its gradient reaches too (a backward gave it None)
    ("d = x.data; t = d.t(); v = x[:, 1:]; d.fill_(3); return x, d, v * 1", (leaf,), [""], "out[2].sum().backward()"),
    ("d = x.data; t = d.t(); v = x * x; return v", (leaf,), [""], "out.sum().backward()"),
    # ... but the alias's own reads give the leaf nothing: d's history reaches x once, by its add
    ("d = x.data; d.add_(x); return x, d", (leaf,), [""], "(out[0] * 2 + out[1]).sum().backward()"),
    ("d = x.detach(); t = d.t(); v = x[0] * 2; d.mul_(3); return v, x", (leaf,), [""],
     "out[0].sum().backward()"),
    ("x.mul_(2); return x * x", (nonleaf,), ["", "with L.no_grad(): args[0].add_(1)", "args[0].data.add_(1)"],
     "out.sum().backward()"),
    ("x.mul_(2); return x.exp()", (nonleaf,), ["", "with L.no_grad(): out.add_(1)", "args[0].detach().add_(1)"],
     "out.sum().backward()"),
    ("y = x * x; return y", (leaf,), ["", "args[0].detach().add_(1)", "args[0].data.add_(1)"], "out.sum().backward()"),
    ("x.mul_(2); v = x[0]; return v", (nonleaf,), ["", "out.add_(1)"], "out.sum().backward()"),
    ("x.mul_(2); v = x[0]; return v, x", (nonleaf,), ["", "out[0].add_(1)"], "out[0].sum().backward()"),
    ("v = x[0]; x.mul_(2); return v", (nonleaf,), ["", "out.add_(1)"], "out.sum().backward()"),
    # a saved view whose base dies, and later values (the reference executor reuses dead buffers)
    ("y = x * 2; v = y[0]; w = v * v; z = (x + 1) * 3; q = (z * z + 1).sqrt(); return w.sum() + q.sum()", (leaf,),
     [""], "out.backward()"),
    ("v = (x * 2).t()[1]; a = x + 1; b = a * 3; c = b * b; d = c + 1; return v, d", (plain,), ["", "out[0].add_(1)"],
     None),
    # `.data =` swaps the memory: a view made before keeps the old one
    ("v = x[0]; x.data = L.zeros(2, 3); return v, x", (plain,), ["", "out[0].add_(1)"], None),
    ("v = x[0]; x.data = L.zeros(4); return v, x", (plain,), ["", "out[0].add_(1)"], None),
    ("y = x * 2; v = y[0]; y.data = L.zeros(4); return v, y", (plain,), ["", "out[0].add_(1)"], None),
    ("y = x * 2; d = y.detach(); y.data = L.zeros(2, 3); return d, y", (plain,), ["", "out[0].add_(1)"], None),
    ("y = x * 2; z = x * 3; y.data = z; return y, z", (plain,), ["", "out[0].add_(1)"], None),
    ("y = x * 2; return y.detach()", (leaf,), ["", "out.add_(1)"], None),
    ("y = x * 2; return y[0]", (leaf,), ["", "out.mul_(3)"], "out.sum().backward()"),
    ("y = x * 2; return y.t()", (leaf,), ["", "out.mul_(3)"], "out.sum().backward()"),
    ("y = x * 2; d = y.detach(); return d, d", (leaf,), ["", "out[0].add_(1)"], None),
    ("y = x * 2; d = y.detach(); return d, d[0]", (leaf,), ["", "out[1].add_(1)", "out[0].add_(1)"], None),
    ("y = x * 2; return y.detach(), y.detach()", (leaf,), ["", "out[1].add_(1)"], None),
    ("y = x * 2; return y.detach(), y.data", (leaf,), ["", "out[1].add_(1)", "out[0].add_(1)"], None),
    ("y = x * 2; return y, y.detach(), y.data", (leaf,), ["out[1].add_(1)", "out[2].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; d = y.detach(); return y, d, d.detach()", (leaf,), ["", "out[2].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; v = y[0]; return y, v.detach()", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; v = y[0]; return v, v.detach()", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; v = y[0]; return v, y[1]", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; v = y[0]; d = v.detach(); d.add_(1); return y", (leaf,), [""], "out.sum().backward()"),
    ("y = x * 2; w = y.view(6); return y, w.detach()", (leaf,), ["", "out[1][0] = 9"], "out[0].sum().backward()"),
    ("y = (x * 2).t(); return y, y.detach(), y.contiguous()", (leaf,), ["", "out[1].add_(1)"],
     "out[0].sum().backward()"),
    ("y = x * 2; return y, y.reshape(6)", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; return y, y.t().reshape(6)", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; return y, y.expand(2, 2, 3)", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; return y, y.detach().expand(2, 2, 3)", (leaf,), ["out[1].add_(1)", "out[0].add_(1)"],
     "out[0].sum().backward()"),
    ("y = x * 2; return y, y.unsqueeze(0), y.flatten()", (leaf,), ["", "out[1].add_(1)", "out[2].add_(1)"],
     "out[0].sum().backward()"),
    ("y = x * 2; return y, y[:, 1]", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; a = y[0]; b = a[1:]; return y, b", (leaf,), ["out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; b = y[1].view(3, 1); return y, b", (leaf,), ["out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; return y.sum(), y.sum().detach()", (leaf,), ["", "out[1].add_(1)"], "out[0].backward()"),
    ("y = x * 2; s = y.sum(); return s, s.detach(), s.view(1)", (leaf,), ["", "out[1].add_(1)", "out[2].add_(1)"],
     "out[0].backward()"),
    ("y = x * 2; m = y > 4; return m, m.detach(), m[0]", (leaf,), ["", "out[1].zero_()", "out[2].fill_(True)"], None),
    ("y = x * 2; y.add_(1); return y, y.detach()", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; d = y.detach(); y.add_(1); return d", (leaf,), ["", "out.add_(1)"], None),
    ("y = x * 2; d = y.detach(); y.add_(1); return y, d", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; d = y.detach(); d.add_(1); return y, d", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; d = y.detach(); y = y + 1; return y, d", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; v = y[0]; v.add_(1); return y, v", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x.exp(); v = y[0]; return y, v", (leaf,), ["out[1].add_(1)", "out[0].add_(1)"], "out[0].sum().backward()"),
    ("y = x.exp(); v = y[0]; return v", (leaf,), ["out.add_(1)"], "out.sum().backward()"),
    ("y = x.exp(); return [y, y.detach()]", (leaf,), ["", "out[1].add_(1)"], "out[0].sum().backward()"),
    ("y = x.exp(); return {'y': y, 'd': y.detach()}", (leaf,), ["", "out['d'].add_(1)"], "out['y'].sum().backward()"),
    ("y = x.exp(); return (y, [y.detach(), {'v': y[0]}])", (leaf,),
     ["", "out[1][0].add_(1)", "out[1][1]['v'].add_(1)"], "out[0].sum().backward()"),
    ("y = x * 2; d = y.detach().requires_grad_(); (d * d).sum().backward(); return y, d", (leaf,),
     ["", "out[1].grad.add_(1)"], "out[0].sum().backward()"),
    ("y = x.exp(); d = y.detach().requires_grad_(); return y, d", (leaf,),
     ["with L.no_grad(): out[1].add_(1)"], "out[0].sum().backward()"),
]


@pytest.mark.parametrize("body, make, afters, backward", RETURNS, ids=[case[0] for case in RETURNS])
def test_what_a_call_returns(body, make, afters, backward):
    for after in afters:
        assert_parity(body, make, after, backward)


MAX = "y = x * 2; v, i = y.max(dim=0); return v, v.detach(), i, i[0]"


@pytest.mark.parametrize("after", ["", "out[1].add_(1)", "out[2].add_(1)", "out[3].fill_(0)"])
def test_max_indices_returned_and_written_after_the_call(after):
    """max's backward reads its indices: a write to them (or to a view of them) after the call
    breaks it, as torch's version check says (the indices, an output that requires no grad,
    were not checked)."""
    want = outcome(torch, MAX, (leaf,), after, "out[0].sum().backward()")
    got_facts, got_values = outcome(fg, MAX, (leaf,), after, "out[0].sum().backward()", compiled=True)
    _assert_same((_loosened(got_facts), got_values), (_loosened(want[0]), want[1]), "fg.compile")


def test_max_indices_written_eagerly_error_text():
    assert_parity(MAX, (leaf,), "out[3].fill_(0)", "out[0].sum().backward()")


GRADS = [
    ("(x * x).sum().backward(); return x.grad", ["", "out.add_(1)"], None),
    ("(x * x).sum().backward(); return x.grad, x.grad.detach(), x.grad[0]", ["", "out[1].add_(1)", "out[2].zero_()"],
     None),
    ("(x * x).sum().backward(); g = x.grad; (x * 3).sum().backward(); return g, x.grad", ["", "out[0].add_(1)"], None),
    ("x.grad = L.ones_like(x); (x * x).sum().backward(); return x.grad", ["", "out.add_(1)"], None),
    ("y = x * 2; y.retain_grad(); (y * y).sum().backward(); return y, y.grad, y.grad.detach()",
     ["", "out[2].add_(1)"], None),
    ("(x * x).sum().backward(create_graph=True); return x.grad", [""], "out.sum().backward()"),
    ("(x * x).sum().backward(create_graph=True); (x * x).sum().backward(); return x.grad", [""], None),
]


@pytest.mark.parametrize("body, afters, backward", GRADS, ids=[case[0] for case in GRADS])
def test_grads_a_call_leaves(body, afters, backward):
    """`.grad`s filled inside the call: which tensor object, which memory, accumulated in place."""
    for after in afters:
        assert_parity(body, (leaf,), after, backward)


# ================================================================ tensors held past the call
HELD = [
    ("y = x * 2; kept.append(y.detach()); return y", ["", "kept[0].add_(1)"], "out.sum().backward()"),
    ("y = x.exp(); kept.append(y.detach()); return y", ["", "kept[0].add_(1)"], "out.sum().backward()"),
    ("y = x.exp(); kept.append(y); return y.detach()", ["", "out.add_(1)"], "kept[0].sum().backward()"),
    ("y = x.exp(); kept.append(y[0]); return y.detach()", ["", "out.add_(1)"], "kept[0].sum().backward()"),
    ("y = x.exp(); kept.append(y); return y[1]", ["", "out.add_(1)"], "kept[0].sum().backward()"),
    ("y = x * 2; kept.extend([y, y.detach()])", ["", "kept[1].add_(1)"], "kept[0].sum().backward()"),
    ("y = x * 2; kept.append(y.detach()); return y.detach()", ["", "kept[0].add_(1)"], None),
    ("y = x * 2; kept.append(y.t()); return y.detach()[0]", ["", "kept[0].add_(1)", "out.add_(1)"], None),
]


@pytest.mark.parametrize("body, afters, backward", HELD, ids=[case[0] for case in HELD])
def test_tensors_a_closure_keeps(body, afters, backward):
    for after in afters:
        assert_parity(body, (leaf,), after, backward)


# ================================================================ regressions inside the call
def test_a_write_through_a_reshape_of_a_view_reaches_the_base():
    """y[1].reshape(3) is a view of y (a contiguous row), y.t().reshape(6) a copy: inside
    fg.compile every reshape of a view was taken for a copy, so the first write was lost."""
    assert_parity("y = x * 2; w = y[0].view(3); w.add_(1); u = y.t().reshape(6); u.add_(100); "
                  "q = y[1].reshape(3); q.mul_(-1); return y", backward="out.sum().backward()")


@pytest.mark.parametrize("make", [plain, nonleaf], ids=["plain", "requires_grad"])
@pytest.mark.parametrize("returned", ["d", "d, x", "x * 1", "x.detach()"])
def test_a_detach_of_an_argument_the_call_wrote(make, returned):
    """`x.mul_(2); d = x.detach(); d.add_(1)`: x sees d's write (it was left holding its own
    write, its value never computed: every use of x after the call raised)."""
    backward = "out[1].sum().backward()" if returned == "d, x" and make is nonleaf else None
    assert_parity(f"x.mul_(2); d = x.detach(); d.add_(1); return {returned}", (make,), "", backward)
    assert_parity(f"x.mul_(2); d = x.data; d.add_(1); x.add_(1); return {returned}", (make,), "", backward)



WRITTEN_AGAIN = [
    # x's .data, given a history by a write, then x written again through a view under no_grad:
    # d holds a value of its own and must see the memory's new values (it kept its old ones,
    # and the memory ended with them: a silently wrong x)
    "with L.no_grad(): x.mul_(2.0); d = x.data; d.copy_(x.sum()); v = x[:]; with L.no_grad(): v.mul_(2); "
    "with L.no_grad(): d.add_(1.0); return d * 1",
    "with L.no_grad(): x.mul_(2.0); d = x.data; d.copy_(x * 3); with L.no_grad(): x[0] = 5.0; return d * x",
    "with L.no_grad(): x.mul_(2.0); d = x.data; d.copy_(x * 3); with L.no_grad(): x.add_(1.0); "
    "with L.no_grad(): d.mul_(2.0); with L.no_grad(): x.add_(1.0); return d * 1",
    # both returned: each holds the memory's final value after the call (x was left symbolic)
    "with L.no_grad(): x.mul_(2.0); d = x.data; d.copy_(x * 3); with L.no_grad(): x[0] = 5.0; return d, x",
]


@pytest.mark.parametrize("body", WRITTEN_AGAIN)
def test_a_data_with_history_sees_later_writes_of_its_memory(body):
    assert_parity(body, (leaf,), "", "out[0].sum().backward()" if body.endswith("d, x") else "out.sum().backward()")


SAVED_VIEWS_OF_WRITTEN = [
    # (body, after): a view of x written through in the call, then saved (t * t); torch saved
    # the view, x's memory, so a write of x after the call makes the backward raise (AsStrided)
    ("t = x.unsqueeze(0); with L.no_grad(): t.fill_(0.5); return (t * t).sum()",
     "with L.no_grad(): args[0].add_(2.0)"),
    ("t = x.unsqueeze(0); with L.no_grad(): t.fill_(0.5); return (t * t).sum()", ""),
    ("t = x[0]; with L.no_grad(): t.mul_(2.0); return (t * t.exp()).sum()", "with L.no_grad(): args[0].zero_()"),
    ("t = x.t(); with L.no_grad(): t.add_(1.0); return (t * x.t()).sum()", "with L.no_grad(): args[0][1] = 3.0"),
]


@pytest.mark.parametrize("body, after", SAVED_VIEWS_OF_WRITTEN)
def test_a_saved_view_of_memory_the_call_wrote_is_that_memory(body, after):
    """The compiled backward saved a copy of the view's value: no version error (and the old
    values) where torch raises (alias-fuzz 10035, 10171)."""
    assert_parity(body, (leaf,), after, "out.backward()")


SAVED_VIEWS_WRITTEN_THROUGH_AN_ALIAS = [
    # a view of the argument saved in the call, then the argument's memory written in the call
    # through a tensor on its counter (a detach): the backward raises, as torch's check of the
    # saved view; through .data (a counter of its own) it reads the new values
    "v = x[0] * x[1]; x.detach().zero_(); return v.sum()",
    "v = x.reshape(3, 2) @ x; x.detach().mul_(2.0); return v.sum()",
    "v = x[0] * x[1]; x.detach()[1].fill_(2.0); return v.sum()",
    "v = x[0] * x[1]; x.detach().detach()[0].add_(1.0); return v.sum()",
    "v = x[0] * x[1]; x.data.zero_(); return v.sum()",
    "v = x[0] * x[1]; x.data[1].fill_(2.0); return v.sum()",
]


@pytest.mark.parametrize("body", SAVED_VIEWS_WRITTEN_THROUGH_AN_ALIAS)
def test_a_saved_view_of_an_argument_written_through_its_detach(body):
    """fg.compile marked the values of the argument's own views made in the call stale only
    for a write of the argument itself, not of another tensor over its memory on its counter:
    `nn.Linear` on a 3-D input, then `x.detach().zero_()`, returned gradients where torch
    raises (sweep 50165)."""
    assert_parity(body, (leaf,), "", "out.backward()")


SAVED_ALIASES_OF_AN_ARGUMENT = [
    # (body, after): an op saved a detach() (or .data) of the argument read in the call
    ("return (x * x.detach()).sum()", "with L.no_grad(): args[0].add_(3.0)"),
    ("return (x * x.detach()).sum()", "args[0].data.mul_(2.0)"),
    ("return (x * x.detach()).sum()", ""),
    ("return (x.detach() * x).sum()", "with L.no_grad(): args[0][1].fill_(2.0)"),
    ("return (x.exp() * x.detach().t().t()).sum()", "with L.no_grad(): args[0].add_(3.0)"),
    ("d = x.detach(); return (x * d).sum(), d", "out[1].add_(1.0)"),
    ("return (x * x.data).sum()", "with L.no_grad(): args[0].add_(3.0)"),
    ("return (x * x.data).sum()", "args[0].data.mul_(2.0)"),
    ("return (x.exp() * x.detach()[0]).sum()", "with L.no_grad(): args[0].add_(3.0)"),
    ("return (x.exp() * x.data.t().t()).sum()", "with L.no_grad(): args[0].add_(3.0)"),
]


@pytest.mark.parametrize("body, after", SAVED_ALIASES_OF_AN_ARGUMENT)
@pytest.mark.parametrize("make", [leaf, nonleaf], ids=["leaf", "nonleaf"])
def test_a_saved_alias_of_an_argument_is_its_memory(body, after, make):
    """`x * x.detach()` saved the detach as a copy: a write of x after the call did not make
    the backward raise, as torch's check of its saved tensor does (alias-fuzz 13084)."""
    assert_parity(body, (make,), after, "out[0].backward()" if ", d" in body else "out.backward()")


FREED_AND_REPLACED = [
    # (body, backward): a backward inside the call freed the loss's graph; a later node saved a
    # value the call then replaced in place. torch's engine runs nodes latest first, so the one
    # met first decides: the replaced value's version error, or the freed graph's error.
    ("loss = (x * x).sum(); loss.backward(); v = loss.reshape(1); w = v.clamp(0.0, 100.0); v.div_(2.0); "
     "return loss, w", "(out[0] + out[1].sum()).backward()"),
    ("loss = (x * x).sum(); loss.backward(); v = loss.reshape(1); w = v.clamp(0.0, 100.0); v.div_(2.0); "
     "return w", "out.sum().backward()"),
    ("loss = (x * x).sum(); loss.backward(); z = loss.exp(); z.mul_(2.0); return z", "out.backward()"),
    ("loss = (x * x).sum(); loss.backward(); n = (x * 2).norm(); m = n * 1; n.div_(2.0); return loss, m",
     "(out[0] + out[1]).backward()"),
    # every output is behind a freed node, and the replaced value is met before it
    ("x2 = x * 1; m = x2 * x2; a = x.exp(); v = a * 1; out = m.sum() + v.sum(); "
     "L.autograd.grad(out, [v, x2]); with L.no_grad(): a.mul_(2.0); return out", "out.backward()"),
    # met first inside the call
    ("loss = (x * x).sum(); loss.backward(); z = loss.exp(); z.mul_(2.0); z.backward(); return x.grad", ""),
    ("loss = (x * x).sum(); loss.backward(); v = loss.reshape(1); w = v.clamp(0.0, 100.0); v.div_(2.0); "
     "(loss + w.sum()).backward(); return x.grad", ""),
    # the freed node is met first: its error
    ("y = x * x; loss = y.sum(); loss.backward(); y.mul_(2.0); z = y.sum() * 1; return z", "out.backward()"),
    ("y = x.exp(); loss = y.sum(); loss.backward(); w = y * 2; y.mul_(2.0); return loss + w.sum()",
     "out.backward()"),
]


@pytest.mark.parametrize("body, backward", FREED_AND_REPLACED)
def test_freed_graph_and_replaced_saved_value_first_met_raises(body, backward):
    """The compiled backward checked for freed nodes before replaced saved values, so it raised
    torch's freed-graph error where torch's engine meets the replaced value first (sweep 49049,
    48725, 48873, 49963, 50321, 50336, 50343)."""
    assert_parity(body, (leaf,), "", backward)


_WEIGHTED = "(out[1] * L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()"
DATA_WRITTEN_WITH_HISTORY = [
    # (body, backward): a detach or .data of a traced tensor v written with a history of its
    # own; v and it stay one memory (returned together they share it), it keeps that history
    ("v = x * 2; d = v.data; d.div_(v); return v, d", _WEIGHTED),
    ("v = x * 2; d = v.data; w = v * v; d.div_(v); return w, d", _WEIGHTED),
    ("v = x * 2; d = v.data; d.sub_(v.exp()); return v.exp(), d", _WEIGHTED),
    ("v = x * 2; d = v.detach(); d.mul_(x); return v, d", _WEIGHTED),
    ("v = x * 2; d = v.detach(); d.mul_(x); return v, d", "out[0].sum().backward()"),
    ("v = x * 2; d = v.data; d.mul_(x); return v, d", "out[0].sum().backward()"),
    ("v = x * 2; d = v.data; d.mul_(x); d.add_(1.0); return v, d", _WEIGHTED),
    # v written after: d sees the values and keeps its own history, whose saved v is now stale
    ("v = x * 2; d = v.data; d.div_(v); v.mul_(3.0); return v, d", _WEIGHTED),
    ("v = x * 2; d = v.data; d.div_(v); return v * 1, d", "out[0].sum().backward()"),
    ("v = x * 2; d = v[0].data; d.div_(v[1]); return v, d", _WEIGHTED.replace("[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]",
                                                                            "[1.0, 2.0, 3.0]")),
    # the caller's .data saved by an op, then written: its own counter moved, so the backward
    # raises, though x's view of the memory changed without a bump (alias-fuzz 12584)
    ("t1 = x.data; t2 = t1 / (x.abs() + 1); t1.div_(0.5); return t2, t1", "out[0].sum().backward()"),
]


@pytest.mark.parametrize("body, backward", DATA_WRITTEN_WITH_HISTORY)
def test_a_data_written_with_a_history_of_its_own(body, backward):
    """`d = v.data; d.div_(v)`: torch's div node saved v, whose memory the write changes without
    a version bump, so its backward reads the new values; the compiled VJP read v's old values
    (a silently wrong gradient; sweep 48908). Returned with v, d was separate memory; a later
    write of v replaced d's history."""
    assert_parity(body, (leaf,), "", backward)


WRITTEN_WITH_HISTORY_THROUGH_A_DETACH = [
    "d = a.detach(); d.mul_(w); return a * w",
    "d = a.data; d.mul_(w); return a * w, d",
    "d = a.detach(); d.mul_(w); with L.no_grad(): w.mul_(0.5); return a / (w + 3), d",
    "d = a[0].detach(); d.mul_(w[0]); return a * w",
]


@pytest.mark.parametrize("body", WRITTEN_WITH_HISTORY_THROUGH_A_DETACH)
def test_memory_written_with_history_through_a_detach_of_a_tensor_without_grad(body):
    """a (no grad) written through its detach() by an op with history: a reads the new values
    and still requires no grad, as eagerly. fg.compile read the write's value with its history,
    so w's gradient got a second term through a (sweep 49556)."""
    def run(L, compiled):
        a = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        w = L.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
        ns = {"w": w}
        exec("def h(L, a):\n" + "".join(f"    {line.strip()}\n" for line in body.split(";")), ns)
        out = (fg.compile(ns["h"]) if compiled else ns["h"])(L, a)
        outs = out if isinstance(out, tuple) else (out,)
        total = sum((o * (k + 1)).sum() for k, o in enumerate(outs) if o.requires_grad)
        total.backward()
        return [o.detach().numpy().copy() for o in outs] + [a.numpy().copy(), w.grad.numpy().copy()], \
            [o.requires_grad for o in outs]
    want = run(torch, False)
    for compiled in (False, True):
        got = run(fg, compiled)
        assert got[1] == want[1]
        for g, w in zip(got[0], want[0]):
            np.testing.assert_allclose(g, w, rtol=1e-6)

NOT_RECORDED = [
    # (body, arguments, backward): a write under no_grad, or `.data =`, leaves the history as it was
    ("y = x * 2; with L.no_grad(): y.mul_(10); return y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; d = y.detach(); with L.no_grad(): d.mul_(10); return y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; d = y.data; with L.no_grad(): d.mul_(10); return y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; d = y[0]; with L.no_grad(): d.mul_(10); return y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; d = y.detach()[0]; with L.no_grad(): d.mul_(10); return y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; v = y[0]; with L.no_grad(): y.mul_(10); return v", (leaf,), "out.sum().backward()"),
    ("y = x * 2; v = y[0]; with L.no_grad(): y.mul_(10); return v, y", (leaf,), "out[0].sum().backward()"),
    ("y = x * 2; d = y.detach(); v = d[0]; with L.no_grad(): y.mul_(10); return v, y", (leaf,),
     "out[1].sum().backward()"),
    ("y = x * 2; y.data = x.detach() * 5; return y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; y.data = (x * 5).detach(); return y * y", (leaf,), "out.sum().backward()"),
    ("y = x * 2; with L.no_grad(): y.mul_(10); y.mul_(x); return y", (leaf,), "out.sum().backward()"),
    ("with L.no_grad(): x.mul_(10); return x * 1", (nonleaf,), "out.sum().backward()"),
    ("y = x * 2; y.retain_grad(); with L.no_grad(): y.add_(1); (y * y).sum().backward(); return y.grad, x.grad",
     (leaf,), None),
    ("y = x * 2; (y * y).sum().backward(retain_graph=True); with L.no_grad(): y.add_(1); "
     "(y * 3).sum().backward(); return x.grad * 1", (leaf,), None),
]


@pytest.mark.parametrize("body, make, backward", NOT_RECORDED, ids=[case[0] for case in NOT_RECORDED])
def test_a_write_not_recorded_for_gradients_keeps_the_history(body, make, backward):
    """Inside fg.compile such a write (directly, through a detach, .data or a view) gave the
    tensor a value with no gradient path: a backward through it left x.grad None."""
    assert_parity(body, make, "", backward)


# ================================================================ program outputs: each value once, nothing dead
def _roots(program) -> list:
    """For each program output, the value it is an identity cast or a view of (transitively).
    (A clone is an identity cast too: the functions checked with this make none.)"""
    from fusegrad.ir import OPS
    producer = {v.id: ins for ins in program.instrs for v in ins.outputs}
    roots = []
    for v in program.outputs:
        ins = producer.get(v.id)
        while ins is not None and (OPS[ins.op].view or (ins.op == "cast" and ins.inputs[0].dtype == v.dtype)):
            v = ins.inputs[0]
            ins = producer.get(v.id)
        roots.append(v.id)
    return roots


LEAN = [
    # (body, arguments, how many program outputs the values held after the call need)
    ("y = x * 2; return y, y.detach(), y[0], y.t(), y.detach()[1]", (plain,), 1),
    ("y = x * 2; return y.detach(), y.data, y.detach().detach()", (plain,), 1),
    ("y = x * 2; return y.detach()[0], y[1].detach(), y.t()", (plain,), 1),
    ("y = x * 2; kept.append(y.detach()); return y[0]", (plain,), 1),
    ("y = x * 2; return y, y.exp().detach()", (plain,), 2),
    ("return x[0], x.detach(), x.t()", (plain,), 0),
    ("x.add_(1); return x[0], x.detach()", (plain,), 1),
    ("y = x * 2; z = y + 1; return y.detach(), z", (plain,), 2),
    # y and the scalar 2 that the backward of `x * 2` reads; nothing of the views
    ("y = x * 2; return y, y[0], y.t(), y.detach()", (leaf,), 2),
]


@pytest.mark.parametrize("body, make, n_outputs", LEAN, ids=[case[0] for case in LEAN])
def test_program_outputs_hold_each_value_once(body, make, n_outputs):
    fn, _ = _function(body)
    compiled = fg.compile(fn)
    result = compiled(fg, *[m(fg) for m in make])
    outputs = compiled.last_run.forward.outputs
    roots = _roots(compiled.last_run.forward)
    assert len(set(roots)) == len(roots), "a value and an alias of it are both program outputs"
    assert len(outputs) == n_outputs
    del result


@pytest.mark.parametrize("outer", [False, True], ids=["plain", "w requires grad"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
@pytest.mark.parametrize("has_aux", [False, True], ids=["", "has_aux"])
@pytest.mark.parametrize("transform", ["value_and_grad", "grad"])
def test_transforms_under_compile(transform, has_aux, argnums, outer):
    """fg.value_and_grad / fg.grad under fg.compile as eagerly and as torch.func: values,
    gradients, aux (JAX's layout, aux detached), requires_grad (where an argument requires
    grad, the results carry history, as torch.func's); the program outputs each value once
    (and, for plain arguments, nothing else)."""
    from torch import func

    def loss(L, x, w):
        y = (x * w).tanh()
        value = (y ** 2).sum()
        return (value, {"y": y, "m": y.mean()}) if has_aux else value

    x_np = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.3]], np.float32)
    w_np = np.array([[1.0, 2.0, -3.0], [0.5, -0.5, 0.1]], np.float32)
    ours = getattr(fg, transform)(lambda x, w: loss(fg, x, w), argnums=argnums, has_aux=has_aux)
    theirs = {"value_and_grad": func.grad_and_value, "grad": func.grad}[transform](
        lambda x, w: loss(torch, x, w), argnums=argnums, has_aux=has_aux)
    compiled = fg.compile(ours)
    got = compiled(fg.tensor(x_np), fg.tensor(w_np, requires_grad=outer))
    eager = ours(fg.tensor(x_np), fg.tensor(w_np, requires_grad=outer))
    want_result = theirs(torch.tensor(x_np), torch.tensor(w_np, requires_grad=outer))
    want = []
    if transform == "value_and_grad":   # torch.func's (grads, (value, aux)) in JAX's ((value, aux), grads)
        _collect(want_result[1], want), _collect(want_result[0], want)
    else:
        _collect(want_result, want)
    for result in (got, eager):
        found = []
        _collect(result, found)
        assert len(found) == len(want)
        for o, t in zip(found, want):
            assert o.requires_grad == t.requires_grad
            assert tuple(o.shape) == tuple(t.shape)
            np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    roots = _roots(compiled.last_run.forward)
    assert len(set(roots)) == len(roots)
    if not outer:
        assert len(roots) == len(want)


def test_value_and_grad_of_one_tensor_passed_twice():
    """f(x, x) with argnums (0, 1): two gradients in their own memory (JAX's arrays; torch.func's
    tensors), each written once by the program."""
    from torch.func import grad_and_value
    compiled = fg.compile(fg.value_and_grad(lambda a, b: (a * b).sum(), argnums=(0, 1)))
    x = fg.tensor([1.0, -2.0, 3.0])
    value, (ga, gb) = compiled(x, x)
    (ta, tb), _ = grad_and_value(lambda a, b: (a * b).sum(), argnums=(0, 1))(torch.tensor([1.0, -2.0, 3.0]),
                                                                            torch.tensor([1.0, -2.0, 3.0]))
    assert (ga.data_ptr() == gb.data_ptr()) == (ta.data_ptr() == tb.data_ptr())
    ga.add_(1)
    ta.add_(1)
    np.testing.assert_allclose(gb.numpy(), tb.numpy())
    np.testing.assert_allclose(ga.numpy(), ta.numpy())
    roots = _roots(compiled.last_run.forward)
    assert len(set(roots)) == len(roots) == 3


def test_grad_results_of_two_calls_are_separate_memory():
    compiled = fg.compile(fg.grad(lambda a: (a * a).sum()))
    first = compiled(fg.tensor([1.0, 2.0]))
    second = compiled(fg.tensor([3.0, 4.0]))
    assert first.data_ptr() != second.data_ptr()
    np.testing.assert_array_equal(first.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(second.numpy(), [6.0, 8.0])


# ================================================================ a compiled training step
def _training_run(L, compiled: bool, zero_grad: str):
    """Three steps of SGD with momentum; per step what torch lets one observe."""
    model = L.nn.Linear(3, 2)
    with L.no_grad():
        model.weight.copy_(L.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        model.bias.copy_(L.tensor([0.01, -0.02]))
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, target = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), L.tensor([[1.0, 0.0], [0.0, 1.0]])

    def step(x, target):
        if zero_grad != "accumulating":
            opt.zero_grad(set_to_none=zero_grad == "to None")
        loss = L.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        return loss, loss.detach(), loss.item()

    run = fg.compile(step) if compiled else step
    facts, values, held = [], [], None
    for _ in range(3):
        loss, detached, item = run(x, target)
        grad = model.weight.grad
        facts.append((loss.requires_grad, loss.grad_fn is None, detached.requires_grad, type(item).__name__,
                      loss.data_ptr() == detached.data_ptr(), loss._version == detached._version,
                      None if held is None else (held is grad, held.data_ptr() == grad.data_ptr())))
        values += [loss.detach().numpy().copy(), np.array(item), model.weight.detach().numpy().copy(),
                   grad.numpy().copy()] + ([] if held is None else [held.numpy().copy()])
        detached.add_(1)                        # the loss sees it: one memory
        values.append(loss.detach().numpy().copy())
        held = grad
    return facts, values


@pytest.mark.parametrize("zero_grad", ["to None", "to zeros", "accumulating"])
def test_a_training_step_returning_its_loss_and_detach(zero_grad):
    """Where a .grad exists, backward adds into it in place (torch's AccumulateGrad): a .grad
    held from the step before is the same tensor and sees the sum (under fg.compile each
    step made a new .grad)."""
    want = _training_run(torch, False, zero_grad)
    for compiled in (False, True):
        _assert_same(_training_run(fg, compiled, zero_grad), want, f"compiled={compiled}")


# ================================================================ cached programs, other liveness
def test_a_cached_program_does_not_carry_aliasing_between_calls():
    """One compiled function whose closure keeps y on some calls only: each call shares
    memory (or not) by its own liveness; the program of each liveness is reused."""
    kept = []

    def body(L, x, keep):
        y = x * 2
        if keep:
            kept.append(y)
        return y.detach()

    compiled = fg.compile(lambda x, keep: body(fg, x, keep))
    for keep in (False, True, False, True, True):
        kept.clear()
        x = fg.tensor([1.0, 2.0, 3.0])
        d = compiled(x, keep)
        assert len(compiled.last_run.forward.outputs) == 1
        d.add_(1)
        if keep:
            # torch: the detach and the kept tensor are one memory and one version counter
            tx = torch.tensor([1.0, 2.0, 3.0])
            ty = tx * 2
            td = ty.detach()
            td.add_(1)
            assert kept[0].tolist() == ty.tolist()
            assert (kept[0].data_ptr() == d.data_ptr()) == (ty.data_ptr() == td.data_ptr())
            assert (kept[0]._version == d._version) == (ty._version == td._version)
        np.testing.assert_array_equal(d.numpy(), [3.0, 5.0, 7.0])


def test_results_of_one_call_survive_the_next():
    compiled = fg.compile(lambda x: (lambda y: (y, y[0], y.detach()))(x * 2 + 1))
    first = compiled(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    second = compiled(fg.tensor([[10.0, 20.0], [30.0, 40.0]]))
    assert [t.tolist() for t in first] == [[[3.0, 5.0], [7.0, 9.0]], [3.0, 5.0], [[3.0, 5.0], [7.0, 9.0]]]
    assert all(a.data_ptr() != b.data_ptr() for a in first for b in second)


def test_the_kernel_path_shares_memory_as_eagerly(kernels):
    """The same probes with every program compiled to kernels: the views the program hands
    back, and the arrays a second call writes."""
    body = "y = x * 2 + 1; return y, y[0], y.t(), y.detach(), y.view(6), y[:, 1:], y.detach()[1]"
    for after in ["", "out[1].add_(1)", "out[3].mul_(2)", "out[4][0] = 9", "with L.no_grad(): out[0].zero_()"]:
        assert_parity(body, (leaf,), after, "out[0].sum().backward()")
    fn, _ = _function(body)
    compiled = fg.compile(fn)
    first = compiled(fg, fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert compiled.last_run.path == "compiled kernels"
    assert len(compiled.last_run.forward.outputs) == 1
    second = compiled(fg, fg.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert first[0].tolist() == [[3.0, 5.0, 7.0], [9.0, 11.0, 13.0]]
    assert second[0].tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    assert all(a.data_ptr() != b.data_ptr() for a in first for b in second)


# ================================================================ saved tensors written inside the call
@pytest.mark.parametrize("body", [
    "y = x.exp(); y.add_(1); return y",
    "y = x.exp(); with L.no_grad(): y.mul_(2); return y",
    "y = x.exp(); d = y.detach(); d.add_(1); return y",
    "y = x.exp(); y.detach()[0].add_(1); return y",
    "y = x * x; y.mul_(2); return y",                   # mul saves its inputs, not y: no error
    "y = x.exp(); z = y * 2; y.add_(1); return z",      # the backward of z needs y: torch's error
    "y = x.exp(); y[0].mul_(2); return y.sum()",        # through a view
    "y = x.exp(); z = y * 1; y.add_(1); (z * x).sum().backward(); return x.grad",   # inside the call
    "y = x.exp(); z = x * 2; y.add_(1); z.sum().backward(); return x.grad",  # the stale value is not on the path
    "y = x.exp(); d = y.data; d.add_(1); return y",     # no version bump: the backward reads the new values
])
def test_a_saved_tensor_written_inside_the_call(body):
    assert_parity(body, backward="out.sum().backward()")


def _backward_outcome(L, body: str, compiled: bool):
    """The error text (exact) or the gradients of `out.sum().backward()` after `body` ran on
    x (a leaf) and a (a plain tensor)."""
    scope = {"L": L}
    exec("def fn(x, a):\n    " + body.replace("; ", "\n    "), scope)
    x, a = L.tensor([1.0, 2.0, 3.0], requires_grad=True), L.full((3,), 2.0)
    out = (fg.compile(scope["fn"]) if compiled else scope["fn"])(x, a)
    try:
        (out[0] if isinstance(out, tuple) else out).sum().backward()
    except RuntimeError as e:
        return str(e)
    return x.grad.tolist()


@pytest.mark.parametrize("body", [
    "y = x.exp(); y.add_(1); return y",                          # a saved output: "output 0 of Exp"
    "y = x * 2; z = y * y; y.add_(1); return z",                 # a saved input: its history now (Add)
    "y = x * 2; z = y * y; with L.no_grad(): y.add_(1); return z",   # ... kept by a no_grad write (Mul)
    "y = x * 2; z = y * y; y[0].mul_(3); return z, y",          # ... a write through a view (CopySlices)
    "y = x * a; a.add_(1); return y",                            # an argument written in the call
    "y = x.exp(); y2 = y.view(3); y2.add_(1); y2.add_(1); return y",  # two writes: version 2
    "y = x.tanh(); z = y.sigmoid(); y.mul_(2); return z",        # not saved by the path: no error
])
def test_the_version_error_for_a_write_inside_the_call_is_torchs(body):
    """Exact text, including the version numbers and the ", which is output N of Op," part."""
    want = _backward_outcome(torch, body, False)
    assert _backward_outcome(fg, body, False) == want
    assert _backward_outcome(fg, body, True) == want


def test_a_leaf_written_under_no_grad_then_used():
    # a leaf's gradient sums the uses of every value it held (Trace.held_values)
    assert_parity("with L.no_grad(): x.mul_(10); return x * x", backward="out.sum().backward()")
    assert_parity("y = x * 2; with L.no_grad(): x.mul_(10); return y + x * x", backward="out.sum().backward()")


def test_a_leaf_written_under_no_grad_inside_a_backward_in_the_call():
    body = "y = x * 2; with L.no_grad(): x.mul_(10); (y + x * x).sum().backward(); return x.grad"
    assert_parity(body)


def _kept_after_a_failed_call(L, compiled: bool):
    kept = []

    def fn(L, x):
        y = x * 2
        kept.extend([y, y.detach(), y[0]])
        raise ValueError("the call fails")
    with pytest.raises(ValueError):
        (fg.compile(fn) if compiled else fn)(L, L.tensor([1.0, 2.0, 3.0]))
    kept[1].add_(1)
    return [k.tolist() for k in kept], [kept[0].data_ptr() == k.data_ptr() for k in kept]


def test_tensors_kept_by_a_call_that_raises_share_memory():
    assert _kept_after_a_failed_call(fg, True) == _kept_after_a_failed_call(torch, False)


@pytest.mark.parametrize("body", [
    "a2.add_(a1)",
    "with L.no_grad(): a2[::2] = 0.5\n    a2.add_(a1)",
    "a2.mul_(a1.t().t())",
])
def test_a_write_partly_overlapping_an_operand_from_outside_raises(body):
    """Two tensors from outside the call over one memory (x.T written with x.detach()): the
    trace's overlap check looked only at views made in the call, so the compiled call wrote
    a result torch refuses (alias-fuzz 13249)."""
    outcomes = []
    for L, compiled in ((torch, False), (fg, False), (fg, True)):
        s0 = L.tensor([[-1.0, 0.25, -1.5], [0.75, -0.25, -1.0], [1.0, 2.0, 0.5]])
        namespace = {"L": L}
        exec(f"def f(a1, a2):\n    {body}\n", namespace)
        f = fg.compile(namespace["f"]) if compiled else namespace["f"]
        try:
            f(s0.detach(), s0.T)
            outcomes.append(("ok", s0.tolist(), s0._version))
        except RuntimeError as exc:
            outcomes.append((str(exc), s0.tolist(), s0._version))
    assert outcomes[0][0].startswith("unsupported operation: some elements of the input tensor")
    assert outcomes[1] == outcomes[0]
    assert outcomes[2] == outcomes[0]


@pytest.mark.parametrize("body, shape", [
    ("a[0] = a[..., 0]", (1, 4)),       # one element broadcast over the row it is part of
    ("a[:, 1] = a[0, :1]", (3, 2)),
    ("a[0] = a[0, 1:]", (3, 2)),
])
def test_a_setitem_broadcasting_its_own_memory_passes(body, shape):
    """A value of another shape read from the written tensor (`a[0] = a[..., 0]` on a 1x4):
    torch expands it before copying and lets the pair through; the trace's check raised the
    overlap error (sweep 51777)."""
    outcomes = []
    for L, compiled in ((torch, False), (fg, False), (fg, True)):
        namespace = {"L": L}
        exec(f"def f(a):\n    {body}\n    return a * 1\n", namespace)
        a = L.tensor(np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape))
        try:
            outcomes.append(((fg.compile(namespace["f"]) if compiled else namespace["f"])(a).tolist(), a.tolist()))
        except RuntimeError as exc:
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]
    assert outcomes[2] == outcomes[0]
