"""Round 38 of torch parity (findings of a probe of fg.grad / value_and_grad / compile and of
the eager engine against torch 2.13): a function that returns its differentiated argument
gives the caller that very tensor (torch.func unwraps its wrapper to it); empty containers
are arguments with empty gradients; a gradient summed from several contributions is laid
out as torch's add lays it out."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")
func = pytest.importorskip("torch.func", reason="torch.func is the oracle of fg.grad")


def _arguments(L):
    """(a leaf that requires grad, a non-leaf made from it, a tensor without grad)."""
    leaf = L.tensor(3.0, requires_grad=True)
    return leaf, leaf * 2, L.tensor(4.0)


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("compiled", [False, True])
def test_returning_the_argument_gives_back_the_callers_tensor(which, compiled):
    """torch.func.grad_and_value(lambda x: x)(x)'s value is x itself, history and all; so is
    an aux that is the argument. fusegrad returned a detached copy, so that
    `value.backward()` raised "element 0 of tensors does not require grad"."""
    def identity(x):
        return x

    def with_aux(x):
        return x * 1, x

    x = _arguments(fg)[which]
    tx = _arguments(torch)[which]
    transform = fg.value_and_grad(identity)
    transform = fg.compile(transform) if compiled else transform
    value, grad = transform(x)
    grad_t, value_t = func.grad_and_value(identity)(tx)
    assert value is x and (value_t is tx)
    assert float(grad) == float(grad_t) == 1.0
    (_, aux), _ = fg.value_and_grad(with_aux, has_aux=True)(x)
    _, aux_t = func.grad(with_aux, has_aux=True)(tx)
    assert aux is x and aux_t is tx


def test_the_returned_argument_keeps_its_history_for_backward():
    leaf, x, _ = _arguments(fg)
    value, _ = fg.value_and_grad(lambda t: t)(x)
    value.backward()
    assert leaf.grad.item() == 2.0          # as torch: d(2 * leaf)/d leaf


def test_empty_containers_have_empty_gradients():
    """torch.func 2.13 and JAX return empty gradients for empty containers; fusegrad raised
    "`inputs` argument to `grad()` cannot be empty"."""
    for empty in ([], (), {}):
        assert fg.grad(lambda d: fg.tensor(1.0))(empty) == func.grad(lambda d: torch.tensor(1.0))(empty) == empty


LAYOUTS = {
    "transposed": lambda L: L.ones(2, 3).t(),
    "permuted": lambda L: L.ones(3, 4, 2).permute(2, 0, 1),
    "expanded": lambda L: L.ones(3, 1).expand(3, 4),
}
FUNCTIONS = {
    "a * a": lambda a: (a * a).sum(),
    "a * 2": lambda a: (a * 2).sum(),
    "a + a": lambda a: (a + a).sum(),
    "exp + sin": lambda a: (a.exp() + a.sin()).sum(),
    "mean of a * a": lambda a: (a * a).mean(),
    "exp * a[0]": lambda a: (a.exp() * a[0]).sum(),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_summed_gradient_has_torchs_strides(layout, function):
    """Two contributions laid out as a transposed input sum to a transposed gradient in
    torch (its add follows its operands); fusegrad's sum was row-major."""
    f = FUNCTIONS[function]
    a = LAYOUTS[layout](fg).requires_grad_()
    ta = LAYOUTS[layout](torch).requires_grad_()
    ours = fg.autograd.grad(f(a), a)[0]
    theirs = torch.autograd.grad(f(ta), ta)[0]
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def _hooked_graph(L, seed: int, log: list):
    """A random graph over 2-6 leaves, each with a tensor hook and some with post-accumulate
    hooks (which log which leaves have a .grad by then), and hooks on some non-leaves;
    returns (leaves, the scalar to differentiate, the outputs it sums)."""
    import random
    rng = random.Random(seed)
    leaves = [L.tensor([1.0 + i, 2.0], requires_grad=True) for i in range(rng.randint(2, 6))]
    pool = list(leaves)
    for i, leaf in enumerate(leaves):
        leaf.register_hook(lambda g, i=i: log.append(f"hook {i}") or None)
        if rng.random() < 0.6:
            leaf.register_post_accumulate_grad_hook(
                lambda t, i=i: log.append(f"post {i}: " + "".join("1" if x.grad is not None else "0" for x in leaves)))
    for k in range(rng.randint(1, 8)):
        a, b = rng.choice(pool), rng.choice(pool)
        r = rng.choice([lambda: a * b, lambda: a + b, lambda: (a * 0.1).exp(), lambda: a.sin(), lambda: a - b])()
        if rng.random() < 0.4:
            r.register_hook(lambda g, k=k: log.append(f"node {k}") or None)
        pool.append(r)
    outputs = rng.sample(pool[len(leaves):], min(len(pool) - len(leaves), rng.randint(1, 3)))
    return leaves, sum(o.sum() for o in outputs), outputs


