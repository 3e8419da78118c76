"""Containers of submodules: Sequential, ModuleList, ModuleDict (torch.nn's).

Each keeps its modules in the `_modules` registry under torch's keys
("0", "1", ... for the sequences), so parameters, state_dict keys, repr and
traversal follow torch; list and dict operations (indexing, slicing,
insert/extend/pop, `+`, `*`) mirror torch's, errors included.
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import chain, islice
from typing import Iterable, Iterator, Mapping

from fusegrad.tracer.tensor import Tensor

from .module import Module, Parameter, _addindent, class_text


__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _digits_hidden(keys: list[str]) -> list[str]:
    """torch's containers leave their numeric keys out of `dir()`."""
    return [key for key in keys if not key.isdigit()]


def _renumber(container: Module) -> None:
    """Name a numbered container's children 0, 1, 2... again after a deletion (as torch)."""
    renumbered = OrderedDict((str(i), module) for i, module in enumerate(container._modules.values()))
    object.__setattr__(container, "_modules", renumbered)


class Sequential(Module):
    """Runs its modules in order, each on the previous one's output.

    Built from modules (named "0", "1", ...) or one OrderedDict of named
    modules. Supports indexing, slicing (a new Sequential keeping the keys),
    `seq[i] = module` replacement, `del seq[i]`, `len`, iteration, `append`,
    `insert`, `extend`, `pop`, `+` and `*` (repetition shares the modules).
    """

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        idx %= size
        return next(islice(iterator, idx, None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(iter(self._modules.values()), idx)

    def __setitem__(self, idx, module: Module) -> None:
        key = self._get_item_by_idx(iter(self._modules.keys()), idx)
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(iter(self._modules.keys()), idx))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self):
        return _digits_hidden(super().__dir__())

    def append(self, module: Module) -> "Sequential":
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Put `module` at position `index` (negative counts from the end), shifting the rest; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {class_text(Module)}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        """Append every module of `sequential`; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key) -> Module:
        """Remove and return the module at `key`, renumbering the rest."""
        value = self[key]
        del self[key]
        return value

    def __add__(self, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{class_text(type(other))} is given.")
        combined = Sequential()
        for layer in chain(self, other):
            combined.append(layer)
        return combined

    def __iadd__(self, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{class_text(type(other))} is given.")
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def _check_factor(self, other) -> None:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {class_text(type(self))} and "
                            f"{class_text(type(other))}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {class_text(type(self))}")

    def __mul__(self, other: int) -> "Sequential":
        self._check_factor(other)
        combined = Sequential()
        for offset, module in enumerate(chain.from_iterable([list(self)] * other)):
            combined.add_module(str(offset), module)
        return combined

    __rmul__ = __mul__

    def __imul__(self, other: int) -> "Sequential":
        self._check_factor(other)
        original = list(self._modules.values())
        offset = len(original)
        for _ in range(other - 1):
            for i, module in enumerate(original):
                self.add_module(str(i + offset), module)
            offset += len(original)
        return self

    def forward(self, input):
        """Pass `input` through each submodule in order and return the last output."""
        for module in self:
            input = module(input)
        return input


def _absolute_key(idx, length: int) -> str:
    """The key of position `idx` (negative from the end) in a list container of `length`
    entries, with torch's IndexError for one out of range."""
    idx = operator.index(idx)
    if not -length <= idx < length:
        raise IndexError(f"index {idx} is out of range")
    return str(idx + length if idx < 0 else idx)


class ModuleList(Module):
    """A list of registered submodules (keys "0", "1", ...); no forward of its own."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def _get_abs_string_index(self, idx) -> str:
        return _absolute_key(idx, len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx, module: Module) -> None:
        setattr(self, self._get_abs_string_index(idx), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __dir__(self):
        return _digits_hidden(super().__dir__())

    def __repr__(self) -> str:
        # torch folds runs of identical reprs: "(0-2): 3 x Linear(...)"
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list] = []          # [start, end, text]
        for i, text in enumerate(reprs):
            if blocks and blocks[-1][2] == text:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, text])
        lines = []
        for start, end, text in blocks:
            line = f"({start}): {text}" if start == end else f"({start}-{end}): {end - start + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index: int, module: Module) -> None:
        """Put `module` before position `index`."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> "ModuleList":
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key) -> Module:
        """Remove and return the module at `key`, renumbering the rest."""
        value = self[key]
        del self[key]
        return value

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Append every module of the iterable `modules`; returns self."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of registered submodules; no forward of its own."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under `key`."""
        value = self[key]
        del self[key]
        return value

    def keys(self):
        """The keys, in insertion order."""
        return self._modules.keys()

    def items(self):
        """`(key, module)` pairs, in insertion order."""
        return self._modules.items()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def update(self, modules) -> None:
        """Add modules from a mapping or an iterable of `(key, module)` pairs."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, container_abcs.Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, container_abcs.Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is"
                                + type(pair).__name__)
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


def _entry_text(key, value, by_type_name: bool = False) -> str:
    """One line of ParameterList's repr (ParameterDict's: `by_type_name`, torch.typename's
    "torch.FloatTensor" where the list prints the dtype), as torch prints it."""
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(n) for n in value.shape)
        return f"  ({key}): {kind} containing: [{value.type() if by_type_name else value.dtype} of size {size}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters registered on the module (names "0", "1", ...), as torch's: a
    tensor put in is made a Parameter; other objects are kept as plain attributes."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx) -> str:
        return _absolute_key(idx, len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx, value) -> None:
        name = self._get_abs_string_index(idx)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, name, value)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, values: Iterable) -> "ParameterList":
        return self.extend(values)

    def __dir__(self):
        return _digits_hidden(super().__dir__())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")

    def append(self, value) -> "ParameterList":
        """Add `value` at the end (a tensor as a Parameter); returns self."""
        index = len(self)
        self._size += 1
        self[index] = value
        return self

    def extend(self, values: Iterable) -> "ParameterList":
        """Append every element of the iterable `values`; returns self."""
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_entry_text(k, value) for k, value in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters registered on the module under their keys, as torch's:
    a tensor put in is made a Parameter."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        """self[key], set to `default` first where key is missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def pop(self, key):
        """Remove the entry `key` and return its value."""
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple:
        """Remove and return the last (key, value) pair."""
        key, _ = self._keys.popitem()
        self._keys[key] = None
        value = self[key]
        del self[key]
        return key, value

    def get(self, key, default=None):
        """self[key], or `default` where key is missing."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default=None) -> "ParameterDict":
        """A new ParameterDict of `keys`, each holding `default`."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple]:
        """(key, value) pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator:
        """The values, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Add the (key, value) pairs of a mapping (a plain dict's in sorted key order, as
        torch's) or of an iterable of pairs."""
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, container_abcs.Mapping):
            for key, value in sorted(parameters.items()):
                self[key] = value
        else:
            for j, pair in enumerate(parameters):
                if not isinstance(pair, container_abcs.Iterable):
                    raise TypeError("ParameterDict update sequence element #" + str(j) + " should be Iterable; is"
                                    + type(pair).__name__)
                if not len(pair) == 2:
                    raise ValueError("ParameterDict update sequence element #" + str(j) + " has length "
                                     + str(len(pair)) + "; 2 is required")
                self[pair[0]] = pair[1]

    def extra_repr(self) -> str:
        return "\n".join(_entry_text(k, value, by_type_name=True) for k, value in self.items())
