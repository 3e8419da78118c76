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