@pytest.mark.parametrize("call", ["backward", "autograd.backward", "autograd.grad"])
def test_hooks_run_in_torchs_engine_order(call):
    """A leaf's hook, its accumulation and its post-accumulate hook run when torch's engine
    reaches the leaf's AccumulateGrad (ready nodes by sequence number, AccumulateGrads first,
    ties as torch's std::priority_queue breaks them), not all leaves' hooks at the end: a
    post-accumulate hook (an optimizer step in backward) sees only the leaves done before
    it. 80 random graphs per call."""
    for seed in range(80):
        logs = []
        for L in (torch, fg):
            log = []
            leaves, total, outputs = _hooked_graph(L, seed, log)
            if call == "backward":
                total.backward()
            elif call == "autograd.backward":
                L.autograd.backward([o.sum() for o in outputs])
            else:
                L.autograd.grad(total, leaves, allow_unused=True)
            logs.append(log)
        assert logs[1] == logs[0], f"graph {seed}"


def test_hooks_on_a_leafs_accumulate_grad_node_run():
    """register_prehook / register_hook on a leaf's AccumulateGrad node: the pre-hook sees
    (and may replace) the leaf's gradient before it is accumulated, the post-hook gets no
    gradient inputs and the gradient as output. They were registered and never run."""
    results = []
    for L in (torch, fg):
        log = []
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        node = y.grad_fn.next_functions[0][0]
        assert type(node).__name__ == "AccumulateGrad"
        node.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
        node.register_hook(lambda gi, go: log.append(("post", gi, go[0].tolist())))
        y.sum().backward()
        handle = node.register_prehook(lambda go: (go[0] * 100,))
        (x * 1).sum().backward()
        handle.remove()
        (x * 1).sum().backward()
        log.append(x.grad.tolist())
        results.append(log)
    assert results[1] == results[0]


DIVISIONS = ["x.div(y, rounding_mode=None)", "x.div(2, rounding_mode=None)", "L.div(x, y, rounding_mode=None)",
             "x.divide(y, rounding_mode=None)", "L.divide(x, y, rounding_mode=None)",
             "(x * 1).div_(y, rounding_mode=None)", "(x * 1).div_(2, rounding_mode=None)",
             "x / 2", "x.div(y)", "L.true_divide(x, y)", "(x * 1).div_(y)", "x.div(y, rounding_mode='floor')"]


@pytest.mark.parametrize("code", DIVISIONS)
def test_div_with_rounding_mode_none_given_is_div_tensor_mode(code):
    """`rounding_mode=None` written out is torch's div.Tensor_mode overload (DivBackward2),
    left out div.Tensor (DivBackward0); fusegrad named both DivBackward0."""
    names = []
    for L in (torch, fg):
        x, y = L.tensor([1.0, 2.0], requires_grad=True), L.tensor([3.0, 4.0])
        names.append(eval(code, {"L": L, "x": x, "y": y}).grad_fn.name())
    assert names[1] == names[0]


@pytest.mark.parametrize("flag", ["x", 1.5, [1]])
def test_allow_unused_must_be_a_bool_or_int(flag):
    """torch's engine parses allow_unused as an integer: a str, float or list is its TypeError
    (fusegrad took any truth value)."""
    texts = []
    for L in (torch, fg):
        x = L.tensor([1.0], requires_grad=True)
        with pytest.raises(TypeError) as info:
            L.autograd.grad((x * 2).sum(), x, allow_unused=flag)
        texts.append(str(info.value))
    assert texts[1] == texts[0] == f"'{type(flag).__name__}' object cannot be interpreted as an integer"


