"""torch.func's function transforms over fusegrad's `grad`: vjp, jvp, jacrev, jacfwd,
hessian, vmap, functional_call (exposed as `fg.func` and, for the JAX-style names,
at top level).

How they are computed (the values are torch.func's; the cost is not):
- `vjp`'s `vjp_fn(ct)` is `grad` of `sum(<f(*primals), ct>)`: each call of vjp_fn
  runs `f` again (so `f` should be pure, as torch.func asks), which is what makes
  it compose with `grad`, `vmap` and `fg.compile` through `grad`'s own machinery.
- `jacrev` takes one `grad` per output element; `jacfwd` is `jacrev` (the same
  values, from reverse mode; fg.autograd.forward_ad's dual tensors are eager only), and `hessian` is
  `jacfwd(jacrev(f))`.
- `jvp` is the double-vjp trick: `J t = d/du <vjp_fn(u), t>` (at u = 0), a
  `grad` of a `grad`.
- `vmap` is a loop, not a batching transform: it slices the mapped dims,
  calls `f` once per example and stacks the results at `out_dims`. Any `f`
  works (and random ops draw per example, as randomness='different'); a
  batch of size 0 calls `f` once on a zero example to learn the output shapes.
"""
from __future__ import annotations

import functools
import numbers

from fusegrad.tracer import Tensor, trace_state
from fusegrad.tracer.creation import zeros, zeros_like
from fusegrad.tracer.functional import stack

from .transforms import _argnums_tuple, _split_aux, _tree_leaves, _tree_rebuild, _value_and_grad

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call"]


# ----------------------------------------------------------------- grad, grad_and_value

def _scalar_output(func, has_aux: bool):
    """`func` with torch.func's check of its output: a 0-d tensor (fg.grad, as JAX's, takes any
    one-element tensor; torch.func.grad takes only a scalar), in torch.func's words."""
    @functools.wraps(func)
    def checked(*args, **kwargs):
        result = func(*args, **kwargs)
        out = result[0] if has_aux and isinstance(result, tuple) and len(result) == 2 else result
        if not isinstance(out, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        return result
    return checked


def grad(func, argnums=0, has_aux: bool = False):
    """torch.func.grad: the gradient of `func`'s one-element output with respect to
    argument(s) `argnums` (an int: its gradient; a tuple: a tuple); with `has_aux`,
    `func` returns `(output, aux)` and the result is `(grads, aux)`. fg.grad itself."""
    vg = _value_and_grad(_scalar_output(func, has_aux), argnums, has_aux, "fg.func.grad")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapped


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """torch.func.grad_and_value: `(grads, output)`, or `(grads, (output, aux))` with
    `has_aux` (fg.value_and_grad's pair, in torch.func's order)."""
    vg = _value_and_grad(_scalar_output(func, has_aux), argnums, has_aux, "fg.func.grad_and_value")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return grads, value
    return wrapped


# ----------------------------------------------------------------- vjp, jvp

def _output_leaves(out, api: str) -> list:
    leaves = _tree_leaves(out)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                               f"{type(leaf)}")
    return leaves


def _split(result, has_aux: bool, api: str):
    if has_aux and not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return _split_aux(result, has_aux)


def _inner(out_leaves: list, cotangents: list) -> Tensor:
    """sum_k <out_k, ct_k>: a one-element tensor whose gradient is the vjp."""
    total = None
    for o, ct in zip(out_leaves, cotangents):
        term = (o * ct).sum()
        total = term if total is None else total + term
    return total if total is not None else zeros(())


def _check_primals(primals) -> None:
    for leaf in _tree_leaves(primals):
        if not isinstance(leaf, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")


def _structure(tree) -> str:
    """A short description of a pytree's structure for error texts (`*` for a leaf)."""
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(v)}" for k, v in tree.items()) + "}"
    if isinstance(tree, tuple):
        return "(" + ", ".join(_structure(v) for v in tree) + ("," if len(tree) == 1 else "") + ")"
    if isinstance(tree, list):
        return "[" + ", ".join(_structure(v) for v in tree) + "]"
    return "*"


