"""torch's argument-parser TypeErrors, worked out from torch's printed overloads.

torch's Python bindings parse a call against the function's overloads
(torch/csrc/utils/python_arg_parser.cpp). A call that none accepts raises one of a few texts:

- the function has one overload in all (hidden, deprecated ones count), or exactly one visible
  overload whose argument range holds the call's count: that overload's own complaint, the
  first one in argument order: `f(): argument 'x' (position N) must be T, not U`,
  `f() missing 1 required positional arguments: "x"` (torch's plural is reversed),
  `f() takes 1 positional argument but 2 were given`;
- otherwise `f() received an invalid combination of arguments - got (...), but expected one of:`
  with the visible overloads. Under an overload whose printed form has as many comma-separated
  tokens as the call has arguments (`*` is a token, and so is the empty `()`), torch says which
  arguments did not match, comparing type names: only a plain `Tensor`, `int`, `float`, `bool`
  or `str` token without a default ever matches, so most arguments are marked `!type!`.

Methods whose overloads all take nothing are plain C methods: CPython's
`TensorBase.exp() takes no arguments (1 given)`.

fusegrad works these texts out on the error path only: a function raises its own TypeError
(or Python's, for a call its signature cannot bind), and the wrapper asks what torch's parser
says about the same call. None means torch's parser accepts the call (a value error follows
in torch too), and the function's own error stands.
"""
from __future__ import annotations

import functools
import numbers
import operator

import numpy as np

from fusegrad.ir.types import DType

from .tensor import Size, Tensor

_DEFAULT = " = "


class Required:
    """The default of an argument torch requires, so that its absence raises torch's parser
    text ('exp() missing 1 required positional arguments: "input"'), not Python's."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


def type_name(x) -> str:
    """A value's type as torch's argument errors name it: builtins bare (float, list), others with
    their top-level module (numpy.float32, numpy.ndarray)."""
    if isinstance(x, Tensor):
        return type(x).__name__     # (torch names its own tensor types bare: Tensor, Parameter)
    if isinstance(x, DType):
        return "torch.dtype"
    if isinstance(x, Size):
        return "torch.Size"         # (torch's texts name its own types so; fg.Size is torch.Size)
    module = type(x).__module__
    if module.split(".")[0] == "torch":
        # (torch's own object, where torch's text names ours the same: "must be torch.dtype,
        # not torch.dtype" would say nothing)
        return f"torch.{type(x).__name__} from the torch package (fusegrad takes its own: fg.float32, fg.Tensor)"
    return type(x).__name__ if module == "builtins" else f"{module.split('.')[0]}.{type(x).__name__}"


def _type_name(x) -> str:
    """type_name, where fusegrad's arrays stand for tensors and its dtypes for torch's."""
    if isinstance(x, np.ndarray):
        return "Tensor"         # (fusegrad takes arrays wherever a tensor goes)
    return type_name(x)


def described(x) -> str:
    """An argument in torch's "didn't match" list: a tuple or list with its elements' types."""
    if isinstance(x, (tuple, list)):
        inner = ", ".join(_type_name(v) for v in x)
        if isinstance(x, tuple):
            return f"tuple of ({inner}{',' if len(x) == 1 else ''})"
        return f"list of [{inner}]"
    return _type_name(x)


def _is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.bool_))


def is_int(x) -> bool:
    """torch's int64 check: an int or an __index__ object, not a bool; a 0-d integer tensor."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, Tensor):
        return x.dim() == 0 and not x.dtype.is_floating_point and x.dtype.name != "bool"
    try:
        operator.index(x)
        return True
    except TypeError:
        return False


def _first_bad_element(x) -> int | None:
    """For a tuple-of-ints argument: the position of its first non-int (None: all ints; its
    unpacking takes a bool as an int after the first element, which must be an int)."""
    return next((k for k, v in enumerate(x) if not (is_int(v) or (k and isinstance(v, (bool, np.bool_))))), None)


# the NumPy spellings torch's parser also takes for some parameters (t.sum(axis=0))
_NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",)}


class _Param:
    """One parameter of a printed overload: `Tensor input`, `Number alpha = 1`, `tuple of ints dim`."""

    def __init__(self, token: str, keyword_only: bool, nullable: bool):
        text, _, default = token.partition(_DEFAULT)
        self.type, _, self.name = text.rpartition(" ")
        self.one_int = self.type == "int[1]"       # (an int list of size 1 takes a bare int too)
        if self.one_int:
            self.type = "tuple of ints"
        self.optional = bool(default)
        self.allow_none = default == "None" or nullable
        self.keyword_only = keyword_only

    def accepts(self, x, numbers_as_tensors: bool) -> bool:
        """Whether torch's parser takes `x` for this parameter."""
        kind = self.type
        if kind == "Tensor":
            return isinstance(x, (Tensor, np.ndarray)) or (numbers_as_tensors and _is_number(x))
        if kind == "Number":
            return _is_number(x) or (isinstance(x, Tensor) and x.dim() == 0 and not x.requires_grad)
        if kind == "int":
            return is_int(x)
        if kind == "float":
            return (_is_number(x) and not isinstance(x, complex)) or \
                (isinstance(x, Tensor) and x.dim() == 0)
        if kind == "bool":
            return isinstance(x, (bool, np.bool_))
        if kind == "tuple of ints":
            # (torch checks a sequence's first element here; the others when it unpacks them)
            # (an integer or bool tensor of one element, of any dims, is an int list of one to
            # torch's IntArrayRef parser: t.sum(fg.tensor([5])) is torch's dim-range IndexError)
            return (self.one_int and is_int(x)) or (isinstance(x, Tensor) and x.numel() == 1 and
                                                    not x.dtype.is_floating_point) \
                or (isinstance(x, (tuple, list)) and (not x or is_int(x[0])))
        if kind == "torch.dtype":
            return isinstance(x, DType) or any(x is kind for kind in (int, float, bool))  # (Python types too)
        if kind == "str":
            return isinstance(x, str)
        if kind == "tuple of Tensors":
            return isinstance(x, (tuple, list)) and all(isinstance(v, (Tensor, np.ndarray)) for v in x)
        if kind in ("torch.layout", "torch.device", "torch.Generator", "object", "tuple of names"):
            return True             # (fusegrad's own checks decide; this parser only words types)
        if kind == "torch.memory_format":
            return x is None or type(x).__name__ == "memory_format"
        raise AssertionError(f"unknown parameter type {kind!r}")


