"""torch's view of what a grad_fn node saved: `node._saved_self`, `node._saved_result`, ...

torch generates one attribute per value a node keeps for its backward, named after the
argument of the op's signature (`self`, `other`, `exponent`, `mat2`, `condition`, ...),
`result` for its output, and `<arg>_sym_sizes` / `<arg>_sym_numel` for a shape it kept
instead of a tensor. Which ones a node class has is torch's declaration (derivatives.yaml),
so it is a table here, keyed by node class name, as the class names themselves are
(tracer/node.py). Each entry says where fusegrad's node holds the value:

    "in<i>"      operand i as torch saved it: the tensor itself (the same object), a Python
                 scalar operand wrapped in a 0-d tensor (torch's wrapped number), or None
                 where the backward needs no gradient that reads it (torch saves nothing)
    "num<i>"     operand i as a Python number (a Scalar argument: 2 ** x's base, x ** 2.5's
                 exponent)
    "bound<i>"   a clamp bound: "num<i>", or None where it is absent (fusegrad fills it with an
                 infinity, so an explicit infinite bound shows None too)
    "out<k>"     output k: a new tensor over the saved memory whose grad_fn is the node
    "sizes<i>"   operand i's shape, a tuple;  "numel<i>": its element count
    "attr:<a>"   attribute `a` of the recorded op, as a Python value
    "<p>|<q>"    p where the node has it, else q (x ** 2 records the exponent as an attribute,
                 x ** 2.5 as a scalar operand)
    "reduction"  the loss's reduction as torch's enum (0 none, 1 mean, 2 sum)
    "rows<i>"    operand i's first size (torch's `<arg>_sym_argsize_0`)
    "unsigned:<a>"  attribute `a`, an optional index, as torch's unsigned int64 shows it:
                 None (torch's -1) is 2**64 - 1
    "false"      a flag fusegrad has no other value for (embedding's `sparse`)
    "alpha"      add/sub's alpha, as the call gave it (remember_alpha)

Reading a tensor attribute checks what a backward would check: a value changed in place
since it was saved raises the version-counter error, a freed graph raises the freed-graph
error. Attributes whose value torch prints in an unsigned or otherwise private form (a
negative `dim`, `ignore_index`) are not offered, except embedding's `padding_idx`, whose
only such value is "no padding row". `node.metadata` is a dict per node, as
torch's.
"""
from __future__ import annotations

import math
import weakref

from .saved_hooks import PackedSaved

import numpy as np

_RESULT = {"result": "out0"}
_SELF = {"self": "in0"}
_BINARY = {"self": "in0", "other": "in1"}
_ALPHA = {"alpha": "alpha"}
_SIZES = {"self_sym_sizes": "sizes0"}

SAVED_ATTRIBUTES: dict[str, dict[str, str]] = {
    "MulBackward0": _BINARY, "DivBackward0": _BINARY, "MaximumBackward0": _BINARY,
    "MinimumBackward0": _BINARY, "Atan2Backward0": _BINARY,
    "HypotBackward0": {**_BINARY, **_RESULT},
    "AddBackward0": _ALPHA, "SubBackward0": _ALPHA, "RsubBackward0": _ALPHA, "RsubBackward1": _ALPHA,
    "PowBackward0": {"self": "in0", "exponent": "attr:exponent|num1"},
    "PowBackward1": {"self": "in0", "exponent": "in1", **_RESULT},
    "PowBackward2": {"self": "num0", "exponent": "in1", **_RESULT},
    **{name: _RESULT for name in ("ExpBackward0", "Exp2Backward0", "Expm1Backward0", "TanBackward0",
                                  "TanhBackward0", "SigmoidBackward0", "SqrtBackward0", "RsqrtBackward0",
                                  "ReciprocalBackward0", "ReluBackward0", "SoftmaxBackward0",
                                  "LogSoftmaxBackward0")},
    **{name: _SELF for name in ("LogBackward0", "Log2Backward0", "Log10Backward0", "Log1PBackward0",
                                "AbsBackward0", "SinBackward0", "CosBackward0", "AsinBackward0",
                                "AcosBackward0", "AtanBackward0", "SinhBackward0", "CoshBackward0",
                                "ErfBackward0", "SiluBackward0", "VarBackward0")},
    "SumBackward0": _SIZES,
    "SumBackward1": {**_SIZES, "keepdim": "attr:keepdim"},
    "MeanBackward0": {**_SIZES, "self_sym_numel": "numel0"},
    "MeanBackward1": {**_SIZES, "self_sym_numel": "numel0", "keepdim": "attr:keepdim"},
    "ViewBackward0": _SIZES, "ExpandBackward0": _SIZES,
    "WhereBackward0": {"condition": "in0"},
    "ClampBackward0": {"self": "in0", "min": "in1", "max": "in2"},
    "ClampBackward1": {"self": "in0", "min": "bound1", "max": "bound2"},
    "LinalgVectorNormBackward0": {**_SELF, **_RESULT, "keepdim": "attr:keepdim", "ord": "attr:p"},
    "MaxBackward1": {**_SELF, **_RESULT}, "MinBackward1": {**_SELF, **_RESULT},
    "AmaxBackward0": {**_SELF, **_RESULT, "keepdim": "attr:keepdim"},
    "AminBackward0": {**_SELF, **_RESULT, "keepdim": "attr:keepdim"},
    "MaxBackward0": {"indices": "out1", **_SIZES, "keepdim": "attr:keepdim"},
    "MinBackward0": {"indices": "out1", **_SIZES, "keepdim": "attr:keepdim"},
    "StdBackward0": {**_SELF, **_RESULT}, "LogsumexpBackward0": {**_SELF, **_RESULT},
    "DotBackward0": {"self": "in0", "tensor": "in1"},
    "MmBackward0": {"self": "in0", "mat2": "in1", **_SIZES, "mat2_sym_sizes": "sizes1"},
    "MseLossBackward0": {"self": "in0", "target": "in1", "reduction": "reduction"},
    "NllLossBackward0": {"self": "in0", "target": "in1", "reduction": "reduction"},
    "EmbeddingBackward0": {"indices": "in1", "padding_idx": "unsigned:padding_idx",
                           "scale_grad_by_freq": "attr:scale_grad_by_freq", "sparse": "false",
                           "weight_sym_argsize_0": "rows0"},
}

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_METADATA: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def node_metadata(node) -> dict:
    """torch's Node.metadata: a dict of the caller's own, one per node, empty at first."""
    found = _METADATA.get(node)
    if found is None:
        found = _METADATA[node] = {}
    return found