def _same_structure(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b) and \
            all(_same_structure(a[k], b[k]) for k in a)
    for kind in (tuple, list):
        if isinstance(a, kind) or isinstance(b, kind):
            return type(a) is type(b) and len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def _vjp_of(func, primals: tuple, kwargs: dict, has_aux: bool, api: str):
    """The function ct-leaves -> (gradients per primal), a tuple (torch.func's vjp_fn result)."""
    nums = tuple(range(len(primals)))

    def vjp_leaves(cotangents: list):
        if not nums:
            return ()

        def dot(*p):
            out, _ = _split(func(*p, **kwargs), has_aux, api)
            return _inner(_output_leaves(out, api), cotangents)
        return _value_and_grad(dot, nums, False, api)(*primals)[1]
    return vjp_leaves


def vjp(func, *primals, has_aux: bool = False):
    """torch.func.vjp: `(func(*primals), vjp_fn)`, or `(output, vjp_fn, aux)` with `has_aux`.
    `vjp_fn(cotangents)` (cotangents with the output's structure) returns the tuple of
    vector-Jacobian products, one per primal. Each vjp_fn call runs `func` again."""
    _check_primals(primals)
    out, aux = _split(func(*primals), has_aux, "vjp(f, *primals)")
    out_leaves = _output_leaves(out, "vjp(f, *primals)")
    vjp_leaves = _vjp_of(func, primals, {}, has_aux, "vjp(f, *primals)")

    def vjp_fn(cotangents, *, retain_graph=None, create_graph=None):
        if not _same_structure(cotangents, out):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {_structure(cotangents)}, primal output: "
                               f"{_structure(out)}")
        cts = _tree_leaves(cotangents)
        for k, (o, ct) in enumerate(zip(out_leaves, cts)):
            if tuple(ct.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of {ct.shape!r} and "
                                   f"output[{k}] has a shape of {o.shape!r}.")
        return tuple(vjp_leaves(cts))
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """torch.func.jvp: `(func(*primals), J @ tangents)` (with `has_aux`, aux third).
    Computed in reverse mode by the double-vjp trick (a grad of a grad); `strict` is
    accepted and has no effect (as torch.func's)."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    if not (isinstance(tangents, tuple) and _same_structure(primals, tangents)):
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{_structure(primals)} and tangents with structure {_structure(tangents)}")
    for p, t in zip(_tree_leaves(primals), _tree_leaves(tangents)):
        for x in (p, t):
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected primals to only contain Tensors, got {type(x)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    out, aux = _split(func(*primals), has_aux, api)
    out_leaves = _output_leaves(out, api)
    vjp_leaves = _vjp_of(func, primals, {}, has_aux, api)
    tangent_leaves = _tree_leaves(tangents)

    def pairing(*u):
        grads = _tree_leaves(vjp_leaves(list(u)))
        return _inner(grads, tangent_leaves)
    if out_leaves:
        seeds = [zeros_like(o) for o in out_leaves]
        jv = _value_and_grad(pairing, tuple(range(len(seeds))), False, api)(*seeds)[1]
    else:
        jv = ()
    jvp_out = _tree_rebuild(out, iter(jv))
    return (out, jvp_out, aux) if has_aux else (out, jvp_out)


# ----------------------------------------------------------------- jacrev, jacfwd, hessian

def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """torch.func.jacrev: the Jacobian of `func` with respect to argument(s) `argnums`:
    for each output leaf, a tensor of shape `output.shape + input.shape` (a tuple of
    them for a tuple of argnums; input pytrees keep their structure); `(jac, aux)`
    with `has_aux`. One `grad` per output element; `chunk_size` is accepted."""
    _check_chunk_size(chunk_size)
    return _jacobian(func, argnums, has_aux, "vjp(f, *primals)")


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """torch.func.jacfwd: the same Jacobian as `jacrev` (computed by it: fusegrad has
    no forward-mode transform; the values are the same)."""
    _check_randomness(randomness)
    return _jacobian(func, argnums, has_aux, "jvp(f, primals, tangents)")


def _jacobian(func, argnums, has_aux: bool, api: str):
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), torch_func=True)
        _check_primals(tuple(args[k] for k in nums))
        out, aux = _split(func(*args, **kwargs), has_aux, api)
        out_leaves = _output_leaves(out, api)
        template = args[nums[0]] if single else tuple(args[k] for k in nums)
        in_leaves = _tree_leaves(template)
        jacobians = []
        for index, o in enumerate(out_leaves):
            rows = []
            for i in range(o.numel()):
                def element(*a, index=index, i=i):
                    result, _ = _split(func(*a, **kwargs), has_aux, api)
                    return _output_leaves(result, api)[index].reshape(-1)[i]
                g = _value_and_grad(element, argnums, False, api)(*args)[1]
                rows.append(_tree_leaves(g))
            per_input = []
            for k, x in enumerate(in_leaves):
                shape = tuple(o.shape) + tuple(x.shape)
                if rows:
                    per_input.append(stack([row[k] for row in rows]).reshape(shape))
                else:
                    per_input.append(zeros(shape, dtype=x.dtype))
            jacobians.append(_tree_rebuild(template, iter(per_input)))
        jac = _tree_rebuild(out, iter(jacobians))
        return (jac, aux) if has_aux else jac
    return wrapped


def hessian(func, argnums=0):
    """torch.func.hessian: `jacfwd(jacrev(func, argnums), argnums)`."""
    return jacfwd(jacrev(func, argnums), argnums)


# ----------------------------------------------------------------- vmap

def _check_randomness(randomness) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _check_chunk_size(chunk_size) -> None:
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _is_dim(d) -> bool:
    return d is None or (isinstance(d, numbers.Integral) and not isinstance(d, bool))


def _dims_per_leaf(dims, tree, mismatch) -> list:
    """The mapped dim of each leaf of `tree`: an int/None broadcast over a subtree, or a
    nested structure matching it (else `mismatch()` raises)."""
    if not isinstance(dims, (tuple, list, dict)):
        return [dims] * len(_tree_leaves(tree))
    if isinstance(dims, dict):
        if not (isinstance(tree, dict) and list(tree) == list(dims)):
            mismatch()
        return [d for k in dims for d in _dims_per_leaf(dims[k], tree[k], mismatch)]
    if type(dims) is not type(tree) or len(dims) != len(tree):
        if not (isinstance(dims, tuple) and isinstance(tree, tuple) and len(dims) == len(tree)):  # (namedtuples)
            mismatch()
    return [d for sub_d, sub in zip(dims, tree) for d in _dims_per_leaf(sub_d, sub, mismatch)]


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """torch.func.vmap, as a loop: `func` runs once per example on the slices of the
    arguments along `in_dims` (an int for every argument, or a tuple with one entry per
    positional argument: an int, None for an argument passed whole, or a nested structure
    matching that argument's tuples/lists/dicts), and each output is stacked at `out_dims`
    (int, None or a structure matching the outputs). Keyword arguments are passed whole.
    Not a batching transform: any `func` works, and it composes with grad, jacrev and
    fg.compile. `randomness`: 'error' and 'different' draw per example (no error is
    raised for a random op), 'same' restores the generator state before each example
    (eagerly; inside fg.compile it raises). `chunk_size` is accepted and ignored. An
    out_dim of None returns the first example's output (torch raises when it is
    batched). Structure-mismatch errors describe the structures in fusegrad's own
    notation (torch prints its TreeSpec)."""
    _check_randomness(randomness)
    _check_chunk_size(chunk_size)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        name = _name(func)
        prefix = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
            raise ValueError(f"{prefix}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                             f"structure of inputs, got: {type(in_dims)}.")
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                             "trying to vmap over a function with no inputs. The latter is unsupported.")

        def mismatch():
            raise ValueError(f"{prefix}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                             f"structure {_structure(in_dims)} but inputs has structure {_structure(args)}.")
        dims = _dims_per_leaf(in_dims, tuple(args), mismatch)
        leaves = _tree_leaves(tuple(args))
        sizes, norm = [], []
        for d, x in zip(dims, leaves):
            if d is not None and not _is_dim(d):
                raise ValueError(f"{prefix}: Got in_dim={d} for an input but in_dim must be either an integer "
                                 f"dimension or None.")
            if d is not None and not isinstance(x, Tensor):
                raise ValueError(f"{prefix}: Got in_dim={d} for an input but the input is of type {type(x)}. We "
                                 "cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
            if d is not None:
                n = x.dim()
                if not -n <= d < n:
                    raise ValueError(f"{prefix}: Got in_dim={d} for some input, but that input is a Tensor of "
                                     f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}.")
                d = d % n
                sizes.append(x.shape[d])
            norm.append(d)
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if len(set(sizes)) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        batch = sizes[0]
        if randomness == "same":
            state = _rng_state()

        def example(b: int):
            def piece(x, d):
                if d is None:
                    return x
                if b < 0:           # (an empty batch: a zero example, for the output shapes)
                    return zeros(tuple(x.shape[:d]) + tuple(x.shape[d + 1:]), dtype=x.dtype)
                return x.select(d, b)
            sliced = [piece(x, d) for x, d in zip(leaves, norm)]
            if randomness == "same":
                _set_rng_state(state)
            return func(*_tree_rebuild(tuple(args), iter(sliced)), **kwargs)
        results = [example(b) for b in range(batch)] if batch else [example(-1)]
        return _stack_outputs(results, out_dims, name, empty=not batch)
    return wrapped


def _rng_state():
    if trace_state.current() is not None:
        raise NotImplementedError("fg.vmap(randomness='same') is not supported inside fg.compile: vmap is a loop "
                                  "that restores the generator's state before each example, which only runs eagerly")
    from fusegrad.tracer.random_extra import get_rng_state
    return get_rng_state()


def _set_rng_state(state) -> None:
    from fusegrad.tracer.random_extra import set_rng_state
    set_rng_state(state)


def _stack_outputs(results: list, out_dims, name: str, empty: bool):
    first = results[0]
    if not (_is_dim(out_dims) or isinstance(out_dims, (tuple, list, dict))):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")

    def mismatch():
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {_structure(out_dims)} but outputs has "
                         f"structure {_structure(first)}.")
    dims = _dims_per_leaf(out_dims, first, mismatch)
    columns = list(zip(*[_tree_leaves(r) for r in results]))
    stacked = []
    for d, column in zip(dims, columns):
        lead = column[0]
        if d is None:
            stacked.append(lead)
            continue
        if not isinstance(lead, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(lead)}. Did you "
                             "mean to set out_dims= to None for output?")
        n = lead.dim() + 1
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        d = d % n
        stacked.append(lead.unsqueeze(d).narrow(d, 0, 0) if empty else stack(list(column), dim=d))
    return _tree_rebuild(first, iter(stacked))


# ----------------------------------------------------------------- functional_call

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """torch.func.functional_call: call `module` with its parameters and buffers replaced by
    the tensors of `parameter_and_buffer_dicts` (a dict of dotted names, or a tuple/list
    of dicts with distinct keys), restoring them afterwards. `args` that is not a tuple is
    the one positional argument. With `tie_weights`, a tensor registered under several
    names (tied) is replaced under all of them when one is given; `strict` requires every
    parameter and buffer to be given and no other key."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        given = dict(dicts)
    elif isinstance(dicts, (tuple, list)) and all(isinstance(d, dict) for d in dicts):
        seen: dict = {}
        for d in dicts:
            for key in d:
                seen[key] = seen.get(key, 0) + 1
        repeated = [key for key, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        given = {k: v for d in dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(dicts)}")
    names = [n for n, _ in module.named_parameters(remove_duplicate=False)] + \
        [n for n, _ in module.named_buffers(remove_duplicate=False)]
    if strict:
        missing = [n for n in names if n not in given]
        unexpected = [n for n in given if n not in names]
        messages = []
        if unexpected:
            messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if messages:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(type(module).__name__,
                                                                                 "\n\t".join(messages)))
    if tie_weights:
        current = dict(module.named_parameters(remove_duplicate=False))
        current.update(module.named_buffers(remove_duplicate=False))
        for name, value in list(given.items()):
            if name in current:
                for other, t in current.items():
                    if t is current[name] and other not in given:
                        given[other] = value
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = {} if kwargs is None else kwargs
    restore = []
    try:
        for name, value in given.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name) if owner_name else module
            for registry in (owner._parameters, owner._buffers, owner.__dict__):
                if attr in registry:
                    restore.append((registry, attr, registry[attr], True))
                    break
            else:
                registry = owner.__dict__
                restore.append((registry, attr, None, False))
            registry[attr] = value
        return module(*args, **kwargs)
    finally:
        for registry, attr, old, existed in reversed(restore):
            if existed:
                registry[attr] = old
            else:
                registry.pop(attr, None)
