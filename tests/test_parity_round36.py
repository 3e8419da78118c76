"""Parity round 36 (an eager probe against torch 2.13): ops that record no node on a part of
split/chunk/unbind whose base was written in place, and the names torch's multi-output view
errors give the node."""
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402
from parity_support import assert_tensor_same, same_error  # noqa: E402

READS = {
    "gt": lambda p, L: p > 0,
    "eq": lambda p, L: p == 3,
    "long": lambda p, L: p.long(),
    "to int64": lambda p, L: p.to(L.int64),
    "bool": lambda p, L: p.bool(),
    "any": lambda p, L: p.any(),
    "argmax": lambda p, L: p.argmax(),
}


def _rebased_part(L, split):
    x = L.ones(2, 2, requires_grad=True)
    b = x.exp()
    parts = {"chunk": lambda: b.chunk(2), "split": lambda: b.split(1), "unbind": lambda: b.unbind(0)}[split]()
    b.add_(1)
    return parts[1]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("split", ["chunk", "split", "unbind"])
@pytest.mark.parametrize("read", sorted(READS))
def test_ops_without_a_node_read_a_rebased_part_of_a_split(read, split, compiled):
    """torch asks for a part's history only where an op records a node: a comparison, an
    integer cast or an argmax of a part whose base was written since gives its values (the
    multi-output view error was raised before, eagerly and compiled)."""
    def run(L):
        return READS[read](_rebased_part(L, split), L)
    ours = fg.compile(lambda: run(fg))() if compiled else run(fg)
    assert_tensor_same(f"{split} {read}", ours, run(torch))


@pytest.mark.parametrize("compiled", [False, True])
def test_an_op_that_records_still_raises_for_a_rebased_part(compiled):
    def run(L):
        part = _rebased_part(L, "chunk")
        assert part.requires_grad
        return part * 2
    if compiled:
        same_error(lambda L: run(L) if L is torch else fg.compile(lambda: run(fg))())
    else:
        same_error(run)


WRITES = {
    "split": lambda b: b.split(1, 0)[0],
    "split_with_sizes": lambda b: b.split([1, 1], 0)[0],
    "unbind": lambda b: b.unbind(0)[1],
    "chunk": lambda b: b.chunk(2)[1],
    "squeeze(0) of a part": lambda b: b.split(1, 0)[0].squeeze(0),
    "squeeze() of a part": lambda b: b.split(1, 0)[0].squeeze(),
    "t() of a part": lambda b: b.split(1, 0)[0].t(),
    "unsqueeze of a part": lambda b: b.split(1, 0)[0].unsqueeze(0),
    "view of a part": lambda b: b.split(1, 0)[0].view(2),
    "select of a part": lambda b: b.split(1, 0)[0][0],
    "slice of a part": lambda b: b.unbind(0)[1][0:1],
    "transpose of a part": lambda b: b.unbind(0)[1].transpose(0, 0),
    "expand of a part": lambda b: b.split(1, 0)[0].expand(3, 2),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_multi_output_view_errors_name_the_node_as_torch(write):
    """torch drops "Backward" and an overload number 0 from the node's name (Split, Squeeze1)."""
    def run(L):
        b = L.ones(2, 2, requires_grad=True).exp()
        WRITES[write](b).mul_(2)
    same_error(run)


KEYS = {
    "mask, slice": lambda L: (L.tensor([True, False, True]), slice(None)),
    "slice, mask": lambda L: (slice(None), L.tensor([True, False])),
    "None, mask": lambda L: (None, L.tensor([True, False, True])),
    "int, mask": lambda L: (0, L.tensor([True, False])),
    "mask, Ellipsis, None": lambda L: (L.tensor([True, False, True]), Ellipsis, None),
    "2-d mask": lambda L: L.tensor([[True, False], [False, True], [True, True]]),
    "list of bools": lambda L: [True, False, True],
    "mask, mask": lambda L: (L.tensor([True, False, True]), L.tensor([True, False])),
    "mask, index": lambda L: (L.tensor([True, False, True]), L.tensor([0])),
    "True, mask": lambda L: (True, L.tensor([True, False, True])),
    "0-d mask, int": lambda L: (L.tensor(True), 1),
}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_a_one_element_value_of_another_dtype_through_masks_as_torch(key):
    """torch writes a one-element value by masked_fill_ (which casts it) only where a bool mask is
    the key's one tensor index; with another tensor index, index_put_ refuses the dtype."""
    def run(L):
        t = L.arange(6).reshape(3, 2)
        t[KEYS[key](L)] = L.tensor(2.5)
        return t
    try:
        want = run(torch)
    except RuntimeError:
        same_error(run)
        return
    assert_tensor_same(key, run(fg), want)


@pytest.mark.parametrize("args", [(10 ** 20,), (0, 10 ** 20, 10 ** 19), (-(2 ** 63) - 1, 0), (2 ** 63,),
                                  (0, 10, 2 ** 63)])
def test_arange_of_an_int_beyond_int64_overflows_as_torch(args):
    same_error(lambda L: L.arange(*args))
