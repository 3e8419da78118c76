"""torch's import paths that are modules of a package there and a module (or another
package's module) here: `import fusegrad.autograd.functional`, `from fusegrad.nn.modules.module
import Module`, `from fusegrad.optim.optimizer import Optimizer` ... resolve to the fusegrad
module holding those names (registered in sys.modules once fusegrad is imported)."""
import importlib
import sys
import types

# torch's path (under fusegrad.) -> the fusegrad modules holding its names: one module, or a
# list whose names merge into one module object (torch.nn.modules.* spread differently here;
# the first of the list is fusegrad.nn, whose public names every such path offers, and the
# others add the private base classes user code subclasses: _Loss, _WeightedLoss, _BatchNorm...)
_NN = "fusegrad.nn"
PATHS = {
    "autograd.graph": "fusegrad.autograd_graph",
    "autograd.functional": "fusegrad.autograd_functional",
    "autograd.forward_ad": "fusegrad.autograd_forward_ad",
    "autograd.anomaly_mode": "fusegrad.autograd_anomaly",
    "autograd.gradcheck": "fusegrad.autograd_gradcheck",
    "autograd.grad_mode": "fusegrad.tracer.grad_mode",
    "autograd.function": "fusegrad.tracer.custom_function",
    "nn.modules": [_NN],
    "nn.modules.module": "fusegrad.nn.module",
    "nn.modules.linear": [_NN, "fusegrad.nn.layers"],
    "nn.modules.sparse": [_NN, "fusegrad.nn.layers"],
    "nn.modules.activation": [_NN, "fusegrad.nn.activations", "fusegrad.nn.attention"],
    "nn.modules.loss": [_NN, "fusegrad.nn.layers", "fusegrad.nn.losses"],
    "nn.modules.conv": [_NN, "fusegrad.nn.conv"],
    "nn.modules.pooling": [_NN, "fusegrad.nn.pooling"],
    "nn.modules.padding": [_NN, "fusegrad.nn.padding"],
    "nn.modules.dropout": [_NN, "fusegrad.nn.layers", "fusegrad.nn.dropout"],
    "nn.modules.container": [_NN, "fusegrad.nn.containers"],
    "nn.modules.batchnorm": [_NN, "fusegrad.nn.normalization"],
    "nn.modules.instancenorm": [_NN, "fusegrad.nn.normalization"],
    "nn.modules.normalization": [_NN, "fusegrad.nn.normalization", "fusegrad.nn.layers"],
    "nn.modules.rnn": [_NN, "fusegrad.nn.rnn"],
    "nn.modules.lazy": [_NN, "fusegrad.nn.lazy"],
    "nn.utils.clip_grad": "fusegrad.nn.utils",
    "nn.utils.convert_parameters": "fusegrad.nn.utils",
    "nn.parallel": "fusegrad.nn.parallel",
    "optim.optimizer": "fusegrad.optim",
    "utils.hooks": "fusegrad.tracer.hooks",
}


def _merged(name: str, sources: list) -> types.ModuleType:
    """A module named `name` holding the names of `sources`' modules (a later one's private
    names added to the earlier ones' public names)."""
    module = types.ModuleType(name, f"torch's {name.replace('fusegrad', 'torch', 1)}: names of "
                                    + ", ".join(sources))
    for k, source in enumerate(sources):
        for key, value in vars(importlib.import_module(source)).items():
            if not key.startswith("__") and (k == 0 or key not in module.__dict__):
                setattr(module, key, value)
    return module


def register() -> None:
    """Put each path in sys.modules (and as an attribute of its parent) where nothing is there."""
    for path, target in PATHS.items():
        name = "fusegrad." + path
        if name in sys.modules:
            continue
        module = _merged(name, target) if isinstance(target, list) else importlib.import_module(target)
        sys.modules[name] = module
        parent, _, leaf = name.rpartition(".")
        # (a function of that name stays: torch.autograd.gradcheck is the function there too)
        if not hasattr(sys.modules[parent], leaf) or isinstance(getattr(sys.modules[parent], leaf), types.ModuleType):
            setattr(sys.modules[parent], leaf, module)
