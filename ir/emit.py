"""A small typed front end over `Builder` for writing VJPs and decompositions.

VJP rules read like math: `e.mul(g, e.sub(e.const(1, y), e.mul(y, y)))`.
Binary helpers accept Python numbers, which become 0-d constants of the other
operand's dtype, so rules never spell out casts for literals.
"""
from __future__ import annotations

from .ops.registry import unbroadcast_axes
from .program import Builder, Value
from .types import DType, TensorType


class Emitter:
    """Emits IR instructions through a `Builder`; one method per common op."""

    def __init__(self, builder: Builder, loc: str | None = None):
        self.b = builder
        self.loc = loc

    def op(self, name: str, *inputs: Value, **attrs):
        """Emit op `name` on `inputs` with `attrs`, tagged with this emitter's source location."""
        return self.b.emit(name, *inputs, loc=self.loc, **attrs)

    # -- constants and casts
    def const(self, value, like: Value | DType, shape: tuple = ()) -> Value:
        """A constant `value` of `shape` (default 0-d), with the dtype of `like` (a value or a dtype)."""
        dtype = like.dtype if isinstance(like, Value) else like
        return self.op("const", value=value, dtype=dtype, shape=tuple(shape))

    def zeros_like(self, x: Value) -> Value:
        """Zeros of x's shape and dtype (a 0-d constant expanded)."""
        return self.expand(self.const(0, x), x.shape)

    def zeros_reading(self, like: Value, *values: Value) -> Value:
        """Zeros of `like`'s shape and dtype that read `values`, through a comparison, so that
        they carry no history: the gradient of a formula that is zero but, in torch, unpacks
        saved tensors (an in-place change of one before the backward raises its version error)."""
        zeros = self.zeros_like(like)
        for v in values:
            zeros = self.mul(zeros, self.cast(self.eq(v, v), like.dtype))
        return zeros

    def zero_gradient(self, g: Value) -> Value:
        """torch's `zeros_like(grad)`, the gradient of an op whose derivative is zero (floor,
        sign, a whole tensor overwritten by copy_ or zero_): zeros that read `g`, so that a
        backward given cotangents for only some outputs of a compiled call still reaches the
        nodes behind the op (torch's engine runs them with the zeros, checking what they saved:
        runtime/compiled_backward.reached_inputs follows values that depend on a given seed)."""
        return self.zeros_reading(g, g)

    def cast(self, x: Value, dtype: DType) -> Value:
        """x converted to `dtype`; x itself when it already has that dtype."""
        return x if x.dtype is dtype else self.op("cast", x, dtype=dtype)

    def _pair(self, x, y):
        if not isinstance(x, Value):
            x = self.const(x, y)
        if not isinstance(y, Value):
            y = self.const(y, x)
        if x.dtype is not y.dtype:
            from .types import promote_types
            d = promote_types(x.dtype, y.dtype)
            x, y = self.cast(x, d), self.cast(y, d)
        return x, y

    # -- elementwise
    def add(self, x, y):
        """x + y; either may be a Python number."""
        return self.op("add", *self._pair(x, y))

    def sub(self, x, y):
        """x - y; either may be a Python number."""
        return self.op("sub", *self._pair(x, y))

    def mul(self, x, y):
        """x * y; either may be a Python number."""
        return self.op("mul", *self._pair(x, y))

    def scaled_add(self, x: Value, y: Value, alpha: Value, negate: bool = False):
        """x + y * alpha (x - y * alpha with `negate`) rounded once, as torch's add with alpha."""
        return self.op("scaled_add", x, y, alpha, negate=negate)

    def div(self, x, y):
        """x / y (true division); either may be a Python number."""
        return self.op("div", *self._pair(x, y))

    def pow(self, x, y):
        """x ** y; either may be a Python number."""
        return self.op("pow", *self._pair(x, y))

    def maximum(self, x, y):
        """torch.maximum(x, y); either may be a Python number."""
        return self.op("maximum", *self._pair(x, y))

    def eq(self, x, y):
        """x == y, as bool; either may be a Python number."""
        return self.op("eq", *self._pair(x, y))

    def ne(self, x, y):
        """x != y, as bool; either may be a Python number."""
        return self.op("ne", *self._pair(x, y))

    def lt(self, x, y):
        """x < y, as bool; either may be a Python number."""
        return self.op("lt", *self._pair(x, y))

    def le(self, x, y):
        """x <= y, as bool; either may be a Python number."""
        return self.op("le", *self._pair(x, y))

    def gt(self, x, y):
        """x > y, as bool; either may be a Python number."""
        return self.op("gt", *self._pair(x, y))

    def ge(self, x, y):
        """x >= y, as bool; either may be a Python number."""
        return self.op("ge", *self._pair(x, y))

    def logical_and(self, x, y):
        """x and y, elementwise, as bool; either may be a Python number."""
        return self.op("logical_and", *self._pair(x, y))

    def neg(self, x):
        """-x."""
        return self.op("neg", x)

    def exp(self, x):
        """e ** x."""
        return self.op("exp", x)

    def log(self, x):
        """The natural log of x."""
        return self.op("log", x)

    def sqrt(self, x):
        """The square root of x."""
        return self.op("sqrt", x)

    def sin(self, x):
        """sin(x)."""
        return self.op("sin", x)

    def cos(self, x):
        """cos(x)."""
        return self.op("cos", x)

    def tanh(self, x):
        """tanh(x)."""
        return self.op("tanh", x)

    def sigmoid(self, x):
        """1 / (1 + e ** -x)."""
        return self.op("sigmoid", x)

    def sign(self, x):
        """-1, 0 or 1 by the sign of x (torch.sign)."""
        return self.op("sign", x)

    def where(self, c, x, y):
        """torch.where(c, x, y); x or y may be a Python number, and mismatched dtypes are promoted."""
        if not isinstance(x, Value) or not isinstance(y, Value) or x.dtype is not y.dtype:
            x, y = self._pair(x, y)
        return self.op("where", c, x, y)

    # -- reductions and movement
    def sum(self, x: Value, axes, keepdim: bool = False) -> Value:
        """The sum of x over `axes`; x itself when `axes` is empty."""
        return self.op("sum", x, axes=tuple(axes), keepdim=keepdim) if tuple(axes) else x

    def amax(self, x: Value, axes, keepdim: bool = False) -> Value:
        """The maximum of x over `axes` (torch.amax); x itself when `axes` is empty."""
        return self.op("amax", x, axes=tuple(axes), keepdim=keepdim) if tuple(axes) else x

    def reshape(self, x: Value, shape) -> Value:
        """x reshaped to `shape`; x itself when the shape already matches."""
        shape = tuple(shape)
        return x if x.shape == shape else self.op("reshape", x, shape=shape)

    def expand(self, x: Value, shape) -> Value:
        """x broadcast to `shape` (torch's expand); x itself when the shape already matches."""
        shape = tuple(shape)
        return x if x.shape == shape else self.op("expand", x, shape=shape)

    def permute(self, x: Value, dims) -> Value:
        """x with its dims reordered as `dims`; x itself for the identity order."""
        dims = tuple(dims)
        return x if dims == tuple(range(len(dims))) else self.op("permute", x, dims=dims)

    def transpose_last(self, x: Value) -> Value:
        """x with its last two dims swapped (torch's mT)."""
        n = x.type.ndim
        return self.permute(x, tuple(range(n - 2)) + (n - 1, n - 2))

    def matmul(self, x: Value, y: Value) -> Value:
        """torch.matmul(x, y), promoting mismatched dtypes."""
        return self.op("matmul", *self._pair(x, y))

    def sum_to(self, x: Value, shape) -> Value:
        """Undo broadcasting: sum `x` down to `shape` (the one place it is done)."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        axes = unbroadcast_axes(x.shape, shape)
        y = self.sum(x, axes, keepdim=False) if axes else x
        return self.reshape(y, shape)

    def keepdim_shape(self, shape, axes) -> tuple:
        """`shape` with the dims in `axes` set to 1: a reduction's keepdim shape."""
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
