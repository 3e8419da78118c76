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
                 None (torch's -1) is 2**64 - 1, a negative value v is 2**64 + v
    "false"      a flag fusegrad has no other value for (embedding's `sparse`)
    "true"       likewise (linalg.lu's `pivot`: pivot=False is refused on the CPU)
    "size<i>:<d>"   operand i's size at dim d (torch's `<arg>_sym_argsize_minus_1`: d = -1)
    "sizes_opt<i>"  operand i's shape, (0,) where the op lacks it (convolution's absent bias)
    "float:<a>"  attribute `a` as a float (a `double` argument: pdist's p)
    "values<i>"  operand i's values as a tuple of ints (ctc_loss's lengths: an int[] argument;
                 torch's outlive a backward that frees the graph, here they raise its error)
    "bag_mode"   embedding_bag's mode as torch's enum (0 sum, 1 mean, 2 max)
    "slice_step" the step of the last entry of a getitem's index (slice's dim; 1 where none is left)
    "held:<w>"   w ("in<i>"), offered only where the node holds that operand: torch's node saves it
                 whatever needs a gradient, fusegrad's where its backward reads it (convolution's
                 weight where only the input needs a gradient); a node without it has no such
                 attribute
    "base:<w>"   w read on the view node a `*_copy` node hides (tracer/copy_functions.py):
                 "base:sizes0" is the viewed tensor's shape
    "alpha"      add/sub's alpha, as the call gave it (remember_alpha)

Reading a tensor attribute checks what a backward would check: a value changed in place
since it was saved raises the version-counter error, a freed graph raises the freed-graph
error. Attributes whose value torch prints in an unsigned or otherwise private form (a
negative `dim`, `ignore_index`) are not offered, except embedding's `padding_idx`, whose
only such value is "no padding row". An entry keyed "<class>@<op>" is the one for the nodes
of that class that record op `op` (EmbeddingBagBackward0 of max mode). `node.metadata` is a dict
per node, as torch's.
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
_BASE_SIZES = {"self_sym_sizes": "base:sizes0"}

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
    # (left out where fusegrad's node does not hold torch's value: a `dim` fusegrad normalized,
    # an output fusegrad's op recomputes in its backward, a stride given or defaulted)
    "WeightNormInterfaceBackward0": {"v": "in0", "g": "in1", "dim": "attr:dim"},
    "CtcLossBackward0": {"log_probs": "in0", "targets": "in1", "input_lengths": "values2",
                         "target_lengths": "values3", "blank": "attr:blank", "zero_infinity": "attr:zero_infinity",
                         "result0": "out0"},
    **{f"FractionalMaxPool{n}DBackward0": {"self": "in0", "kernel_size": "attr:kernel_size",
                                          "output_size": "attr:output_size", "result1": "out1"} for n in (2, 3)},
    "PackPaddedSequenceBackward0": {"input_sym_sizes": "sizes0"},
    "MultilabelMarginLossBackward0": {"self": "in0", "reduction": "reduction"},
    "MaxUnpool2DBackward0": {"indices": "in1"}, "MaxUnpool3DBackward0": {"indices": "in1"},
    "EmbeddingBagBackward0": {"indices": "in1", "mode": "bag_mode", "scale_grad_by_freq": "attr:scale_grad_by_freq",
                              "sparse": "false", "weight_sym_argsize_0": "rows0"},
    "EmbeddingBagBackward0@embedding_bag_max": {"mode": "bag_mode", "scale_grad_by_freq": "false", "sparse": "false",
                                                "weight_sym_argsize_0": "rows0"},
    "PdistBackward0": {"self": "in0", "p": "float:p", "result": "out0"},
    "AsStridedBackward0": {"size": "attr:size", "stride": "attr:stride", "storage_offset": "attr:storage_offset"},
    "AsStridedScatterBackward0": {"size": "attr:size", "stride": "attr:stride",
                                  "storage_offset": "attr:storage_offset"},
    "AsStridedBackward0_copy": {"size": "base:attr:size", "stride": "base:attr:stride",
                                "storage_offset": "base:attr:storage_offset"},
    "LinalgLuFactorExBackward0": {"LU": "out0", "pivot": "true"},
    "LinalgLuBackward0": {"P": "out0", "L": "out1", "U": "out2", "pivot": "true"},
    "LinalgLuSolveBackward0": {"LU": "in0", "pivots": "in1", "result": "out0", "adjoint": "attr:adjoint",
                               "left": "attr:left"},
    "LuUnpackBackward0": {"LU_data_sym_argsize_minus_1": "size0:-1", "LU_data_sym_argsize_minus_2": "size0:-2"},
    "CholeskySolveBackward0": {"input2": "in1", "result": "out0", "upper": "attr:upper"},
    "CholeskyInverseBackward0": {"self": "in0", "result": "out0", "upper": "attr:upper"},
    "TriangularSolveBackward0": {"A": "in1", "solution": "out0", "transpose": "attr:transpose",
                                 "unitriangular": "attr:unitriangular", "upper": "attr:upper"},
    "LinalgCholeskyExBackward0": {"L": "out0", "upper": "attr:upper"},
    "CholeskyBackward0": {"result": "out0", "upper": "attr:upper"},
    "UnsafeSplitBackward0": _SIZES,
    "UnsafeSplitWithSizesBackward0": {**_SIZES, "split_sizes": "attr:sizes"},
    **{name + "_copy": _BASE_SIZES for name in ("ViewBackward0", "ExpandBackward0", "SqueezeBackward0",
                                                "SqueezeBackward1", "SqueezeBackward2", "SelectBackward0",
                                                "SplitBackward0")},
    "SliceBackward0_copy": {**_BASE_SIZES, "step": "base:slice_step"},
    "DiagonalBackward0_copy": {**_BASE_SIZES, "offset": "base:unsigned:offset"},
    "UnfoldBackward0_copy": {**_BASE_SIZES, "size": "base:attr:size", "step": "base:attr:step"},
    "SplitWithSizesBackward0_copy": {**_BASE_SIZES, "split_sizes": "base:attr:sizes"},
    "ConvolutionBackward0": {"input": "held:in0", "weight": "held:in1", "bias_sym_sizes_opt": "sizes_opt2",
                             **{a: f"attr:{a}" for a in ("stride", "padding", "dilation", "transposed",
                                                         "output_padding", "groups")}},
    "MaxPool3DWithIndicesBackward0": {"self": "in0", "result1": "out1", "kernel_size": "attr:kernel_size",
                                      "padding": "attr:padding", "dilation": "attr:dilation",
                                      "ceil_mode": "attr:ceil_mode"},
    "AvgPool3DBackward0": {"self": "in0", **{a: f"attr:{a}" for a in ("kernel_size", "padding", "ceil_mode",
                                                                      "count_include_pad", "divisor_override")}},
    "AdaptiveAvgPool3DBackward0": _SELF,
    "AdaptiveMaxPool3DBackward0": {"self": "in0", "result1": "out1"},
}
_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}

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
    return [f"_saved_{name}" for name, where in _spec_of(node).items() if _offered(node, where)]