def _token_matches(token: str, x) -> bool:
    """torch's "didn't match" marking: the token's text before its last space, compared with
    the argument's type name (so a token with a default never matches)."""
    kind = token.rpartition(" ")[0]
    name = type(x).__name__
    if kind == "float":
        return name in ("float", "int")
    return kind in ("Tensor", "int", "bool", "str") and name == kind


class Overload:
    """One of torch's overloads, as its error texts print it: `(Tensor input, *, Tensor out = None)`."""

    def __init__(self, declared: str):
        # `declared` is torch's printed form, where a type may end in "?": None is accepted,
        # though torch prints no default; and `int[1]` is an int list that takes a bare int
        # (sum's `int[1]? dim` prints as "tuple of ints dim")
        self.printed = declared.replace("int[1]", "tuple of ints").replace("? ", " ")
        self.tokens = self.printed[1:-1].split(", ")       # ("()" is one empty token, as torch counts)
        self.params = []
        keyword_only = False
        for token in declared[1:-1].split(", "):
            if token == "*":
                keyword_only = True
            elif token:
                nullable = "? " in token
                self.params.append(_Param(token.replace("? ", " "), keyword_only, nullable))
        self.min_args = sum(not p.optional for p in self.params)
        self.max_args = len(self.params)
        self.max_pos_args = sum(not p.keyword_only for p in self.params)

    def bind(self, name: str, args: tuple, kwargs: dict, numbers_as_tensors: bool):
        """torch's FunctionSignature::parse with raise_exception: (the first thing wrong with
        the call, in parameter order, None) or, when this overload accepts it, (None, the
        values it binds by parameter name)."""
        nargs, bound = len(args), {}
        first = self.params[0] if self.params else None
        # (t.view(2, 3): a lone int list parameter takes the ints spread, unless sized or optional)
        takes_varargs = self.max_pos_args == 1 and first.type == "tuple of ints" and not first.one_int \
            and not first.allow_none
        if nargs > self.max_pos_args and not takes_varargs:
            return self._extra_args(name, nargs), None
        position, remaining = 0, len(kwargs)
        for i, param in enumerate(self.params):
            if position < nargs:
                if param.keyword_only:
                    return self._extra_args(name, nargs), None
                given, value, by_keyword = True, args[position], False
            else:
                key = next((k for k in (param.name, *_NUMPY_NAMES.get(param.name, ())) if k in kwargs), param.name)
                given, value, by_keyword = key in kwargs, kwargs.get(key), True
            if takes_varargs and nargs > 1 and i == 0:    # t.view(2, 3): the ints are the one tuple
                if not is_int(args[0]):
                    return self._extra_args(name, nargs), None
                bound[param.name] = args
                position = nargs
                continue
            if (not given and param.optional) or (given and value is None and param.allow_none):
                pass
            elif not given:
                missing = [f'"{p.name}"' for p in self.params[i:] if not p.optional]
                return TypeError(f"{name}() missing {len(missing)} required positional "
                                 f"argument{'s' if len(missing) == 1 else ''}: {', '.join(missing)}"), None
            elif param.accepts(value, numbers_as_tensors):
                bound[param.name] = value
            elif param.type == "tuple of Tensors" and isinstance(value, (tuple, list)):
                # (torch's check of a tensor list names its first element that is none)
                k, bad = next((k, v) for k, v in enumerate(value) if not isinstance(v, (Tensor, np.ndarray)))
                return TypeError(f"expected Tensor as element {k} in argument {i}, but got {type_name(bad)}"), None
            elif takes_varargs and position == 0 and not by_keyword and is_int(value):
                bound[param.name] = args        # t.view(4): one int spread
                position = nargs
                continue
            else:
                return self._wrong_type(name, param, value, None if by_keyword else position + 1), None
            if not by_keyword:
                position += 1
            elif given:
                remaining -= 1
        if remaining > 0:
            for key in kwargs:
                index = next((k for k, p in enumerate(self.params) if p.name == key), -1)
                if index < 0:
                    return TypeError(f"{name}() got an unexpected keyword argument '{key}'"), None
                if index < nargs:
                    return TypeError(f"{name}() got multiple values for argument '{key}'"), None
        return None, bound

    def _extra_args(self, name: str, nargs: int) -> TypeError:
        if self.min_args != self.max_pos_args:
            return TypeError(f"{name}() takes from {self.min_args} to {self.max_pos_args} positional arguments "
                             f"but {nargs} were given")
        plural = "" if self.max_pos_args == 1 else "s"
        return TypeError(f"{name}() takes {self.max_pos_args} positional argument{plural} but {nargs} "
                         f"{'was' if nargs == 1 else 'were'} given")

    def unpack_error(self, name: str, bound: dict) -> TypeError | None:
        """After this overload bound the call: torch's error unpacking a tuple of ints whose
        later elements are not ints (`reshape((2, 'a'))`), or None."""
        for param in reversed(self.params):      # (torch's C++ unpacks the arguments last first)
            value = bound.get(param.name)
            if param.type == "tuple of ints" and isinstance(value, (tuple, list)):
                bad = _first_bad_element(value)
                if bad is not None:
                    return TypeError(f"{name}(): argument '{param.name}' failed to unpack the object at pos {bad + 1} "
                                     f"with error \"type must be tuple of ints,but got {_type_name(value[bad])}\"")
        return None

    @staticmethod
    def _wrong_type(name: str, param: _Param, value, position: int | None) -> TypeError:
        where = f"argument '{param.name}'" + (f" (position {position})" if position is not None else "")
        bad = _first_bad_element(value) if isinstance(value, (tuple, list)) else None
        if param.type == "tuple of ints" and bad is not None and position is not None:
            return TypeError(f"{name}(): {where} must be tuple of ints, but found element of type "
                             f"{_type_name(value[bad])} at pos {bad}")
        # (an array stands for a tensor, not for a number or a size: torch's text names its type)
        named = _type_name(value) if param.type in ("Tensor", "tuple of Tensors") else type_name(value)
        return TypeError(f"{name}(): {where} must be {param.type}, not {named}")

    def counts(self, args: tuple, kwargs: dict) -> bool:
        """Whether torch explains this overload's mismatch: its printed tokens number the arguments."""
        return len(self.tokens) == len(args) + len(kwargs)

    def unmatched_keywords(self, kwargs: dict) -> list:
        """The keywords none of the overload's last len(kwargs) tokens names (torch's
        _tryMatchKwargs): a token's name is its last word, so one with a default (`Number alpha
        = 1`) never matches, and torch lists them from its hash map, in the reverse of the
        order given (as got_text does)."""
        last = self.tokens[max(len(self.tokens) - len(kwargs), 0):]
        names = [t.rpartition(" ")[2] for t in last]
        return [key for key in reversed(kwargs) if key not in names]

    def marked(self, args: tuple, kwargs: dict) -> str:
        """The call's arguments with those that do not match this overload's tokens as `!type!`."""
        items = []
        for k, value in enumerate(args):
            ok = k < len(self.tokens) and _token_matches(self.tokens[k], value)
            items.append(described(value) if ok else f"!{described(value)}!")
        for key, value in kwargs.items():
            token = next(t for t in self.tokens if t.partition(_DEFAULT)[0].rpartition(" ")[2] == key)
            text = f"{key}={described(value)}"
            items.append(text if _token_matches(token, value) else f"!{text}!")
        return "(" + (", ".join(items) if args else "".join(item + ", " for item in items)) + ")"


