"""fg.autograd.graph's register_multi_grad_hook, GradientEdge / get_gradient_edge, and the
torch.autograd.graph.Node methods of fusegrad's nodes, against torch: each scenario runs in
both libraries and records the hook calls, the gradients they see, results and errors."""
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _value(v):
    """A comparable form of a result: tensors as (values, requires_grad), nested containers."""
    if isinstance(v, (torch.Tensor, fg.Tensor)):
        return ("T", v.tolist(), bool(v.requires_grad))
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    return v


def _both(scenario):
    """Run scenario(lib, log) in torch and fusegrad; compare what each logged."""
    logs = []
    for lib in (torch, fg):
        log = []
        try:
            scenario(lib, log)
        except Exception as error:       # noqa: BLE001  (compared with torch's)
            log.append(("raised", type(error).__name__, str(error)))
        logs.append(log)
    assert logs[1] == logs[0]
    return logs[0]


def _leaves(T):
    a = T.tensor([1., 2.], requires_grad=True)
    b = T.tensor([3., 4.], requires_grad=True)
    return a, b


def _record(log, tag="fn"):
    return lambda grads: log.append((tag, _value(grads)))


# ---------------------------------------------------------------- register_multi_grad_hook, "all"

def test_all_docs_example_and_inputs():
    def scenario(T, log):
        a, b = _leaves(T)
        c, d = a * b, a * b
        T.autograd.graph.register_multi_grad_hook((a, b, c, d), _record(log))
        c.sum().backward(retain_graph=True)
        log.append("--")
        c.sum().backward(inputs=(a,), retain_graph=True)
        log.append("--")
        log.append(_value(T.autograd.grad(c.sum(), [c], retain_graph=True)))
        log.append(_value([a.grad, b.grad]))
    log = _both(scenario)
    assert log[0] == ("fn", [("T", [3., 4.], False), ("T", [1., 2.], False), ("T", [1., 1.], False), None])


def test_all_two_backwards_with_retain_graph_and_remove():
    def scenario(T, log):
        a, b = _leaves(T)
        y = (a * b).exp()
        z = y * 2
        handle = T.autograd.graph.register_multi_grad_hook((y, a), _record(log))
        z.sum().backward(retain_graph=True)
        z.sum().backward(retain_graph=True)
        handle.remove()
        handle.remove()
        z.sum().backward()
        log.append(_value(a.grad))
    log = _both(scenario)
    assert [entry[0] for entry in log[:2]] == ["fn", "fn"] and len(log) == 3


def test_all_autograd_grad_leaf_input_raises_as_torch():
    def scenario(T, log):
        a, b = _leaves(T)
        c = a * b
        T.autograd.graph.register_multi_grad_hook((a, c), _record(log))
        T.autograd.grad(c.sum(), [a])
    log = _both(scenario)
    assert log[-1][0] == "raised" and "_will_engine_execute_node" in log[-1][2]


def test_all_autograd_grad_non_leaf_inputs():
    def scenario(T, log):
        a, b = _leaves(T)
        c = a * b
        e = c.sin()
        T.autograd.graph.register_multi_grad_hook((b, c, e), _record(log))
        log.append(_value(T.autograd.grad((e * 3).sum(), [c], retain_graph=True)))
        log.append(_value(T.autograd.grad((e * 3).sum(), [e, c], retain_graph=True)))
    _both(scenario)


def test_all_tensor_given_twice_and_off_path():
    def scenario(T, log):
        a, b = _leaves(T)
        c = a * b
        off = b * 7                       # not on the backward's path
        T.autograd.graph.register_multi_grad_hook((a, a, c, off), _record(log))
        c.sum().backward()
        log.append(_value(a.grad))
    _both(scenario)


def test_all_nothing_on_path_never_calls():
    def scenario(T, log):
        a, b = _leaves(T)
        w = T.tensor([5.], requires_grad=True)
        c = a * b
        T.autograd.graph.register_multi_grad_hook((c, a), _record(log))
        # a single root that reaches no input: its hook runs, but nothing is waited for
        log.append(_value(T.autograd.grad(c, [w], T.ones(2), allow_unused=True, retain_graph=True)))
        (w * 2).sum().backward()
        log.append(_value(w.grad))
    log = _both(scenario)
    assert not any(entry[0] == "fn" for entry in log if isinstance(entry, tuple))