def saved_attribute(node, attribute: str):
    """The value of `node._saved_<name>`; AttributeError for a name the class lacks."""
    where = _spec_of(node).get(attribute[len("_saved_"):]) if attribute.startswith("_saved_") else None
    if where is None or not _offered(node, where):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attribute}'")
    return _value(node, where)


def _offered(node, where: str) -> bool:
    """Whether the node offers the attribute: a "held:" one only where it holds the operand
    (or held it: after a backward freed it, reading it raises the freed-graph error)."""
    if not where.startswith("held:"):
        return True
    return node._freed or ("in", int(where[7:])) in node.saved


def _value(node, where: str):
    """The value `where` (the mini-language above) names on `node`."""
    if where.startswith("base:"):
        return _base_value(node, where[5:])
    if where.startswith("held:"):
        where = where[5:]
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
    if where.startswith("sizes_opt"):
        index = int(where[9:])
        return tuple(node.in_types[index].shape) if index < len(node.in_types) else (0,)
    if where.startswith("sizes"):
        return tuple(node.in_types[int(where[5:])].shape)
    if where.startswith("size"):
        index, dim = where[4:].split(":")
        return node.in_types[int(index)].shape[int(dim)]
    if where.startswith("values"):
        return tuple(int(v) for v in np.asarray(_operand_array(node, int(where[6:]))).reshape(-1))
    if where.startswith("rows"):
        return node.in_types[int(where[4:])].shape[0]
    if where.startswith("unsigned:"):
        value = dict(node.attrs).get(where[9:])
        return 2 ** 64 - 1 if value is None else int(value) % 2 ** 64
    if where == "false":
        return False
    if where == "true":
        return True
    if where.startswith("float:"):
        return float(dict(node.attrs)[where[6:]])
    if where == "bag_mode":
        return _BAG_MODES[dict(node.attrs).get("mode", "max")]
    if where == "slice_step":
        index = dict(node.attrs).get("index") or ()
        return int(index[-1][3]) if index else 1
    if where.startswith("attr:"):
        value = dict(node.attrs).get(where[5:])
        return _number(value) if isinstance(value, (float, np.floating)) else value
    if where == "reduction":
        return _REDUCTIONS[dict(node.attrs)["reduction"]]
    return _alpha(node)


def _spec_of(node) -> dict:
    from fusegrad.ir import OPS
    if node.op is None or node.op == "custom_call" or node.op not in OPS:  # a leaf's, a compiled call's node
        return {}
    name = type(node).__name__
    return SAVED_ATTRIBUTES.get(f"{name}@{node.op}") or SAVED_ATTRIBUTES.get(name, {})


def _base_value(node, where: str):
    """`where` read on the view node that a `*_copy` node (a copy of a view's result) hides from
    next_functions: the view's own attributes; a shape on the view of the tensor itself (the last
    node of the chain), the viewed tensor's (the copy's own where the view was the tensor)."""
    from .node import HIDDEN_NODES
    chain = []
    edge = node.edges[0] if node.edges else None
    while edge is not None and edge[0] in HIDDEN_NODES:
        chain.append(edge[0])
        edge = edge[0].edges[0] if edge[0].edges else None
    if not chain:
        return _value(node, where)
    return _value(chain[-1] if where.startswith("sizes") else chain[0], where)


def _operand_array(node, index: int):
    """Operand `index`'s values: the saved array, or the Python value the call gave."""
    saved = node.saved.get(("in", index))
    if saved is not None:
        return saved.unpacked().numpy() if isinstance(saved, PackedSaved) else saved.array
    if node._freed or node.consts[index] is None:
        # (torch keeps an int[] past the backward; fusegrad's node held the tensor only)
        from .node import _FREED_MSG
        raise RuntimeError(_FREED_MSG)
    return node.consts[index]


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
