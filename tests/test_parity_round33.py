"""Round 33 of torch parity (probes S, T, U and this session's own checks).

A backward's one root is evaluated by torch's engine even when no requested input is
reachable from it (`autograd.grad(y, [unrelated])`, `y.backward(inputs=[unrelated])`):
the root's tensor hooks and retain_grad() run on its gradient there. With several roots a
GraphRoot node feeds only the needed ones, so nothing runs. fusegrad ran nothing."""
import warnings

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

IDLE_ROOT_CASES = [
    "y=x*2; y.retain_grad(); y.register_hook(lambda g: g*10); "
    "L.autograd.grad(y,[z],L.ones(3),allow_unused=True); out.append(y.grad)",
    "y=x*2; y.retain_grad(); y.register_hook(lambda g: log.append(g.tolist())); "
    "L.autograd.grad([y,y],[z],[L.ones(3),L.ones(3)*2],allow_unused=True); out.append(y.grad)",
    "y=x*2; y.retain_grad()\ntry: L.autograd.grad(y,[z],L.ones(3))\nexcept RuntimeError as e: log.append(str(e)[:40])\n"
    "out.append(y.grad)",
    "y=x*2; w=z*3; y.retain_grad(); w.retain_grad(); L.autograd.grad([y,w],[z],[L.ones(3),L.tensor(5.)]); "
    "out.extend([y.grad, w.grad])",
    "y=x*2; y.register_hook(lambda g: log.append(g.requires_grad)); y.retain_grad(); "
    "L.autograd.grad(y,[z],L.ones(3),allow_unused=True,create_graph=True); out.append(y.grad)",
    "y=x*2; y.retain_grad(); y.backward(L.ones(3), inputs=[z]); y.backward(L.ones(3)*3, inputs=[z]); "
    "out.extend([y.grad, x.grad, z.grad])",
    "x.register_hook(lambda g: log.append(g.tolist())); L.autograd.grad(x,[z],L.ones(3),allow_unused=True); "
    "out.append(x.grad)",
    "y=(x*2)[1:]; y.retain_grad(); L.autograd.grad(y,[z],L.ones(2),allow_unused=True); out.append(y.grad)",
    "a,b=(x*2).split(2); a.retain_grad(); b.retain_grad(); "
    "L.autograd.grad([a,b],[z],[L.ones(2),L.ones(1)],allow_unused=True); out.extend([a.grad, b.grad])",
    "y=x*2; y.retain_grad(); y.sum().backward(inputs=[z]); out.append(y.grad)",
]


def _idle_root(L, case):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = L.tensor(1.0, requires_grad=True)
    log, out = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(case, {"L": L, "x": x, "z": z, "log": log, "out": out})
    return log, [None if t is None else t.tolist() for t in out]


@pytest.mark.parametrize("case", IDLE_ROOT_CASES)
def test_hooks_and_retain_grad_of_a_root_no_input_is_reachable_from(case):
    assert _idle_root(fg, case) == _idle_root(torch, case)


# torch.typename in nn's error texts names torch's module path for the classes fusegrad
# mirrors (probe R): 'torch.nn.modules.activation.ReLU', not 'fusegrad.nn.layers.ReLU'.
TYPENAME_CASES = [
    "m.bar = L.nn.ReLU()", "m.bar = L.nn.Sequential()", "m.bar = L.optim.SGD", "m.bar = L.ones(2)",
    "L.nn.utils.vector_to_parameters(L.nn.ReLU(), [])", "L.nn.utils.vector_to_parameters([1], [])",
    "m.register_parameter('q', L.nn.MSELoss())", "m.add_module('q', L.ones(1))", "m.add_module('q', L.Size([1]))",
    "m.register_buffer('bb', L.nn.Linear(1, 1))", "m.bar = Mine()",
]


def _typename_error(L, statement):
    m = L.nn.Linear(2, 2)
    m.bar = L.nn.Parameter(L.ones(1))

    class Mine(L.nn.Module):
        pass
    with pytest.raises(TypeError) as info:
        exec(statement, {"L": L, "m": m, "Mine": Mine})
    return str(info.value).replace("test_parity_round33.", "")


@pytest.mark.parametrize("statement", TYPENAME_CASES)
def test_type_names_in_nn_errors_are_torchs(statement):
    assert _typename_error(fg, statement) == _typename_error(torch, statement)