def test_all_create_graph():
    def scenario(T, log):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x ** 2
        T.autograd.graph.register_multi_grad_hook((x, y), _record(log))
        log.append(_value(T.autograd.grad((y * 3).sum(), [y], create_graph=True)))
    _both(scenario)


def test_all_sees_other_hooks_changes_in_registration_order():
    def scenario(T, log):
        a, b = _leaves(T)
        c = a * b
        c.register_hook(lambda g: g * 10)
        T.autograd.graph.register_multi_grad_hook((c, a), _record(log))
        c.register_hook(lambda g: log.append(("after", _value(g))))
        a.register_hook(lambda g: log.append(("leaf", _value(g))))
        c.sum().backward()
        log.append(_value(a.grad))
    _both(scenario)


def test_nested_backward_in_fn():
    def scenario(T, log):
        a, b = _leaves(T)
        c = a * b
        w = T.tensor([2.], requires_grad=True)

        def fn(grads):
            log.append(("outer", _value(grads)))
            with T.enable_grad():            # (hooks run under no_grad)
                (w * 3).sum().backward()
        T.autograd.graph.register_multi_grad_hook((c, a), fn)
        T.autograd.graph.register_multi_grad_hook((w,), _record(log, "inner"))
        c.sum().backward()
        log.append(_value([a.grad, w.grad]))
    _both(scenario)


# ---------------------------------------------------------------- register_multi_grad_hook, "any"

def test_any_first_gradient_once_per_backward():
    def scenario(T, log):
        a, b = _leaves(T)
        c = a * b
        e = c * 2
        T.autograd.graph.register_multi_grad_hook((a, b, c, e), lambda g: log.append(("any", _value(g))),
                                                  mode="any")
        e.sum().backward(retain_graph=True)
        e.sum().backward(retain_graph=True)
        c.sum().backward(inputs=[b])
    log = _both(scenario)
    assert len(log) == 3


def test_any_skips_tensors_without_grad_and_leaf_first():
    def scenario(T, log):
        a, _ = _leaves(T)
        plain = T.ones(2)
        T.autograd.graph.register_multi_grad_hook((plain, a), lambda g: log.append(("any", _value(g))), mode="any")
        (a * 3).sum().backward()
    _both(scenario)


def test_any_two_branches_order():
    def scenario(T, log):
        a, _ = _leaves(T)
        y1, y2 = a * 2, a * 3
        T.autograd.graph.register_multi_grad_hook((y1, y2), lambda g: log.append(("any", _value(g))), mode="any")
        (y1.sum() + (y2 * 5).sum()).backward()
        b = T.tensor([3., 4.], requires_grad=True)
        T.autograd.graph.register_multi_grad_hook((b, a), lambda g: log.append(("leaves", _value(g))), mode="any")
        (a * b * 2).sum().backward()
    log = _both(scenario)
    assert len(log) == 2


def test_handle_as_context_manager():
    def scenario(T, log):
        a, _ = _leaves(T)
        with T.autograd.graph.register_multi_grad_hook((a,), _record(log)):
            (a * 2).sum().backward()
        (a * 2).sum().backward()
    log = _both(scenario)
    assert len(log) == 1


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("case", ["int_all", "int_any", "no_grad_all", "no_grad_any", "mode"])
def test_multi_grad_hook_errors(case):
    def scenario(T, log):
        plain = T.ones(2)
        R = T.autograd.graph.register_multi_grad_hook
        if case == "int_all":
            R((1,), print)
        elif case == "int_any":
            R((1,), print, mode="any")
        elif case == "no_grad_all":
            R((plain,), print)
        elif case == "no_grad_any":
            log.append(type(R((plain,), print, mode="any")).__name__)
        else:
            R((plain,), print, mode="xx")
    _both(scenario)


# ---------------------------------------------------------------- GradientEdge, get_gradient_edge