def test_accumulate_grad_node_hooks_inside_compile_are_refused():
    """Inside fg.compile the leaves' .grad get their values when the call returns, so hooks on
    a leaf's AccumulateGrad node could not run where torch's do: refused, as post-accumulate
    hooks are, rather than silently skipped; once removed, the step compiles."""
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    node = (x * 2).grad_fn.next_functions[0][0]     # (kept: the leaf holds it weakly, as torch's)
    handle = node.register_prehook(lambda go: None)

    @fg.compile
    def step(x):
        y = (x * 2).sum()
        y.backward()
        return y

    with pytest.raises(NotImplementedError, match="AccumulateGrad node has hooks"):
        step(x)
    handle.remove()
    step(x)
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def _extra_state_outcomes(L) -> list:
    """state_dict keys and load_state_dict results of modules with extra state."""
    nn = L.nn

    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer, self.count = nn.Linear(1, 1), 3
            self.register_buffer("seen", L.zeros(2))

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    class SavesOnly(nn.Module):          # get_extra_state without set_extra_state
        def __init__(self):
            super().__init__()
            self.inner = Counter()

        def get_extra_state(self):
            return 5

    def outcome(call):
        try:
            return str(call())
        except RuntimeError as exc:
            return str(exc)

    state = Counter().state_dict()
    target = Counter()
    target.count = 0
    out = [list(state), outcome(lambda: target.load_state_dict(state)), target.count]
    without = {k: v for k, v in state.items() if k != "_extra_state"}
    out += [outcome(lambda: target.load_state_dict(without)),
            outcome(lambda: target.load_state_dict(without, strict=False))]
    saves_only = SavesOnly()
    saved = saves_only.state_dict()
    out += [list(saved), outcome(lambda: saves_only.load_state_dict(saved)),
            outcome(lambda: saves_only.load_state_dict(saved, strict=False))]
    return out


def test_extra_state_is_saved_and_loaded():
    """A module overriding get_extra_state / set_extra_state saves and restores it under
    `_extra_state` (after its own parameters and buffers), counted in missing and unexpected
    keys as torch counts it. fusegrad ignored both, so a loaded model silently kept its old
    extra state."""
    assert _extra_state_outcomes(fg) == _extra_state_outcomes(torch)


def _forward_hook_dicts(L) -> list:
    """What a user sees of a module's forward-hook dicts as hooks come and go."""
    out, log = [], []
    m = L.nn.Linear(2, 2)
    out.append((type(m._forward_hooks).__name__, len(m._forward_hooks), len(m._forward_pre_hooks)))
    m.register_forward_hook(lambda mod, a, o: log.append("h1"))
    h2 = m.register_forward_hook(lambda mod, a, k, o: log.append("h2"), with_kwargs=True, prepend=True)
    h3 = m.register_forward_hook(lambda mod, a, o: log.append("h3"), always_call=True)
    p1 = m.register_forward_pre_hook(lambda mod, a, k: log.append("p1"), with_kwargs=True)
    m(L.ones(2))
    counts = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
              "_forward_pre_hooks_with_kwargs")
    out += [list(log), [len(getattr(m, name)) for name in counts]]
    for handle in (h2, h3, p1):
        handle.remove()
    out.append([len(getattr(m, name)) for name in counts])
    m._forward_hooks.clear()
    log.clear()
    m(L.ones(2))
    out.append(list(log))
    return out


def test_forward_hook_dicts_exist_from_the_start_as_torchs():
    """`module._forward_hooks.clear()` (common user code) works on a module that never had a
    hook: the dicts are OrderedDicts from __init__, id -> hook, with torch's flag dicts, and
    a handle's remove() clears its entries in all of them."""
    assert _forward_hook_dicts(fg) == _forward_hook_dicts(torch)


def _module_backward_hook_log(L) -> list:
    """What full backward hooks and pre-hooks of modules see and do, in order."""
    import warnings
    nn, log = L.nn, []

    def values(gs):
        return [None if g is None else [round(v, 4) for v in g.flatten().tolist()] for g in gs]

    m = nn.Linear(3, 2)
    with L.no_grad():
        m.weight.copy_(L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        m.bias.zero_()
    hook = m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", values(gi), values(go))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(L.ones(1, 3)).sum().backward()            # no input requires grad: fires at the output
    log.append([str(w.message) for w in caught])
    x = L.ones(1, 3, requires_grad=True)
    y = m(x)
    log += [y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()]
    y.sum().backward()
    log.append(x.grad.tolist())
    pre = m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    x.grad = None
    m(x).sum().backward()
    log += [x.grad.tolist(), m.weight.grad.tolist()]
    hook.remove()
    pre.remove()

    class Two(nn.Module):
        def forward(self, a, b):
            return a * 3, b * 0 + 1.0

    two = Two()
    two.register_full_backward_hook(lambda mod, gi, go: log.append(("two", values(gi), values(go))) or (gi[0] * 10, None))
    a = L.tensor([1.0], requires_grad=True)
    two(a, L.tensor([2.0]))[0].sum().backward()
    log.append(a.grad.tolist())
    seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    for i, layer in enumerate(seq):
        layer.register_full_backward_hook(lambda mod, gi, go, i=i: log.append(("layer", i, [list(g.shape) for g in gi])))
    seq.register_full_backward_pre_hook(lambda mod, go: log.append(("sequential", [list(g.shape) for g in go])))
    seq(L.ones(2, 3, requires_grad=True)).sum().backward()
    for register, result in (("register_full_backward_hook", lambda *h: (h[1][0], h[1][0])),
                             ("register_full_backward_pre_hook", lambda mod, go: (go[0], go[0]))):
        layer = nn.Linear(3, 2)
        getattr(layer, register)(result)
        try:
            layer(x).sum().backward()
        except RuntimeError as exc:
            log.append(str(exc))
    return log


def test_module_full_backward_hooks():
    """register_full_backward_hook / register_full_backward_pre_hook, as torch builds them
    (the BackwardHookFunctionBackward nodes): grad_input per positional input (zeros for a
    tensor that needs none, the warning where no input requires grad), grad_output per
    output, replacements, the order through a Sequential, and torch's errors. They did not
    exist (AttributeError)."""
    assert _module_backward_hook_log(fg) == _module_backward_hook_log(torch)


def test_module_backward_hooks_inside_compile_are_refused():
    """The hooks hang on nodes of an eager graph: inside fg.compile a module with them raises
    a clear NotImplementedError rather than skipping them."""
    layer = fg.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda mod, gi, go: None)
    step = fg.compile(lambda x: layer(x).sum())
    with pytest.raises(NotImplementedError, match="backward hooks"):
        step(fg.ones(1, 3, requires_grad=True))


