"""Round 21 of torch parity: what this session's probes found (each test names the behaviour
and checks it against torch 2.13, eager and inside fg.compile)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)

MODES = ["eager", "compiled"]


def _run(lib, mode, f, *args):
    return (fg.compile(f) if lib is fg and mode == "compiled" else f)(*args)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", ["0", "0:1", "None", "..., 0", "1:, None", "0, 1", ":", "..."])
@pytest.mark.parametrize("part", ["split(2, -1)[1]", "unbind(0)[0]"])
def test_setitem_into_a_split_part_names_the_indexing_view(part, key, mode):
    """torch writes `v[key] = value` through the view v[key]: the multi-output error names that
    view's node (Select, Slice, Unsqueeze), and the split itself only for a whole-tensor key."""
    def case(lib):
        def f(x):
            v = eval("x." + part)
            exec(f"v[{key}] = 3.0", {"v": v})
            return v
        return outcome(lambda: _run(lib, mode, f, lib.ones(3, 4, requires_grad=True) * 1))
    theirs, ours = case(torch), case(fg)
    if (part, key) != ("unbind(0)[0]", "0, 1"):          # (too many indices for the 1-d part)
        assert theirs[0] == "RuntimeError" and "returns multiple views" in theirs[1]
    assert ours == theirs


BMM_SHAPES = [(2, 2, 99, 2), (1, 2, 100, 2), (3, 10, 4, 10), (1, 1, 399, 1), (1, 0, 5, 5), (2, 5, 0, 5)]
DTYPE_PAIRS = [("float32", "float64"), ("float64", "float32"), ("float32", "int64"), ("int64", "float64"),
               ("bool", "float32"), ("bool", "int64"), ("int64", "bool")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", ["bmm", "matmul"])
@pytest.mark.parametrize("da,db", DTYPE_PAIRS)
@pytest.mark.parametrize("shape", BMM_SHAPES, ids=str)
def test_batched_product_of_two_dtypes(shape, da, db, form, mode):
    """torch's bmm checks the dtypes on two paths: its own loop below 400 multiply-adds a matrix
    ("expected scalar type Float but found Double"), BLAS above ("... Double but found Float",
    or "expected m1 and m2 to have the same dtype" for an integer or bool mat2); an empty
    operand's product comes first, in mat2's dtype."""
    if mode == "compiled" and shape not in [(2, 2, 99, 2), (1, 2, 100, 2), (1, 0, 5, 5)]:
        pytest.skip("the compiled call checks where eager does; three shapes keep the compiles few")
    batch, rows, k, cols = shape

    def case(lib):
        a = lib.ones(batch, rows, k, dtype=getattr(lib, da))
        b = lib.ones(batch, k, cols, dtype=getattr(lib, db))
        f = (lambda a, b: lib.bmm(a, b)) if form == "bmm" else (lambda a, b: a @ b)
        return outcome(lambda: (lambda r: (str(r.dtype).split(".")[1], tuple(r.shape)))(_run(lib, mode, f, a, b)))
    assert case(fg) == case(torch)