def test_gradient_edge_type():
    def scenario(T, log):
        GE = T.autograd.graph.GradientEdge
        log.append(GE._fields)
        log.append(repr(GE(1, 2)))
        log.append(GE(1, 2) == (1, 2, None))
    _both(scenario)


def test_get_gradient_edge_nodes():
    def scenario(T, log):
        G = T.autograd.graph.get_gradient_edge
        x = T.tensor([1., 2., 3.], requires_grad=True)
        e = G(x)
        log.append((e.node.name(), e.output_nr, e.ownership_token))
        log.append(e.node is (x * 1).grad_fn.next_functions[0][0])
        log.append(G(x).node is e.node)
        u = x.unbind()
        eu = G(u[2])
        log.append((eu.node.name(), eu.output_nr, eu.node is u[2].grad_fn))
        G(T.ones(2))
    log = _both(scenario)
    assert log[-1] == ("raised", "RuntimeError",
                       "It is not possible to get the gradient edge for a Tensor that does not require gradients")


def test_grad_with_gradient_edges():
    def scenario(T, log):
        G = T.autograd.graph.get_gradient_edge
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        u = y.unbind()
        loss = u[0] * 3 + u[1] * 5
        log.append(_value(T.autograd.grad(loss, [G(y), G(x), G(u[1]), x], retain_graph=True)))
        log.append(_value(T.autograd.grad(loss, [G(x)], create_graph=True)))
        w = T.ones(1, requires_grad=True)
        log.append(_value(T.autograd.grad((x * x).sum(), [G(w)], allow_unused=True)))
        T.autograd.grad((x * x).sum(), [G(w)])
    _both(scenario)


def test_grad_non_tensor_input_error():
    def scenario(T, log):
        x = T.tensor([1., 2.], requires_grad=True)
        T.autograd.grad((x * 2).sum(), [3])
    _both(scenario)


def test_grad_materialize_with_edge_engine_error():
    # torch's text; fg.autograd.grad itself materializes with zeros_like (see the report)
    from fusegrad.tracer import engine
    x = fg.tensor([1., 2.], requires_grad=True)
    w = fg.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given input is a GradientEdge"):
        engine.grad((x * 2).sum(), [fg.autograd.graph.get_gradient_edge(w)], materialize_grads=True)


def test_backward_inputs_gradient_edges():
    def scenario(T, log):
        G = T.autograd.graph.get_gradient_edge
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        u = y.unbind()
        loss = u[0] * 3 + u[1] * 5
        loss.backward(inputs=[G(x)], retain_graph=True)
        log.append(_value(x.grad))
        loss.backward(inputs=[G(x), x], retain_graph=True)        # the same leaf twice: once
        log.append(_value(x.grad))
        loss.backward(inputs=G(x), retain_graph=True)
        log.append(_value(x.grad))
        y.register_hook(lambda g: log.append(("y hook", _value(g))))
        loss.backward(inputs=[G(u[0])], retain_graph=True)         # a grad_fn's edge: fills nothing
        log.append(_value(x.grad))
        log.append(y.retains_grad)
        loss.backward(inputs=[G(y)], retain_graph=True)
        log.append(_value(x.grad))
        loss.backward(inputs=["no"])
    _both(scenario)


def test_multi_grad_hook_on_gradient_edge_inputs():
    def scenario(T, log):
        G = T.autograd.graph.get_gradient_edge
        a, b = _leaves(T)
        c = a * b
        T.autograd.graph.register_multi_grad_hook((c, b), _record(log))
        c.sum().backward(inputs=[G(b)], retain_graph=True)
        log.append(_value([a.grad, b.grad]))
        log.append(_value(T.autograd.grad(c.sum(), [G(c)])))
    _both(scenario)


# ---------------------------------------------------------------- Node methods

def test_node_methods():
    def scenario(T, log):
        Node = T.autograd.graph.Node
        a, b = _leaves(T)
        c = a * b
        e = T.autograd.graph.get_gradient_edge(c)
        node = e.node
        log.append((isinstance(node, Node), isinstance(T.autograd.graph.get_gradient_edge(a).node, Node)))
        log.append(node.name())
        log.append([(n.name() if n is not None else None, k) for n, k in node.next_functions])
        node.metadata["k"] = 1
        log.append(node.metadata)
        pre = node.register_prehook(lambda go: log.append(("pre", _value(go))))
        post = node.register_hook(lambda gi, go: log.append(("post", _value(gi), _value(go))))
        c.sum().backward(retain_graph=True)
        pre.remove()
        post.remove()
        c.sum().backward()
        log.append(_value(a.grad))
    _both(scenario)