def got_text(args: tuple, kwargs: dict) -> str:
    """The call's argument types: keywords (torch lists them in reverse) as `name=type`."""
    items = [_type_name(a) for a in args]
    named = [f"{k}={_type_name(v)}" for k, v in reversed(kwargs.items())]
    return "(" + (", ".join(items + named) if items else "".join(item + ", " for item in named)) + ")"


class ArgParser:
    """torch's overloads of one function or method (a method's omit self), visible and hidden."""

    def __init__(self, name: str, *printed: str, hidden: tuple = (), numbers_as_tensors: bool = False):
        self.name = name
        self.visible = [Overload(p) for p in printed]
        self.all = self.visible + [Overload(p) for p in hidden]
        self.numbers_as_tensors = numbers_as_tensors

    def error(self, args: tuple, kwargs: dict) -> TypeError | None:
        """torch's TypeError for this call, or None where an overload accepts it."""
        complaints = []
        for overload in self.all:          # (torch takes the first overload that parses)
            complaint, bound = overload.bind(self.name, args, kwargs, self.numbers_as_tensors)
            if complaint is None:
                return overload.unpack_error(self.name, bound)
            complaints.append(complaint)
        if len(self.all) == 1:
            return complaints[0]
        given = len(args) + len(kwargs)
        plausible = [k for k, o in enumerate(self.visible) if o.min_args <= given <= o.max_args]
        if len(plausible) == 1:
            return complaints[plausible[0]]
        return TypeError(self._invalid_combination(args, kwargs))

    def refusal(self, args: tuple, kwargs: dict) -> TypeError:
        """The TypeError for a call fusegrad refuses: torch's parser's, or where torch's parser
        takes the call (a complex number, which its Scalar accepts), fusegrad's own."""
        error = self.error(args, kwargs)
        if error is not None:
            return error
        if any(isinstance(x, (complex, np.complexfloating)) for x in (*args, *kwargs.values())):
            return TypeError(f"{self.name}(): fusegrad has no complex dtype, and got a complex number")
        return TypeError(f"{self.name}(): fusegrad does not take the arguments {got_text(args, kwargs)}")

    def _invalid_combination(self, args: tuple, kwargs: dict) -> str:
        head = f"{self.name}() received an invalid combination of arguments - "
        if len(self.visible) == 1:
            overload = self.visible[0]
            unmatched = overload.unmatched_keywords(kwargs)
            if unmatched:
                return head + "got unrecognized keyword arguments: " + ", ".join(unmatched)
            got = overload.marked(args, kwargs) if overload.counts(args, kwargs) else got_text(args, kwargs)
            return head + f"got {got}, but expected {overload.printed}"
        lines = [head + f"got {got_text(args, kwargs)}, but expected one of:\n"]
        for overload in self.visible:
            lines.append(f" * {overload.printed}\n")
            if overload.counts(args, kwargs):
                unmatched = overload.unmatched_keywords(kwargs)
                if unmatched:
                    lines.append("      didn't match because some of the keywords were incorrect: "
                                 + ", ".join(unmatched) + "\n")
                else:
                    lines.append("      didn't match because some of the arguments have invalid types: "
                                 + overload.marked(args, kwargs) + "\n")
        return "".join(lines)