def saved_attribute_names(node) -> list:
    """The `_saved_*` attribute names a node of this class has (for dir())."""
    return [f"_saved_{name}" for name in _spec_of(node)]


def saved_attribute(node, attribute: str):
    """The value of `node._saved_<name>`; AttributeError for a name the class lacks."""
    where = _spec_of(node).get(attribute[len("_saved_"):]) if attribute.startswith("_saved_") else None
    if where is None:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attribute}'")
    if "|" in where:
        first, second = where.split("|")
        where = first if first[5:] in dict(node.attrs) else second
    if where.startswith("in") or where.startswith("out"):
        return _saved_tensor(node, where)
    if where.startswith("numel"):
        return math.prod(node.in_types[int(where[5:])].shape)
    if where.startswith("num"):
        return _number(_const(node, int(where[3:])))
    if where.startswith("bound"):
        value = _number(_const(node, int(where[5:])))
        return None if value in (float("inf"), float("-inf")) else value
    if where.startswith("sizes"):
        return tuple(node.in_types[int(where[5:])].shape)
    if where.startswith("rows"):
        return node.in_types[int(where[4:])].shape[0]
    if where.startswith("unsigned:"):
        value = dict(node.attrs).get(where[9:])
        return 2 ** 64 - 1 if value is None else value
    if where == "false":
        return False
    if where.startswith("attr:"):
        value = dict(node.attrs).get(where[5:])
        return _number(value) if isinstance(value, (float, np.floating)) else value
    if where == "reduction":
        return _REDUCTIONS[dict(node.attrs)["reduction"]]
    return _alpha(node)


def _spec_of(node) -> dict:
    from fusegrad.ir import OPS
    from fusegrad.ir.ops.registry import OPAQUE
    opdef = OPS.get(node.op) if node.op is not None else None
    if opdef is None or opdef.group == OPAQUE:        # a leaf's or a compiled call's node
        return {}
    return SAVED_ATTRIBUTES.get(type(node).__name__, {})


def _saved_tensor(node, where: str):
    from fusegrad.ir import OPS

    from .node import _FREED_MSG
    from .saved_checks import _promoted_source, _raise_modified
    from .tensor import Tensor
    output = where.startswith("out")
    index = int(where[3:] if output else where[2:])
    if node._freed:
        raise RuntimeError(_FREED_MSG)
    saved = node.saved.get(("out" if output else "in", index))
    if saved is None:
        if output or index >= len(node.consts) or node.consts[index] is None:
            return None                 # not saved: its reader's gradient is not needed
        return _wrapped_number(node.consts[index])
    if isinstance(saved, PackedSaved):
        return saved.unpacked()         # (torch's attribute calls unpack_hook)
    if saved.box[0] != saved.version:
        # (the version check only: torch's attribute, unlike a backward, lets a tensor detached
        # in place since be read, so saved_checks._checked_array is not the check here)
        _raise_modified(saved, node, index)
    if not output:
        return _promoted_source(saved) or saved.tensor
    # torch unpacks a saved output as a new tensor over the same memory with the node as grad_fn
    t = Tensor._wrap(saved.array)
    t._vbox = saved.box
    if node.out_types[index].dtype.is_floating_point and index not in OPS[node.op].nondiff_outputs:
        t._grad_fn, t._output_nr, t._requires_grad = node, index, True     # (max's indices: no history)
    return t


def _const(node, index: int):
    return node.consts[index] if index < len(node.consts) else None


def _number(value):
    """A Scalar argument as torch shows it: an int where it is whole (x ** 2, clamp(min=0))."""
    if value is None:
        return None
    value = np.asarray(value).item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _wrapped_number(value):
    """A Python scalar operand as torch saves it: a 0-d tensor, int64 for a whole number,
    float64 otherwise (torch's wrapped numbers keep the Python type)."""
    from .tensor import Tensor
    number = _number(value)
    if isinstance(number, bool):
        return Tensor._wrap(np.asarray(number))
    return Tensor._wrap(np.asarray(number, dtype=np.int64 if isinstance(number, int) else np.float64))


_ALPHAS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def remember_alpha(out, alpha) -> None:
    """Note the alpha of an eager add/sub/rsub(alpha=) on the node that made `out` (fusegrad
    scales the operand before the node, torch's node keeps alpha)."""
    node = getattr(out, "_grad_fn", None)
    if node is not None and out._sym is None:
        _ALPHAS[node] = alpha.item() if hasattr(alpha, "item") else alpha


def _alpha(node):
    """add/sub's alpha as the call gave it (1 by default)."""
    return _ALPHAS.get(node, 1)