def test_a_single_gradient_edge_is_one_input_of_grad():
    """autograd.grad(y, edge): a GradientEdge (a tuple itself) is one input, as one tensor is."""
    results = []
    for L in (torch, fg):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        results.append([g.tolist() for g in L.autograd.grad(y, L.autograd.graph.get_gradient_edge(x))])
    assert results[0] == results[1]


# ---------------------------------------------------------------- multi-output nodes' tensor hooks
# torch calls the hooks of each output of a node that runs, with None for an output that got no
# gradient (its tensor pre-hooks see the input buffer's undefined entry); a hook may not
# replace that None.

def _hook_log(log, name):
    return lambda g: log.append((name, None if g is None else g.tolist()))


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("split", ["unbind", "split", "chunk3"])
def test_unused_output_hooks_see_none(split, create_graph):
    def scenario(T, log):
        x = T.tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]], requires_grad=True)
        parts = {"unbind": lambda: x.unbind(0), "split": lambda: x.split([1, 2]),
                 "chunk3": lambda: x.chunk(3, 1)}[split]()
        for k, p in enumerate(parts):
            p.register_hook(_hook_log(log, k))
        (parts[1] * 2).sum().backward(create_graph=create_graph)
        log.append(_value(x.grad))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (backward(create_graph=True)'s reference-cycle warning)
        log = _both(scenario)
    assert log[0][0] == 0 and log[0][1] is None


@pytest.mark.parametrize("create_graph", [False, True])
def test_hook_may_not_replace_none(create_graph):
    def scenario(T, log):
        x = T.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        a, b = x.unbind(0)
        a.register_hook(lambda g: T.ones(2) if g is None else g)
        log.append(_value(T.autograd.grad((b * 2).sum(), x, create_graph=create_graph)))
    log = _both(scenario)
    assert log == [("raised", "RuntimeError", "can't replace a None gradient with a non-None value")]


def test_unused_output_hooks_autograd_grad_and_retain_graph():
    def scenario(T, log):
        x = T.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        a, b = x.unbind(0)
        a.register_hook(_hook_log(log, "a"))
        a.retain_grad()
        loss = (b * b).sum()
        log.append(_value(T.autograd.grad(loss, x, retain_graph=True)))
        loss.backward()
        log.append((_value(x.grad), a.grad))
        y = x * 1
        (y.sum()).backward()                # unbind's node does not run: no hook call
        log.append(_value(x.grad))
    log = _both(scenario)
    assert [e for e in log if e[0] == "a"] == [("a", None), ("a", None)]


@pytest.mark.parametrize("mode", ["all", "any"])
def test_multi_grad_hook_with_unused_part(mode):
    def scenario(T, log):
        x = T.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        parts = x.unbind(0)
        if mode == "all":
            fn = lambda gs: log.append(("fn", [None if g is None else g.tolist() for g in gs]))  # noqa: E731
        else:
            fn = lambda g: log.append(("fn", None if g is None else g.tolist()))  # noqa: E731
        T.autograd.graph.register_multi_grad_hook(parts, fn, mode=mode)
        (parts[1] * 3).sum().backward()
    log = _both(scenario)
    assert log[0][0] == "fn"


def test_sequence_nr_orders_nodes_by_creation():
    def scenario(T, log):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        z = y.sin()
        w = z + y
        seq = [t.grad_fn._sequence_nr() for t in (y, z, w)]
        log.append(seq == sorted(seq) and len(set(seq)) == 3)
        log.append(y.grad_fn.next_functions[0][0]._sequence_nr())      # AccumulateGrad
        u = x.unbind()
        log.append(u[0].grad_fn._sequence_nr() == u[1].grad_fn._sequence_nr() > seq[-1])
    assert _both(scenario) == [True, 2 ** 64 - 1, True]