PRE_INIT_CALLS = ["self.register_parameter('b', None)", "self.register_buffer('b', None)",
                  "self.add_module('b', nn.Linear(1, 1))", "self.register_module('b', None)",
                  "setattr(self, 'w', nn.Parameter(L.ones(1)))", "setattr(self, 'm', nn.Linear(1, 1))",
                  "self.add_module('a.b', None)", "setattr(self, 'z', 3)"]


@pytest.mark.parametrize("call", PRE_INIT_CALLS)
def test_registering_before_module_init(call):
    """torch's texts for registering state before Module.__init__(): register_parameter says
    "parameter" (not "parameters"), add_module fails reading self._modules."""
    outcomes = []
    for L in (torch, fg):
        class Early(L.nn.Module):
            def __init__(self):
                exec(call, {"self": self, "nn": L.nn, "L": L})
        try:
            Early()
            outcomes.append("ok")
        except (AttributeError, KeyError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("bad", ["parameter", "list", "number", "string"])
def test_optimizer_bad_param_group_and_state_dict(bad):
    """add_param_group of a non-dict names torch's class path (torch.nn.parameter.Parameter);
    load_state_dict of a non-dict fails as torch's does (a list reading "param_groups", a
    number calling copy())."""
    outcomes = []
    for L in (torch, fg):
        layer = L.nn.Linear(1, 1)
        value = {"parameter": layer.bias, "list": [], "number": 3, "string": "ab"}[bad]
        for call in (lambda o: o.add_param_group(value), lambda o: o.load_state_dict(value)):
            try:
                call(L.optim.SGD([layer.weight], lr=0.1))
                outcomes.append("ok")
            except (TypeError, AttributeError) as exc:
                outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[2:] == outcomes[:2]


def test_an_input_returned_as_is_and_marked_non_differentiable_has_no_history():
    """A custom Function returning its inputs, those that need no grad marked
    non-differentiable (torch's BackwardHookFunction): the marked one comes back without
    grad_fn and without requires_grad; fusegrad gave it the node."""
    results = []
    for L in (torch, fg):
        class Identity(L.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
                return args

            @staticmethod
            def backward(ctx, *grads):
                return grads

        x, c = L.tensor([1.0, 2.0], requires_grad=True), L.tensor([3.0, 4.0])
        a, b = Identity.apply(x, c)
        (a * 2 + b).sum().backward()
        results.append((a.grad_fn.name(), b.grad_fn, b.requires_grad, a is x, x.grad.tolist()))
    assert results[1] == results[0]


SET_SUBMODULE_CASES = [("0", "ReLU", False), ("1.0", "Tanh", False), ("1.5", "ReLU", False), ("1.5", "ReLU", True),
                       ("", "ReLU", False), ("0", None, False), ("2.x", "ReLU", False), ("0.weight", "ReLU", False),
                       ("3", "ReLU", True), ("new", "ReLU", False)]


@pytest.mark.parametrize("target,kind,strict", SET_SUBMODULE_CASES)
def test_set_submodule(target, kind, strict):
    """Module.set_submodule (it was missing): the module it leaves, or torch's error."""
    outcomes = []
    for L in (torch, fg):
        model = L.nn.Sequential(L.nn.Linear(1, 1), L.nn.Sequential(L.nn.ReLU()))
        module = getattr(L.nn, kind)() if kind else 3
        try:
            model.set_submodule(target, module, strict=strict)
            outcomes.append(repr(model))
        except (ValueError, AttributeError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


def test_a_numpy_float16_scalar_operand_does_not_warn():
    """Comparing a float16 scalar with the float32 limit cast the limit to float16, which
    warned "overflow encountered in cast" (an error under -W error); torch is silent."""
    import warnings
    import numpy as np
    a = fg.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (a + np.float16(1.5)).tolist() == [2.5, 2.5, 2.5]
        assert fg.mul(a, np.float16(2.0)).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("code", ["fg.ones(2, dtype=torch.float64)", "fg.tensor([1.0], dtype=torch.float64)",
                                  "fg.exp(torch.ones(2))"])
def test_a_torch_object_passed_to_fusegrad_is_named_as_such(code):
    """torch's text would read "must be torch.dtype, not torch.dtype" for a torch dtype given to
    fusegrad: the text says the object is torch's own."""
    with pytest.raises(TypeError, match=r"not torch\.(dtype|Tensor) from the torch package \(fusegrad takes its "
                                        r"own: fg\.float32, fg\.Tensor\)$"):
        eval(code, {"fg": fg, "torch": torch})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_long_floating_arange_is_torchs_bit_for_bit(dtype, monkeypatch):
    """Across torch's thread chunks (each starts its vector blocks afresh), the blocks the
    floating arange is worked in (2**16 elements) and the tails after the last whole vector
    block, the values are torch's to the bit."""
    import numpy as np
    from fusegrad.ir.ops import reduce
    monkeypatch.setattr(reduce, "_torch_threads", torch.get_num_threads)    # (as torch runs here)
    for start, end, step in ((0.0, 1.0, 1 / 200003), (-3.7, 11.2, 7.3e-5), (5.0, -5.0, -0.0001)):
        ours = fg.arange(start, end, step, dtype=getattr(fg, dtype)).numpy()
        theirs = torch.arange(start, end, step, dtype=getattr(torch, dtype)).numpy()
        assert ours.shape == theirs.shape and ours.shape[0] > 2 ** 16
        np.testing.assert_array_equal(ours, theirs)


def test_tensor_norm_takes_dtype_fourth():
    """Tensor.norm(p, dim, keepdim, dtype): torch's method takes dtype positionally (torch.norm
    has it keyword-only); fusegrad raised a TypeError."""
    results = []
    for L in (torch, fg):
        a = L.arange(6.0).reshape(2, 3)
        r = a.norm(2, 1, True, L.float64)
        results.append((r.tolist(), str(r.dtype).split(".")[-1], tuple(r.shape)))
    assert results[1] == results[0]


CHECK_ORDER = ["a.permute(-1, 2, 3)", "a.permute(3, 2, 2)", "a.permute(0, 0, 5)", "a.permute(0, -3, 1)",
               "L.cat([], 1.0)", "L.cat([], None)", "L.stack([], 1.0)", "L.stack([], None)", "L.cat([], 0)",
               "L.stack([], 0)"]


@pytest.mark.parametrize("code", CHECK_ORDER)
def test_which_check_fails_first(code):
    """permute wraps and checks each dim in turn (a duplicate before a later one out of range);
    cat and stack check their dim's type before the list's length."""
    outcomes = []
    for L in (torch, fg):
        try:
            eval(code, {"L": L, "a": L.ones(2, 3, 4)})
            outcomes.append("ok")
        except (TypeError, ValueError, RuntimeError, IndexError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


MISSING_ARGUMENTS = ["L.cat()", "L.stack()", "L.t()", "L.flatten()", "L.detach()", "L.numel()", "L.clone()",
                     "L.amax()", "L.argmin()", "L.promote_types()", "L.from_numpy()", "L.from_numpy(a=np.ones(2))",
                     "L.from_numpy(np.ones(2), 3)"]


@pytest.mark.parametrize("code", MISSING_ARGUMENTS)
def test_a_call_missing_its_arguments_has_torchs_text(code):
    """torch's parser words a call missing its arguments its own way (`missing 1 required
    positional arguments: "tensors"`), and from_numpy its C function's."""
    import numpy as np
    texts = []
    for L in (torch, fg):
        with pytest.raises(TypeError) as info:
            eval(code, {"L": L, "np": np})
        texts.append(str(info.value))
    assert texts[1] == texts[0]


@pytest.mark.parametrize("code", ["L.arange(L.tensor([3]))", "L.arange(L.tensor(3))", "L.arange(0, L.tensor([3.0]))",
                                  "L.arange(L.tensor(1.5), 4)"])
def test_arange_takes_a_0d_tensor_as_a_number_and_no_other(code):
    """A 0-d tensor is a Number to torch's parser; a 1-element 1-d tensor is not (fusegrad
    took it)."""
    outcomes = []
    for L in (torch, fg):
        try:
            outcomes.append(eval(code, {"L": L}).tolist())
        except TypeError as exc:
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]


def test_autograd_grad_returns_a_seed_passed_through_as_given():
    """autograd.grad(y, y, v) is v itself in torch (the engine passes the seed through); it was
    a copy."""
    results = []
    for L in (torch, fg):
        x = L.ones(2, requires_grad=True)
        v = L.tensor([2.0, 3.0])
        y = x * 2
        results.append((L.autograd.grad(x, x, v)[0] is v, L.autograd.grad(y, y, v, retain_graph=True)[0] is v,
                        L.autograd.grad(y, x, v)[0] is v))
    assert results[1] == results[0] == (True, True, False)


UNFLATTEN = ["a.unflatten(1, (2, 2))", "a.unflatten(-1, (2, -1))", "a.unflatten(0, (3, 1))", "a.unflatten(1, (3, 2))",
             "a.unflatten(-1, (3, 2))", "a.unflatten(2, (2, 2))", "a.unflatten(1, ())", "L.unflatten(a, 1, [2, 2])",
             "a.unflatten(1, 2)", "L.unflatten(a, 1, 2)", "a.t().unflatten(0, (2, 2))",
             "a.unflatten(dim=1, sizes=(2, 2))", "a.unflatten(1, (2.0, 2))", "L.unflatten(a, 1, (2, 2.0))"]


@pytest.mark.parametrize("code", UNFLATTEN)
def test_unflatten(code):
    """Tensor.unflatten / fg.unflatten (they were missing): a view (ViewBackward0, torch's
    strides, also of a transpose), -1 inferred, torch's errors."""
    outcomes = []
    for L in (torch, fg):
        a = L.arange(12.0).reshape(3, 4).requires_grad_()
        try:
            r = eval(code, {"L": L, "a": a})
            r.sum().backward()
            outcomes.append((tuple(r.shape), r.grad_fn.name(), r.stride(), a.grad.tolist()))
        except (TypeError, RuntimeError, IndexError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


def _after_data_replaced(L, case: str):
    x = L.ones(2, 3, requires_grad=True)
    y = x * 2
    if case == "non-leaf, sum":
        y.data = L.zeros(4)
        y.sum().backward()
    elif case == "non-leaf, seed":
        y.data = L.zeros(4)
        y.backward(L.ones(4))
    elif case == "leaf":
        x.data = L.zeros(4)
        y.sum().backward()
    elif case == "leaf, broadcastable":
        x.data = L.zeros(1, 3)
        y.sum().backward()
    elif case == "autograd.grad":
        y.data = L.zeros(4)
        return L.autograd.grad(y.sum(), x)[0].tolist()
    elif case == "view":
        v = x[0]
        v.data = L.zeros(4)
        v.sum().backward()
    elif case == "seed of a shape that does not expand":
        y.data = L.zeros(1, 3)
        y.backward(L.ones(1, 3))
    return x.grad.shape


@pytest.mark.parametrize("case", ["non-leaf, sum", "non-leaf, seed", "leaf", "leaf, broadcastable", "autograd.grad",
                                  "view", "seed of a shape that does not expand"])
def test_backward_after_data_is_replaced_by_another_shape(case):
    """`t.data = other` of another shape: the graph keeps the shapes it recorded, and torch
    checks each gradient against them (validate_outputs, a leaf's accumulation). fusegrad
    gave a (4,) gradient to a (2, 3) leaf, or raised NumPy's broadcast errors."""
    outcomes = []
    for L in (torch, fg):
        try:
            outcomes.append(tuple(_after_data_replaced(L, case)))
        except RuntimeError as exc:
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]


LINSPACE = ["L.linspace(0, 1, 3, dtype=L.bool)", "L.linspace(L.tensor([0.0]), 1, 3)", "L.linspace(0, L.tensor([1.0]), 3)",
            "L.linspace(0, 1, 3, L.float64)", "L.linspace(0, 1, L.tensor(3))", "L.linspace(0, 1, L.tensor([3]))",
            "L.linspace(0, 1, L.tensor(3.0))", "L.linspace(L.tensor(0.0), 1, 3)", "L.linspace(0, 1, 2.0)"]


@pytest.mark.parametrize("code", LINSPACE)
def test_linspace_arguments(code):
    """torch's checks: no bool dtype, 0-d start/end tensors only, dtype keyword-only, an
    integer 0-d tensor as steps; its invalid-combination text lists its four forms."""
    outcomes = []
    for L in (torch, fg):
        try:
            outcomes.append(eval(code, {"L": L}).tolist())
        except (TypeError, RuntimeError, NotImplementedError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


def test_new_tensor_of_a_tensor_warns_once():
    """t.new_tensor(tensor) warns torch's one text; fusegrad added fg.tensor's as well."""
    import warnings
    texts = []
    for L in (torch, fg):
        v = L.tensor([1.0, 2.0, 3.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert v.new_tensor(v).tolist() == [1.0, 2.0, 3.0]
        texts.append([str(w.message) for w in caught])
    assert texts[1] == texts[0] and len(texts[0]) == 1


def test_storage_offset_of_a_tensor_made_of_a_numpy_view():
    """torch.from_numpy / as_tensor of an array that is itself a view start their storage at
    that array's memory; fusegrad counted from the array it views."""
    import numpy as np
    offsets = []
    for L in (torch, fg):
        a = np.zeros((2, 3), np.float32)
        offsets.append([L.from_numpy(a[1:]).storage_offset(), L.as_tensor(a[:, 1]).storage_offset(),
                        L.from_numpy(a[1:]).view(-1)[1:].storage_offset(), L.from_numpy(a)[1:].storage_offset(),
                        L.from_numpy(a[:, 1:])[1].storage_offset()])
    assert offsets[1] == offsets[0] == [0, 0, 1, 3, 3]


@pytest.mark.parametrize("code", ["x.int()", "x.half()", "x.byte()", "x.type('torch.IntTensor')"])
def test_a_cast_to_a_dtype_fusegrad_lacks_says_so(code):
    """torch has these casts; fusegrad has four dtypes, and says which (it raised
    AttributeError: 'Tensor' object has no attribute 'int', or torch's "invalid type" text
    for a name torch does know)."""
    with pytest.raises(NotImplementedError, match=r"^fusegrad has no \w+ dtype \(.*\); its dtypes are float32 "
                                                  r"\(fg\.float\), float64 \(fg\.double\), int64 \(fg\.long\) and bool$"):
        eval(code, {"x": fg.ones(2)})


def test_a_dtype_name_fusegrad_lacks_says_so():
    assert not hasattr(fg, "int32") and not hasattr(fg, "half")
    with pytest.raises(AttributeError, match="^module 'fusegrad' has no attribute 'float16': fusegrad has no float16 "
                                             "dtype; its dtypes are"):
        fg.float16
    with pytest.raises(AttributeError, match="^module 'fusegrad' has no attribute 'nonexistent'$"):
        fg.nonexistent


def test_tensor_of_a_buffer():
    """fg.tensor of a bytearray, memoryview or array.array reads its items, as torch's does
    (int64 for integers, float32 for floats); it raised "Could not infer dtype"."""
    import array
    for make in (lambda: bytearray(b"ab"), lambda: memoryview(b"abc"), lambda: array.array("d", [1.0, 2.0]),
                 lambda: array.array("i", [1, 2]), lambda: memoryview(array.array("f", [1.5, 2.0]))):
        ours, theirs = fg.tensor(make()), torch.tensor(make())
        assert ours.tolist() == theirs.tolist() and str(ours.dtype)[3:] == str(theirs.dtype)[6:]


def test_a_list_of_arrays_warns_once_as_torch(monkeypatch):
    """torch warns (once a process) that a tensor from a list of NumPy arrays is slow."""
    import warnings
    import numpy as np
    from fusegrad.tracer import functional
    monkeypatch.setattr(functional, "_WARNED_ONCE", set())      # (as in a fresh process)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = fg.tensor([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
        fg.tensor([np.array([1.0])])
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert [str(w.message) for w in caught] == [
        "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting the list to a "
        "single numpy.ndarray with numpy.array() before converting to a tensor."]


KEEPDIM_STRIDES = ["x.sum(0, True)", "x.amax(0, True)", "x.amin(0, True)", "x.prod(0, True)", "x.sum(1, True)",
                   "x.t().sum(1, True)", "b.permute(2, 0, 1).sum((1, 2), True)", "b.permute(2, 0, 1).amax((0, 2), True)"]


@pytest.mark.parametrize("code", KEEPDIM_STRIDES)
def test_keepdim_reductions_of_a_permute_have_row_major_unit_strides(code):
    """A keepdim reduction of a permuted input: torch's result is row-major, its size-1 dims
    too; NumPy's keepdims result kept the input's strides there (x.t().sum(0, True): (1, 1)
    where torch's are (4, 1))."""
    strides = []
    for L in (torch, fg):
        x, b = L.arange(24.0).reshape(4, 6).t(), L.arange(100.0).reshape(4, 5, 5)
        strides.append(eval(code, {"x": x, "b": b}).stride())
    assert strides[1] == strides[0]


def test_max_dim_result_is_a_structseq_as_torchs():
    """fg.return_types.max / min: made of one 2-sequence, deep-copied and pickled as torch's
    (they raised TypeError / PicklingError: fusegrad.return_types could not be imported)."""
    import copy
    import pickle
    outcomes = []
    for L in (torch, fg):
        r = L.tensor([[1.0, 5.0], [3.0, 2.0]]).max(1)
        copied, loaded, made = copy.deepcopy(r), pickle.loads(pickle.dumps(r)), type(r)((r.values, r.indices))
        outcomes.append((type(r).__name__, L.return_types.max is type(r), copied.values.tolist(),
                         loaded.indices.tolist(), made.values.tolist(), r.n_fields, r.n_sequence_fields))
    assert outcomes[1] == outcomes[0]


def test_the_norm_of_a_transpose_is_read_in_memory_order():
    """torch's TensorIterator reads a dense permuted tensor in memory order: the 2-norm of a
    transposed float32 matrix equals the norm of the matrix itself, to the bit. fusegrad
    summed it in a running sum per result, 3e-5 off where torch is 1e-6 off."""
    import numpy as np
    a = np.random.RandomState(3).rand(1000, 1000).astype(np.float32) + 0.5
    b = np.random.RandomState(3).rand(4, 30000).astype(np.float32) + 0.5
    assert fg.tensor(a).t().norm().item() == torch.tensor(a).t().norm().item() == torch.tensor(a).norm().item()
    np.testing.assert_array_equal(fg.tensor(b).t().norm(2, 0).numpy(), torch.tensor(b).t().norm(2, 0).numpy())


@pytest.mark.parametrize("code", ["L.autograd.backward([None])", "L.autograd.backward([y * 2, None], [L.ones(2), None])",
                                  "L.autograd.backward([y.sum()], grad_variables=[L.tensor(1.0)])",
                                  "L.autograd.backward([y.sum()], grad_tensors=[L.tensor(1.0)], "
                                  "grad_variables=[L.tensor(1.0)])"])
def test_autograd_backward_arguments(code):
    """torch.autograd.backward: a non-tensor output is its _make_grads AssertionError; the
    deprecated `grad_variables` keyword works with its FutureWarning, or raises beside
    grad_tensors."""
    import warnings
    outcomes = []
    for L in (torch, fg):
        x = L.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                eval(code, {"L": L, "y": x * 1})
                outcomes.append(("ok", x.grad.tolist(), [str(w.message) for w in caught]))
            except (AssertionError, RuntimeError) as exc:
                outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("code", ["a.sum(1, keepdim=np.bool_(True))", "a.sum(1, np.bool_(True))",
                                  "a.mean(1, keepdim=np.bool_(True))", "a.max(1, keepdim=np.bool_(True))",
                                  "a.norm(dim=1, keepdim=np.bool_(True))", "a.amax(1, keepdim=np.bool_(True))"])
def test_keepdim_refuses_a_numpy_bool(code):
    """torch 2.13's parser takes only a Python bool as keepdim ("must be bool, not numpy.bool")."""
    import numpy as np
    texts = []
    for L in (torch, fg):
        with pytest.raises(TypeError) as info:
            eval(code, {"a": L.ones(2, 3), "np": np})
        texts.append(str(info.value))
    assert texts[1] == texts[0]


@pytest.mark.parametrize("code", ["a.sum(L.tensor([5]))", "a.squeeze(L.tensor([5]))", "L.zeros(0).sum(L.tensor(True))",
                                  "a.sum(L.tensor(1.0))", "a.sum(L.tensor([0, 1]))"])
def test_a_one_element_integer_tensor_as_dims_out_of_range(code):
    """torch's int-list parser takes an integer (or bool) tensor of one element as a dim, so an
    out-of-range one is its IndexError; fusegrad's parser texts called it an invalid combination."""
    texts = []
    for L in (torch, fg):
        with pytest.raises((IndexError, TypeError)) as info:
            eval(code, {"a": L.ones(2, 3), "L": L})
        texts.append((info.type.__name__, str(info.value).split("\n")[0]))
    assert texts[1] == texts[0]


@pytest.mark.parametrize("code", ["L.tensor(7).cumsum(0, dtype=L.bool)", "L.zeros(0, 3).cumsum(0, dtype=L.bool)",
                                  "L.tensor([7]).cumsum(0, dtype=L.bool)", "L.tensor(0.0).cumsum(0, dtype=L.bool)"])
def test_cumsum_to_bool_of_nothing_to_sum(code):
    """torch's cumsum to bool refuses to sum, but a 0-d or empty input is copied, not summed."""
    outcomes = []
    for L in (torch, fg):
        try:
            r = eval(code, {"L": L})
            outcomes.append((r.tolist(), str(r.dtype).split(".")[-1], tuple(r.shape)))
        except NotImplementedError as exc:
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]
