"""Round 45 of torch parity (alias fuzzer, seed 97725): which values a compiled call's backward
checks when its inputs include a view made under no_grad of a tensor that requires grad (a
leaf whose edge leads nowhere). torch's backward() runs every node inside the call: a node
with an edge that leads somewhere checks all it saved, one without (all its inputs are such
views) runs idle and checks only the outputs it saved. The compiled call's node did not run
where no gradient it computes reached anything (a version error went missing), and where
one did, it checked the view it saved for the view's own gradient (a false error). And (seed
92554) a detach saved before a `.data` write of its memory: stale after a later bump of its
counter, not by the `.data` write itself."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import runtime_error as _error, without_node_name as _version_part  # noqa: E402


def _seed_97725(L, compiled: bool, write_after: bool):
    # s3 shares s0's memory without its history; the call writes it with a value that has a
    # history only through s2 (a view made under no_grad: it leads nowhere), then saves a view
    # of it. s3's later write changes that saved view.
    s0 = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    s1 = s0.reshape(-1)
    with L.no_grad():
        s2 = s0.unsqueeze(0)
    s3 = s1.detach()

    def f(a0, a1):
        a0.sub_(a1.flatten())
        t2 = a0[1:]
        return (t2 * t2).sum()
    out = (fg.compile(f) if compiled else f)(s3, s2)
    if write_after:
        s3.mul_(3.0)
    return lambda: (out.backward(), s0.grad, s2.grad)


def _idle_view(L, compiled: bool, body: str, write: str, with_leaf: bool):
    # `v` is a view made under no_grad; `y` a leaf that requires grad (when with_leaf, the
    # call's node then has an edge that leads somewhere). `write` is changed under no_grad
    # after the call: "v" the view, "w" a result the call returns.
    x = L.tensor([0.5, -1.5, 2.0], requires_grad=True)
    y = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.no_grad():
        v = x[:]

    def f(v, y):
        if body == "square":            # MulBackward0 of v, v: idle, saves only inputs
            w = v + 0.0
            loss = (v * v).sum()
        elif body == "through-add":     # w's node leads to AddBackward0: checks w
            w = v + 0.0
            loss = (w * w).sum()
        else:                           # relu saves its result, which an idle node checks
            w = v.relu()
            loss = (w * 2.0).sum()
        if with_leaf:
            loss = loss + (y * 2.0).sum()
        return loss, w
    loss, w = (fg.compile(f) if compiled else f)(v, y)
    with L.no_grad():
        (v if write == "v" else w).mul_(2.0)
    return lambda: (loss.backward(), y.grad)


@pytest.mark.parametrize("write_after", [True, False], ids=["written-after-the-call", "not-written"])
def test_a_call_whose_gradient_reaches_only_a_no_grad_view_checks_what_its_nodes_saved(write_after):
    want = _error(_seed_97725(torch, False, write_after))
    assert (want is not None) == write_after
    for compiled in (False, True):
        got = _error(_seed_97725(fg, compiled, write_after))
        assert _version_part(got) == _version_part(want), (compiled, got, want)


def test_without_a_later_write_the_gradients_are_torchs():
    want = _seed_97725(torch, False, False)()
    got = _seed_97725(fg, True, False)()
    assert want[1] is None and got[1] is None and want[2] is None and got[2] is None


@pytest.mark.parametrize("with_leaf", [False, True], ids=["idle-call", "call-with-a-leaf"])
@pytest.mark.parametrize("body,write", [("square", "v"), ("through-add", "w"), ("relu", "w"),
                                        ("through-add", "v"), ("relu", "v")])
def test_nodes_on_a_no_grad_views_path_check_as_torchs(body, write, with_leaf):
    want = _error(_idle_view(torch, False, body, write, with_leaf))
    for compiled in (False, True):
        got = _error(_idle_view(fg, compiled, body, write, with_leaf))
        assert _version_part(got) == _version_part(want), (compiled, got, want)
    if want is None:
        grads = [_idle_view(L, c, body, write, with_leaf)()[1] for L, c in ((torch, False), (fg, True))]
        assert (grads[0] is None) == (grads[1] is None)
        if grads[0] is not None:
            assert grads[0].tolist() == grads[1].tolist()


def _seed_92554(L, compiled: bool, read_inside: bool, fill: bool):
    # t2 (a detach of a1: a1's counter) is saved; the call writes a1's memory through a1.data
    # (no bump of a1's counter: t2 reads the new values), with a value computed from a1 or not,
    # then, in some cases, a versioned write of a1's memory (s1.fill_) makes t2 stale.
    s0 = L.tensor([[-1.75, -1.75, -2.0], [-0.75, 0.5, 1.25]], dtype=L.float64, requires_grad=True)
    s1 = s0.t()[1]
    s2 = s1.view(1, 2)

    def f(a0, a1):
        t2 = a1.detach()
        t4 = a1.data
        t6 = t2 * a0
        with L.no_grad():
            t4.sub_(a1 * 2 if read_inside else 1.0)
            if fill:
                s1.fill_(-0.25)
        return (t6 * t6).sum()
    out = (fg.compile(f) if compiled else f)(s2, s1)
    return lambda: (out.backward(), s0.grad.tolist())


@pytest.mark.parametrize("fill", [True, False], ids=["written-with-a-bump", "only-through-data"])
@pytest.mark.parametrize("read_inside", [True, False], ids=["data-write-reads-it", "data-write-of-a-number"])
def test_a_detach_saved_before_a_data_write_is_stale_only_after_a_bump_of_its_counter(read_inside, fill):
    # (alias fuzzer seed 92554: the compiled call missed the error where the .data write read
    # a1, and raised a false one where it did not and nothing bumped the counter)
    want = _error(_seed_92554(torch, False, read_inside, fill))
    assert (want is not None) == fill
    for compiled in (False, True):
        got = _error(_seed_92554(fg, compiled, read_inside, fill))
        assert _version_part(got) == _version_part(want), (compiled, got, want)
    if not fill:
        assert _seed_92554(fg, True, read_inside, fill)()[1] == _seed_92554(torch, False, read_inside, fill)()[1]


def _seed_90229(L, compiled: bool, view_of_view: bool, how: str):
    # s2 is a view made under no_grad of a leaf (s4 a view of it made with grad on: torch's error
    # then names the node that made s4); the call writes its memory, then uses it with grad
    s1 = L.tensor([[-0.5, 1.5, 1.75], [-0.5, -1.5, 0.75], [-0.5, 1.0, -1.75]], requires_grad=True)
    with L.no_grad():
        s2 = s1.view(9, 1)
    s4 = s2[..., :] if view_of_view else s2

    def f(a1):
        with L.no_grad():
            if how == "detach-of-the-view":
                a1.detach().mul_(2.0)
            elif how == "the-view":
                a1.mul_(2.0)
            else:
                s1.detach().mul_(2.0)
        return a1.tanh().sum()
    return lambda: (fg.compile(f) if compiled else f)(s4)


@pytest.mark.parametrize("how", ["detach-of-the-view", "the-view", "detach-of-the-base"])
@pytest.mark.parametrize("view_of_view", [False, True], ids=["no-grad-view", "view-of-a-no-grad-view"])
def test_a_no_grad_view_whose_counter_the_call_moved_raises_as_torchs(view_of_view, how):
    # (alias fuzzer seed 90229: through a detach() of the view the compiled call raised nothing,
    # and for a view of a view it named no node)
    want = _error(_seed_90229(torch, False, view_of_view, how))
    assert want is not None and want.startswith("Output 0 of Alias" if view_of_view else "A view was created")
    for compiled in (False, True):
        assert _error(_seed_90229(fg, compiled, view_of_view, how)) == want, compiled


def _seed_90978(L, compiled: bool, first_read: str, write_after: str):
    # x read first through itself, then through x.data (its own version counter), which an op
    # saves: torch checks the saved x.data on its own counter, which a write of x never moves
    s0 = L.tensor([[-2.0, -0.75, 1.75]], dtype=L.float64)
    s2 = s0[None] if first_read == "view" else s0
    w = L.tensor([[-0.25, 1.0, -1.0], [-2.0, 0.0, 1.0]], requires_grad=True)

    def f(a0):
        a0[::2] if first_read == "view" else a0 * 1
        t1 = a0.data
        t4 = t1 / (w.abs() + 1)
        return (t4 * -1.0).sum() + (a0 - w * 0.5).sum(), t1
    out, t1 = (fg.compile(f) if compiled else f)(s2)
    with L.no_grad():
        (s2 if write_after == "x" else t1).add_(3.0)
    return lambda: (out.backward(), w.grad.tolist())


@pytest.mark.parametrize("write_after", ["x", "x.data"])
@pytest.mark.parametrize("first_read", ["x", "view"])
def test_a_saved_data_read_after_its_tensor_is_checked_on_its_own_counter(first_read, write_after):
    # (alias fuzzer seed 90978: the compiled backward checked it on x's counter: a false error)
    want = _error(_seed_90978(torch, False, first_read, write_after))
    assert (want is not None) == (write_after == "x.data")
    for compiled in (False, True):
        got = _error(_seed_90978(fg, compiled, first_read, write_after))
        assert _version_part(got) == _version_part(want), (compiled, got, want)
    if want is None:
        assert _seed_90978(fg, True, first_read, write_after)()[1] == _seed_90978(torch, False, first_read, write_after)()[1]


def _seed_90728(L, compiled: bool, product: str, view: str, write: str):
    # v is made in the call under no_grad (or is a view of such a view made with grad on):
    # its edge leads nowhere, so torch's node saves only what the gradient of x needs (v),
    # and unpacking v after x's counter moved raises the rebased-view error
    x = L.tensor([[0.25, -1.75, -0.75], [0.5, 1.0, 1.75]], requires_grad=True)

    def f(a0):
        with L.no_grad():
            v = a0.t()
        if view == "view-of-it":
            v = v[:]
        y = {"x @ v": lambda: a0 @ v, "v @ x": lambda: v @ a0, "v * x.t()": lambda: v * a0.t(),
             "x.detach() @ v": lambda: a0.detach() @ v}[product]()
        if write == "in-the-call":
            with L.no_grad():
                a0[0].mul_(2.0)
        return y.sum()
    out = (fg.compile(f) if compiled else f)(x)
    if write == "after-the-call":
        with L.no_grad():
            x[0].mul_(2.0)
    return lambda: (out.backward(), None if x.grad is None else x.grad.tolist())


@pytest.mark.parametrize("write", ["in-the-call", "after-the-call"])
@pytest.mark.parametrize("view", ["no-grad-view", "view-of-it"])
@pytest.mark.parametrize("product", ["x @ v", "v @ x", "v * x.t()", "x.detach() @ v"])
def test_a_node_saves_no_input_for_a_no_grad_views_gradient(product, view, write):
    # (alias fuzzer seed 90728: fusegrad saved x for v's gradient too, and raised the version
    # error for x where torch raises the rebased-view error for v)
    want = _error(_seed_90728(torch, False, product, view, write))
    # Compiled, a view of such a view made in the call is left (see the note 63): which
    # of a node's saved values a compiled backward checks first is not torch's unpack order (a
    # view of a view raises the rebased-view error where torch meets it first), and a value
    # only such a view's path saved (x.detach() @ v) is checked for writes inside the call, not
    # after it (the backward program does not read it).
    compiled_too = view == "no-grad-view" or (product == "x.detach() @ v" and write == "in-the-call")
    for compiled in (False, True) if compiled_too else (False,):
        assert _error(_seed_90728(fg, compiled, product, view, write)) == want, compiled


def _seed_91795(L, compiled: bool, first_read_under_no_grad: bool):
    # s4 is a view of s0 made before the call without grad; the call writes s0's memory through
    # another view with a value that has a history, so s4's history is regenerated from it,
    # also when s4 is first read under no_grad and used with grad after
    s0 = L.tensor([[1.0, -0.25], [0.0, -0.25], [-0.75, 0.75]], dtype=L.float64)
    s1 = s0.view(-1)
    s2 = L.tensor([[0.75, -0.5, 0.75]], requires_grad=True)
    s3 = s2[:, 1]
    s4 = s1[::2]

    def f(a0, a1, a2):
        a2.sub_(a1)
        t1 = a1.mean()
        if first_read_under_no_grad:
            with L.no_grad():
                a1 * a0
        return a0.sum() + t1.sum()
    (fg.compile(f) if compiled else f)(s4, s3, s1).backward()
    return s2.grad.tolist(), s0.tolist()


@pytest.mark.parametrize("first_read_under_no_grad", [True, False], ids=["read-under-no-grad-first", "read-with-grad"])
def test_a_view_read_under_no_grad_after_its_base_gained_history_keeps_it(first_read_under_no_grad):
    # (alias fuzzer seed 91795: the compiled call's gradient missed the path through a0)
    want = _seed_91795(torch, False, first_read_under_no_grad)
    for compiled in (False, True):
        assert _seed_91795(fg, compiled, first_read_under_no_grad) == want, compiled


def _seed_91744(L, compiled: bool, view: bool):
    # c0.div_(y) saves c0's value before the write as a clone (its original self): a write of
    # c0's memory after the call does not reach it
    s0 = L.tensor([[[-1.5, -0.25, -1.5]], [[-2.0, -2.0, -1.75]]], requires_grad=True)
    s1 = s0 * 1
    s2 = s1.transpose(0, 1) if view else s1

    def f(c0):
        t1 = c0 * 1
        c0[:1] = t1[:1] * 2
        c0.div_(t1.sigmoid() + 1)
        return (c0 * 0.5).sum(), c0
    out = (fg.compile(f) if compiled else f)(s2)
    s1.add_(2.0)
    return lambda: (out[0].backward(), s0.grad.tolist())


@pytest.mark.parametrize("view", [True, False], ids=["a-view", "a-tensor"])
def test_an_in_place_ops_original_self_is_not_checked_after_the_call(view):
    # (alias fuzzer seed 91744: the compiled backward checked the view's value before the div_
    # on its counter, a false version error)
    want = _error(_seed_91744(torch, False, view))
    assert want is None
    for compiled in (False, True):
        assert _error(_seed_91744(fg, compiled, view)) is None, compiled
    assert _seed_91744(fg, True, view)()[1] == _seed_91744(torch, False, view)()[1]


def _seed_98561(L, compiled: bool, write: str):
    # c0 is x.data (x's memory, another tensor); a view of it made in the call is written with
    # x read: torch's overlap check compares the two arrays (same bytes, other strides: partial)
    s0 = L.tensor([[-1.75, -1.5, -1.0], [0.5, -2.0, -0.25]])

    def f(a0, c0):
        if write == "unsqueezed":
            c0[None].sub_(a0)
        elif write == "transposed-both":
            c0.t().add_(a0.t())
        else:
            c0[0].add_(a0[0])
        return c0
    error = _error(lambda: (fg.compile(f) if compiled else f)(s0, s0.data))
    return error, s0.tolist()


@pytest.mark.parametrize("write", ["unsqueezed", "transposed-both", "a-row"])
def test_a_write_of_a_view_of_x_data_reading_x_checks_the_overlap_as_torch(write):
    # (alias fuzzer seed 98561: the compiled call wrote where torch raises, changing x)
    want = _seed_98561(torch, False, write)
    for compiled in (False, True):
        assert _seed_98561(fg, compiled, write) == want, compiled


def test_a_write_reaching_x_data_of_a_view_bumps_only_its_own_counter_once():
    # (alias fuzzer seed 99384, a regression of a first fix for 90978: a2 is the .data of a
    # view; writes of the view's memory through another view moved a2's counter too)
    def run(L, compiled):
        s0 = L.tensor([[2.0, 1.25], [0.25, -0.25], [-0.25, 1.75]])
        s2 = s0[0, 1].reshape(1)
        s4 = s0[0, 1].data

        def f(a0, a1, a2):
            a1.sub_(a1.sigmoid())
            with L.no_grad():
                a1.fill_(-0.25)
                t1 = a2 / (a0.abs() + 1)
            a2.copy_(a2)
            return a0.tanh().sum() + t1.abs().sum()
        (fg.compile(f) if compiled else f)(s2, s2, s4)
        return s0._version, s4._version, s0.tolist()
    want = run(torch, False)
    for compiled in (False, True):
        assert run(fg, compiled) == want, compiled


def _seed_99385(L, compiled: bool, write_after: str):
    # x.data read first (its own counter), x after it: x * x saves x, on x's counter
    s0 = L.tensor([[-0.25, -1.5, 1.25], [1.0, 1.5, -0.25]], requires_grad=True)

    def f(a0, a1):
        t1 = a1.data
        t1 * 2
        return (a0 * a0).sum()
    out = (fg.compile(f) if compiled else f)(s0, s0)
    with L.no_grad():
        (s0 if write_after == "x" else s0.data).mul_(3.0)
    return lambda: (out.backward(), s0.grad.tolist())


@pytest.mark.parametrize("write_after", ["x", "x.data"])
def test_x_saved_after_x_data_read_its_memory_is_checked_on_xs_counter(write_after):
    # (alias fuzzer seed 99385: the compiled backward checked nothing, as if x.data were saved)
    want = _error(_seed_99385(torch, False, write_after))
    assert (want is not None) == (write_after == "x")
    for compiled in (False, True):
        assert _error(_seed_99385(fg, compiled, write_after)) == want, compiled


def test_a_write_reaching_three_tensors_over_one_memory_each_holding_its_own_value():
    # (alias fuzzer seed 99887: x, x.detach() and x.data each written with a history, then x
    # written again: the grafts passed the value between them without end, a RecursionError)
    def run(L, compiled):
        s2 = L.tensor([-0.75, 0.0, 1.0, -1.5, -0.5, 0.75], requires_grad=True)

        def f(a2):
            t1 = s2.detach()
            t3 = L.maximum(s2, s2)
            t1.copy_(s2.sum())
            t4 = s2.data
            t4.mul_(s2.sigmoid())
            with L.no_grad():
                s2.mul_(t3)
            return t1 * 1, t4 * 1, a2.sum()
        outs = (fg.compile(f) if compiled else f)(s2 * 1)
        return [o.tolist() for o in outs], s2.tolist(), s2._version
    want = run(torch, False)
    for compiled in (False, True):
        assert run(fg, compiled) == want, compiled


@pytest.mark.parametrize("view", [True, False], ids=["a-view", "a-slice"])
def test_x_copied_into_itself_in_a_call_makes_what_saved_x_stale(view):
    # (alias fuzzer seed 100526: the compiled call counted x.copy_(x) on x's counter at once,
    # outside the trace, so the pow that saved x before it did not raise in the backward)
    def run(L, compiled):
        s0 = L.tensor([[-0.25, 0.75, -0.75], [1.0, 0.5, -0.25], [-1.75, -0.25, -2.0]], requires_grad=True)
        s1 = s0.unsqueeze(1) if view else s0[:]

        def f(a0):
            t1 = s1.pow(3)
            with L.no_grad():
                s1.copy_(s1)
            return t1.sum() + a0.sum()
        out = (fg.compile(f) if compiled else f)(s0)
        return _error(out.backward), s0._version
    want = run(torch, False)
    assert want[0] is not None
    for compiled in (False, True):
        got = run(fg, compiled)
        assert (_version_part(got[0]), got[1]) == (_version_part(want[0]), want[1]), compiled