def no_arguments_error(name: str, args: tuple, kwargs: dict) -> TypeError:
    """CPython's text for a method that takes nothing (torch's METH_NOARGS methods)."""
    if kwargs:
        return TypeError(f"TensorBase.{name}() takes no keyword arguments")
    return TypeError(f"TensorBase.{name}() takes no arguments ({len(args)} given)")


# ------------------------------------------------------------ torch's overloads
_OUT = "*, Tensor out = None"
_COMPARISON = ("(Tensor input, Tensor other, " + _OUT + ")", "(Tensor input, Number other, " + _OUT + ")")
_CREATION = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
             "bool pin_memory = False, bool requires_grad = False")
_FACTORY = ("*, torch.dtype? dtype = None, torch.layout? layout = None, torch.device? device = None, "
            "bool? pin_memory = False, bool? requires_grad = False")
_SOFTMAX = "(Tensor input, int dim, torch.dtype dtype = None, " + _OUT + ")"

FUNCTIONS = {
    "bernoulli": ArgParser("bernoulli", "(Tensor input, *, torch.Generator generator = None, Tensor out = None)",
                           "(Tensor input, float p, *, torch.Generator generator = None)"),
    "add": ArgParser("add", "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",
                     hidden=("(Tensor input, Number alpha, Tensor other, " + _OUT + ")",), numbers_as_tensors=True),
    "sub": ArgParser("sub", "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",
                     hidden=("(Tensor input, Number alpha, Tensor other, " + _OUT + ")",), numbers_as_tensors=True),
    "mul": ArgParser("mul", "(Tensor input, Tensor other, " + _OUT + ")", numbers_as_tensors=True),
    "div": ArgParser("div", "(Tensor input, Tensor other, " + _OUT + ")",
                     "(Tensor input, Tensor other, *, str? rounding_mode, Tensor out = None)",
                     "(Tensor input, Number other, *, str? rounding_mode)", numbers_as_tensors=True),
    "pow": ArgParser("pow", "(Tensor input, Tensor exponent, " + _OUT + ")",
                     "(Number self, Tensor exponent, " + _OUT + ")",
                     "(Tensor input, Number exponent, " + _OUT + ")"),
    "clamp": ArgParser("clamp", "(Tensor input, Tensor min = None, Tensor max = None, " + _OUT + ")",
                       "(Tensor input, Number min = None, Number max = None, " + _OUT + ")"),
    "maximum": ArgParser("maximum", "(Tensor input, Tensor other, " + _OUT + ")"),
    **{name: ArgParser(name, "(Tensor input, Tensor other, " + _OUT + ")") for name in ("atan2", "arctan2")},
    "round": ArgParser("round", f"(Tensor input, {_OUT})", "(Tensor input, *, int decimals, Tensor out = None)"),
    "logsumexp": ArgParser("logsumexp", f"(Tensor input, int[1] dim, bool keepdim = False, {_OUT})"),
    "cumsum": ArgParser("cumsum", "(Tensor input, int dim, *, torch.dtype dtype = None, Tensor out = None)"),
    **{name: ArgParser(name, f"(Tensor input, int diagonal = 0, {_OUT})") for name in ("tril", "triu")},
    "prod": ArgParser("prod", "(Tensor input, *, torch.dtype dtype = None)",
                      "(Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None)"),
    "minimum": ArgParser("minimum", "(Tensor input, Tensor other, " + _OUT + ")"),
    "matmul": ArgParser("matmul", "(Tensor input, Tensor other, " + _OUT + ")"),
    "softmax": ArgParser("softmax", _SOFTMAX),
    "log_softmax": ArgParser("log_softmax", _SOFTMAX),
    "sum": ArgParser("sum", "(Tensor input, *, torch.dtype dtype = None)",
                     "(Tensor input, int[1]? dim, bool keepdim = False, *, torch.dtype dtype = None, "
                     "Tensor out = None)"),
    "mean": ArgParser("mean", "(Tensor input, *, torch.dtype dtype = None, Tensor out = None)",
                      "(Tensor input, int[1]? dim, bool keepdim = False, *, torch.dtype dtype = None, "
                      "Tensor out = None)"),
    "reshape": ArgParser("reshape", "(Tensor input, tuple of ints shape)"),
    "broadcast_to": ArgParser("broadcast_to", "(Tensor input, tuple of ints size)"),
    "chunk": ArgParser("chunk", "(Tensor input, int chunks, int dim = 0)"),
    "gather": ArgParser("gather", "(Tensor input, int dim, Tensor index, *, bool sparse_grad = False, Tensor out = None)"),
    "index_select": ArgParser("index_select", f"(Tensor input, int dim, Tensor index, {_OUT})"),
    "flip": ArgParser("flip", "(Tensor input, tuple of ints dims)"),
    "unbind": ArgParser("unbind", "(Tensor input, int dim = 0)"),
    "select": ArgParser("select", "(Tensor input, int dim, int index)"),
    "narrow": ArgParser("narrow", "(Tensor input, int dim, Tensor start, int length)",
                        "(Tensor input, int dim, int start, int length)"),
    "permute": ArgParser("permute", "(Tensor input, tuple of ints dims)"),
    "transpose": ArgParser("transpose", "(Tensor input, int dim0, int dim1)"),
    "unsqueeze": ArgParser("unsqueeze", "(Tensor input, int dim)"),
    "where": ArgParser("where", "(Tensor condition)", "(Tensor condition, Tensor input, Tensor other, " + _OUT + ")",
                       "(Tensor condition, Number self, Tensor other)",
                       "(Tensor condition, Tensor input, Number other)",
                       "(Tensor condition, Number self, Number other)"),
    **{name: ArgParser(name, *_COMPARISON) for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "masked_fill": ArgParser("masked_fill", "(Tensor input, Tensor mask, Tensor value)",
                             "(Tensor input, Tensor mask, Number value)"),
    "swapaxes": ArgParser("swapaxes", "(Tensor input, int axis0, int axis1)"),
    "swapdims": ArgParser("swapdims", "(Tensor input, int dim0, int dim1)"),
    **{name: ArgParser(name, "(Tensor input, int source, int destination)",
                       "(Tensor input, tuple of ints source, tuple of ints destination)")
       for name in ("movedim", "moveaxis")},
    **{name: ArgParser(name, f"(Tensor input, Tensor {bound}, {_OUT})", f"(Tensor input, Number {bound}, {_OUT})")
       for name, bound in (("clamp_min", "min"), ("clamp_max", "max"))},
    "clip": ArgParser("clip", "(Tensor input, Tensor min = None, Tensor max = None, " + _OUT + ")",
                      "(Tensor input, Number min = None, Number max = None, " + _OUT + ")"),
    **{name: ArgParser(name, f"(Tensor input, {_OUT})", f"(Tensor input, int[1]? dim = None, bool keepdim = False, {_OUT})",
                       f"(Tensor input, int dim, bool keepdim = False, {_OUT})") for name in ("all", "any")},
    **{name: ArgParser(name, f"(Tensor input, Tensor other, {_OUT})", "(Number self, Tensor other)",
                       f"(Tensor input, Number other, {_OUT})")
       for name in ("remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                    "bitwise_right_shift")},
    "floor_divide": ArgParser("floor_divide", f"(Tensor input, Tensor other, {_OUT})", "(Tensor input, Number other)",
                              numbers_as_tensors=True),
    **{name: ArgParser(name, f"(Tensor input, int[1]? dim, bool unbiased = True, bool keepdim = False, {_OUT})",
                       "(Tensor input, int[1]? dim = None, *, Number? correction = None, bool keepdim = False, "
                       "Tensor out = None)", "(Tensor input, bool unbiased = True)") for name in ("std", "var")},
    "squeeze": ArgParser("squeeze", "(Tensor input)", "(Tensor input, int dim)", "(Tensor input, tuple of ints dim)"),
    **{name: ArgParser(name, f"(Tensor input, {_OUT})", f"(Tensor input, Tensor other, {_OUT})",
                       "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")
       for name in ("max", "min")},
    **{name: ArgParser(name, f"(Tensor input, Tensor mat2, {_OUT})",
                       f"(Tensor input, Tensor mat2, torch.dtype out_dtype, {_OUT})") for name in ("bmm", "mm")},
    **{name: ArgParser(name, f"(Tensor input, Tensor {other}, {_OUT})")
       for name, other in (("mv", "vec"), ("dot", "tensor"), ("outer", "vec2"), ("logical_and", "other"),
                           ("logical_or", "other"), ("logical_xor", "other"))},
    **{name: ArgParser(name, "(Tensor input, Tensor other, float rtol = 1e-05, float atol = 1e-08, "
                             "bool equal_nan = False)") for name in ("allclose", "isclose")},
    "equal": ArgParser("equal", "(Tensor input, Tensor other)"),
    "arange": ArgParser("arange", f"(Number end, *, Tensor out = None, {_CREATION})",
                        f"(Number start, Number end, *, {_CREATION})",
                        f"(Number start, Number end, Number step = 1, *, Tensor out = None, {_CREATION})"),
    "linspace": ArgParser("linspace", *(f"({a} start, {b} end, int steps, *, Tensor out = None, {_CREATION})"
                                        for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                                                     ("Number", "Number")))),
    "eye": ArgParser("eye", f"(int n, *, Tensor out = None, {_CREATION})", f"(int n, int m, *, Tensor out = None, {_CREATION})"),
    **{name: ArgParser(name, f"(Tensor input, *, torch.Generator generator, torch.memory_format memory_format = None, "
                             f"{_CREATION})", f"(Tensor input, *, torch.memory_format memory_format = None, {_CREATION})")
       for name in ("rand_like", "randn_like")},
    "randint": ArgParser(
        "randint", f"(int high, tuple of ints size, *, torch.Generator generator, Tensor out = None, {_CREATION})",
        f"(int high, tuple of ints size, *, Tensor out = None, {_CREATION})",
        f"(int low, int high, tuple of ints size, *, torch.Generator generator, Tensor out = None, {_CREATION})",
        f"(int low, int high, tuple of ints size, *, Tensor out = None, {_CREATION})"),
    "randint_like": ArgParser(
        "randint_like",
        *(f"(Tensor input, {bounds}, *, {generator}torch.memory_format memory_format = None, {_CREATION})"
          for bounds in ("int low, int high", "Tensor high", "int high")
          for generator in ("torch.Generator generator, ", ""))),
    **{name: ArgParser(name, f"(tuple of ints size, *, torch.Generator generator, Tensor out = None, {_CREATION})",
                       f"(tuple of ints size, *, Tensor out = None, {_CREATION})") for name in ("randn", "rand")},
    **{name: ArgParser(name, "(tuple of Tensors tensors, int dim = 0, *, Tensor out = None)") for name in ("stack", "cat")},
    "detach": ArgParser("detach", "(Tensor input)"),
    "t": ArgParser("t", "(Tensor input)"),
    "tensor": ArgParser("tensor", "(object data, *, torch.dtype dtype = None, torch.device device = None, "
                                  "bool pin_memory = False, bool requires_grad = False, tuple of names names = None)"),
    "flatten": ArgParser("flatten", "(Tensor input, int start_dim = 0, int end_dim = -1)"),
    # (one overload each: torch checks the size, then the fill value, before any keyword it lacks)
    **{name: ArgParser(name, f"(tuple of ints size, *, Tensor out = None, {_CREATION})") for name in ("zeros", "ones")},
    "empty": ArgParser("empty", f"(tuple of ints size, *, torch.memory_format memory_format = None, Tensor out = None, "
                                f"{_CREATION})"),
    "full": ArgParser("full", f"(tuple of ints size, Number fill_value, *, Tensor out = None, {_CREATION})"),
    **{name: ArgParser(name, f"(Tensor input, *, torch.memory_format memory_format = None, {_CREATION})")
       for name in ("zeros_like", "ones_like", "empty_like")},
    "full_like": ArgParser("full_like", f"(Tensor input, Number fill_value, *, torch.memory_format memory_format = None, "
                                        f"{_CREATION})"),
    # one-tensor functions: torch's texts tell a keyword `input=` (no position) from a positional one
    **{name: ArgParser(name, f"(Tensor input, {_OUT})") for name in (
        "exp", "log", "sqrt", "abs", "neg", "negative", "sin", "cos", "tan", "tanh", "sigmoid", "log1p", "expm1",
        "square", "rsqrt", "floor", "ceil", "sign", "reciprocal", "erf", "erfc", "exp2", "log2", "log10", "sinh",
        "cosh", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "asinh", "acosh", "atanh", "trunc", "fix",
        "frac", "logical_not", "signbit")},
    **{name: ArgParser(name, "(Tensor input)") for name in ("relu", "isnan", "isinf", "isfinite")},
}

_SCALAR_OR_TENSOR = {"pow": "exponent", "fill_": "value",
                     **{name: "other" for name in ("eq", "ne", "lt", "le", "gt", "ge")}}

METHODS = {
    **{name: ArgParser(name, "(*, torch.memory_format memory_format = torch.preserve_format)")
       for name in ("long", "float", "double", "bool")},
    "reshape": ArgParser("reshape", "(tuple of ints shape)"),
    "flatten": ArgParser("flatten", "(int start_dim = 0, int end_dim = -1)"),
    "permute": ArgParser("permute", "(tuple of ints dims)"),
    "expand": ArgParser("expand", "(tuple of ints size, *, bool implicit = False)"),
    "bernoulli": ArgParser("bernoulli", "(*, torch.Generator generator = None)",
                           "(float p, *, torch.Generator generator = None)"),
    "unsqueeze": ArgParser("unsqueeze", "(int dim)"),
    **{name: ArgParser(name, f"(Tensor {arg})", f"(Number {arg})") for name, arg in _SCALAR_OR_TENSOR.items()},
    **{name: ArgParser(name, "(Tensor other, *, Number alpha = 1)", hidden=("(Number alpha, Tensor other)",),
                       numbers_as_tensors=True) for name in ("add", "sub")},
    "mul": ArgParser("mul", "(Tensor other)", numbers_as_tensors=True),
    "div": ArgParser("div", "(Tensor other)", "(Tensor other, *, str? rounding_mode)",
                     "(Number other, *, str? rounding_mode)", numbers_as_tensors=True),
    "transpose": ArgParser("transpose", "(int dim0, int dim1)"),
    **{name: ArgParser(name, "(Tensor other)") for name in ("matmul", "maximum", "minimum", "atan2", "arctan2",
                                                                     "atan2_", "arctan2_")},
    **{name: ArgParser(name, "()", "(*, int decimals)") for name in ("round", "round_")},
    "logsumexp": ArgParser("logsumexp", "(int[1] dim, bool keepdim = False)"),
    "cumsum": ArgParser("cumsum", "(int dim, *, torch.dtype dtype = None)"),
    **{name: ArgParser(name, "(int diagonal = 0)") for name in ("tril", "triu", "tril_", "triu_")},
    "prod": ArgParser("prod", "(*, torch.dtype dtype = None)", "(int dim, bool keepdim = False, *, torch.dtype dtype = None)"),
    **{name: ArgParser(name, "(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)")
       for name in ("clamp", "clip")},
    "where": ArgParser("where", "(Tensor condition, Tensor other)", "(Tensor condition, Number other)"),
    **{name: ArgParser(name, "(Tensor other)", "(Number other)")
       for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                    "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_left_shift_", "bitwise_right_shift_",
                    "floor_divide", "floor_divide_", "remainder", "remainder_", "multiply", "true_divide")},
    "pow_": ArgParser("pow_", "(Tensor exponent)", "(Number exponent)"),
    "clamp_": ArgParser("clamp_", "(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)"),
    "clamp_min": ArgParser("clamp_min", "(Tensor min)", "(Number min)"),
    "clamp_max": ArgParser("clamp_max", "(Tensor max)", "(Number max)"),
    "div_": ArgParser("div_", "(Tensor other)", "(Tensor other, *, str? rounding_mode)",
                      "(Number other, *, str? rounding_mode)", numbers_as_tensors=True),
    **{name: ArgParser(name, "(Tensor mask, Tensor value)", "(Tensor mask, Number value)")
       for name in ("masked_fill", "masked_fill_")},
    **{name: ArgParser(name, "(int source, int destination)", "(tuple of ints source, tuple of ints destination)")
       for name in ("movedim", "moveaxis")},
    "squeeze": ArgParser("squeeze", "()", "(int dim)", "(tuple of ints dim)"),
    "subtract": ArgParser("subtract", "(Tensor other, *, Number alpha = 1)", "(Number other, Number alpha = 1)"),
    "swapaxes": ArgParser("swapaxes", "(int axis0, int axis1)"),
    "swapdims": ArgParser("swapdims", "(int dim0, int dim1)"),
    **{name: ArgParser(name, "(Tensor other)") for name in ("view_as", "expand_as", "reshape_as")},
    "requires_grad_": ArgParser("requires_grad_", "(bool requires_grad = True)"),
    **{name: ArgParser(name, "(int? dim = None)") for name in ("size", "stride")},
    "cpu": ArgParser("cpu", "(*, torch.memory_format memory_format = None)"),
    "is_contiguous": ArgParser("is_contiguous", "(*, torch.memory_format memory_format = torch.contiguous_format)"),
    "nonzero": ArgParser("nonzero", "()", "(*, bool as_tuple)"),
    **{name: ArgParser(name, "(int[1]? dim = [], bool keepdim = False)") for name in ("amax", "amin")},
    **{name: ArgParser(name, "(int? dim = None, bool keepdim = False)") for name in ("argmax", "argmin")},
    **{name: ArgParser(name, "()", "(int[1]? dim = None, bool keepdim = False)", "(int dim, bool keepdim = False)")
       for name in ("all", "any")},
    **{name: ArgParser(name, "(*, torch.dtype dtype = None)",
                       "(int[1]? dim, bool keepdim = False, *, torch.dtype dtype = None)") for name in ("sum", "mean")},
    **{name: ArgParser(name, "(int[1]? dim, bool unbiased = True, bool keepdim = False)",
                       "(int[1]? dim = None, *, Number? correction = None, bool keepdim = False)",
                       "(bool unbiased = True)") for name in ("std", "var")},
    **{name: ArgParser(name, "()", "(Tensor other)", "(int dim, bool keepdim = False)") for name in ("max", "min")},
    "view": ArgParser("view", "(torch.dtype dtype)", "(tuple of ints size)"),
    "broadcast_to": ArgParser("broadcast_to", "(tuple of ints size)"),
    "chunk": ArgParser("chunk", "(int chunks, int dim = 0)"),
    "gather": ArgParser("gather", "(int dim, Tensor index, *, bool sparse_grad = False)"),
    "index_select": ArgParser("index_select", "(int dim, Tensor index)"),
    "unbind": ArgParser("unbind", "(int dim = 0)"),
    "select": ArgParser("select", "(int dim, int index)"),
    "narrow": ArgParser("narrow", "(int dim, Tensor start, int length)", "(int dim, int start, int length)"),
    **{name: ArgParser(name, "(int dim, torch.dtype? dtype = None)") for name in ("softmax", "log_softmax")},
    **{name: ArgParser(name, "(Tensor other, float rtol = 1e-05, float atol = 1e-08, bool equal_nan = False)")
       for name in ("allclose", "isclose")},
    # (hidden: overloads torch's parser holds but does not print, which count as more than one)
    "copy_": ArgParser("copy_", "(Tensor other, bool non_blocking = False)", hidden=("(Tensor other)",),
                       numbers_as_tensors=True),
    **{name: ArgParser(name, "(Tensor other, *, Number alpha = 1)", hidden=("(Number alpha, Tensor other)",),
                       numbers_as_tensors=True) for name in ("add_", "sub_")},
    "mul_": ArgParser("mul_", "(Tensor other)", numbers_as_tensors=True),
    **{name: ArgParser(name, f"(tuple of ints size, {_FACTORY})") for name in ("new_zeros", "new_ones", "new_empty")},
    "new_full": ArgParser("new_full", f"(tuple of ints size, Number fill_value, {_FACTORY})"),
    "numpy": ArgParser("numpy", "(*, bool force = False)"),
    "clone": ArgParser("clone", "(*, torch.memory_format memory_format = None)"),
    "contiguous": ArgParser("contiguous", "(*, torch.memory_format memory_format = torch.contiguous_format)"),
}

# methods that take nothing: CPython's "takes no arguments" text
NO_ARGUMENT_METHODS = ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "expm1", "log1p", "erf", "abs",
                       "sign", "reciprocal", "neg", "negative", "square", "t", "logical_not", "isnan", "isinf",
                       "isfinite", "ravel", "fliplr", "flipud", "exp_", "log_", "sqrt_", "tanh_", "sigmoid_", "relu_", "neg_", "abs_",
                       "sin_", "cos_", "reciprocal_", "sign_", "expm1_", "log1p_", "erf_", "bitwise_not_", "positive", "zero_", "item", "tolist", "detach", "detach_",
                       "retain_grad", "data_ptr", "element_size", "get_device", "is_complex", "is_floating_point",
                       "is_inference", "is_signed", "ndimension", "nelement", "storage_offset",
                       # tracer/math_functions.py
                       "rsqrt", "log2", "log10", "exp2", "sinh", "cosh", "tan", "asin", "acos", "atan", "arcsin",
                       "arccos", "arctan", "floor", "ceil", "trunc", "fix", "frac", "rsqrt_", "log2_", "log10_",
                       "exp2_", "sinh_", "cosh_", "tan_", "asin_", "acos_", "atan_", "arcsin_", "arccos_",
                       "arctan_", "floor_", "ceil_", "trunc_", "fix_", "frac_")
