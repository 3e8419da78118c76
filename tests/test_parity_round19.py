"""Round 19 of torch parity: what this session's probes found (each test names the behaviour
and checks it against torch 2.13)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")


def _masked_fill_of_transposes(x):
    y = x.t().masked_fill(x.t() > 2, 0.0)
    z = (x * 1).t()
    z.masked_fill_(z > 3, -1.0)          # in place: the view keeps its layout
    return y, y.view(-1), z, (y * 2).sum()


@pytest.mark.parametrize("compiled", [False, True])
def test_masked_fill_result_is_row_major_as_torchs(compiled):
    """torch's out-of-place masked_fill fills a row-major clone, whatever its input's layout,
    so view(-1) of it works (fusegrad kept the transposed layout, and view raised)."""
    found = []
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for lib in (torch, fg):
        x = lib.tensor(a, requires_grad=True)
        fn = fg.compile(_masked_fill_of_transposes) if lib is fg and compiled else _masked_fill_of_transposes
        y, flat, z, total = fn(x)
        total.backward()
        found.append((y.stride(), y.is_contiguous(), flat.tolist(), z.stride(), z.tolist(), x.grad.tolist()))
    assert found[0] == found[1]


def _raised(call):
    try:
        call()
    except Exception as exc:         # the outcome compared: class and text
        return type(exc).__name__, str(exc)
    return "ok"


@pytest.mark.parametrize("text", ["float64", "cpu:x", "cuda:0:1", "foo", "CPU", " cpu", "cpu ", "cpu:01", "cpu:-1",
                                  "cpu:", "_x", "a1", "cpu", "cpu:0", "meta"])
def test_device_strings_parse_as_torchs(text):
    """torch's parser takes a type name and an optional ':index' (no leading zero): anything
    else is an invalid device string, an unknown type name its own error."""
    assert _raised(lambda: fg.device(text)) == _raised(lambda: torch.device(text))
    if text not in ("cpu", "cpu:0", "meta"):
        assert _raised(lambda: fg.ones(2).to(text)) == _raised(lambda: torch.ones(2).to(text))


@pytest.mark.parametrize("index", [0, 1])
def test_to_a_bare_device_index_names_an_accelerator(index):
    assert _raised(lambda: fg.ones(2).to(index)) == _raised(lambda: torch.ones(2).to(index))
