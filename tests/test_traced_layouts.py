"""The layout of an elementwise result traced inside fg.compile (tracer/layout.py
`traced_elementwise_layout`), kept per shape and operand layouts: every call of a compiled
function that multiplies a transpose asks again. What is kept must tell apart operands of one
shape laid out differently, and give torch's strides on every call."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.tracer import layout

torch = pytest.importorskip("torch", reason="torch is the oracle of result strides")

# (operand views of one result shape, [6, 4], laid out four ways)
VIEWS = {
    "transpose": lambda L, x: x.reshape(4, 6).t(),
    "strided": lambda L, x: x.reshape(6, 4 * 1).t().t(),
    "column slice": lambda L, x: L.cat([x.reshape(6, 4), x.reshape(6, 4)], 1)[:, ::2],
    "expand": lambda L, x: x.reshape(6, 4)[:, :1].expand(6, 4),
}


def _strides(L, view: str, compiled: bool):
    def f(x):
        v = VIEWS[view](L, x)
        return v * 2.0, v.exp() + v, (v * v).t()
    fn = fg.compile(f) if compiled else f
    outs = fn(L.arange(24, dtype=L.float32))
    return [tuple(o.stride()) for o in outs]


@pytest.mark.parametrize("view", list(VIEWS))
def test_compiled_result_strides_as_torchs_on_every_call(view):
    want = _strides(torch, view, False)
    for _ in range(2):          # (the second call reads what the first kept)
        for other in VIEWS:     # (and after calls with the other layouts of that shape)
            assert _strides(fg, view, True) == want, view
            _strides(fg, other, True)


def test_kept_layouts_equal_the_worked_out_ones():
    """Each kept entry is what the stand-ins give, for traced views of views too."""
    layout._ELEMENTWISE_LAYOUTS.clear()
    for view in VIEWS:
        _strides(fg, view, True)
    assert layout._ELEMENTWISE_LAYOUTS
    x = fg.from_numpy(np.arange(24, dtype=np.float32))
    for view in VIEWS:
        v = VIEWS[view](fg, x)
        shape = tuple(v.shape)
        assert layout.traced_elementwise_layout(shape, [v]) == \
            layout.elementwise_strides(shape, [layout.layout_stand_in(v)])