# (dim() and numel() check in their own bodies: fusegrad calls them everywhere)


def _worded(fn, parser: ArgParser, skipped: int):
    """`fn` raising torch's parser text where torch's parser refuses the call, asked on the
    error path only; `skipped`: the leading arguments the parser does not see (a method's self)."""
    @functools.wraps(fn)
    def worded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:           # (torch parses before any check of values: its TypeError first)
            error = parser.error(args[skipped:], kwargs)
            if error is None:
                raise
            raise error from None
    return worded


def function_texts(fn, parser: ArgParser):
    """The function `fn` with torch's parser texts for bad calls."""
    return _worded(fn, parser, 0)


def method_texts(fn, parser: ArgParser):
    """The method `fn` (self first) with torch's parser texts for the arguments after self."""
    return _worded(fn, parser, 1)


def no_arguments(fn, name: str):
    """The method `fn(self)` with CPython's text for any argument given (torch's METH_NOARGS)."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if args or kwargs:
            raise no_arguments_error(name, args, kwargs)
        return fn(self)
    return method


def public_functions(namespace: dict) -> None:
    """Rebind the public names in `namespace` that torch parses (fusegrad's module) to their
    torch-text forms; fusegrad's own calls keep the bare functions (no extra frame)."""
    from .out_argument import ALSO_TAKING_OUT, NOT_TAKING_OUT, with_out
    for name, parser in FUNCTIONS.items():
        if name in namespace:
            fn = namespace[name]
            if name not in NOT_TAKING_OUT and any("Tensor out = None" in o.printed for o in parser.all):
                fn = with_out(fn, name)         # (torch's out=: tracer/out_argument.py)
            namespace[name] = function_texts(fn, parser)
    for name in ALSO_TAKING_OUT - FUNCTIONS.keys():
        if name in namespace:
            namespace[name] = with_out(namespace[name], name)
