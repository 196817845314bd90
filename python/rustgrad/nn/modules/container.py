"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple, Union, overload

from ... import _dtype
from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_string_index(self: Any, idx: int) -> str:
    """The registered name of list position idx (negative counts from the end)."""
    idx = operator.index(idx)
    if not (-len(self) <= idx < len(self)):
        raise IndexError(f"index {idx} is out of range")
    if idx < 0:
        idx += len(self)
    return str(idx)


class Sequential(Module):
    """A container that calls its modules in order, each on the output of the previous one.

    Modules are given as positional arguments (named ``"0"``, ``"1"``, ...) or as one
    ``OrderedDict`` (named by its keys). Indexing with an int returns a module, with a slice
    a new ``Sequential``.

    Args:
        *args (Module): the modules, in the order they are called.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> net
        Sequential(
          (0): Linear(in_features=4, out_features=8, bias=True)
          (1): ReLU()
          (2): Linear(in_features=8, out_features=2, bias=True)
        )
        >>> net(torch.ones(3, 4)).shape
        torch.Size([3, 2])
        >>> len(net[:2])
        2
    """

    @overload
    def __init__(self, *args: Module) -> None: ...

    @overload
    def __init__(self, arg: OrderedDict[str, Module]) -> None: ...

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator: Iterable[Any], idx: int) -> Any:
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        idx %= size
        return next(islice(iterator, idx, None))

    def __getitem__(self, idx: Union[slice, int]) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        key = self._get_item_by_idx(self._modules.keys(), idx)
        setattr(self, key, module)

    def __delitem__(self, idx: Union[slice, int]) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            key = self._get_item_by_idx(self._modules.keys(), idx)
            delattr(self, key)
        str_indices = [str(i) for i in range(len(self._modules))]
        self.__dict__["_modules"] = dict(zip(str_indices, self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{str(type(other))} is given."
            )
        ret = Sequential()
        for layer in self:
            ret.append(layer)
        for layer in other:
            ret.append(layer)
        return ret

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __dir__(self) -> Any:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> Sequential:
        """Adds a module at the end; returns the ``Sequential``.

        Args:
            module (Module): the module to add.
        """
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Inserts a module before position ``index``; returns the ``Sequential``.

        Args:
            index (int): the position (negative counts from the end).
            module (Module): the module to insert.
        """
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not (-n <= index <= n):
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Adds the modules of an iterable at the end; returns the ``Sequential``.

        Args:
            sequential (iterable of Module): the modules to add.
        """
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: Union[int, slice]) -> Module:
        """Removes the module at ``key`` and returns it.

        Args:
            key (int or slice): the position of the module.
        """
        v = self[key]
        del self[key]
        return v

    def forward(self, input: Any) -> Any:
        """Calls each module on the output of the previous one, starting from ``input``.

        Args:
            input: the input of the first module.

        Returns:
            the output of the last module (``input`` itself if the container is empty).
        """
        for module in self:
            input = module(input)
        return input

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class ModuleList(Module):
    """A list of modules, registered as children ``"0"``, ``"1"``, ...

    Unlike a Python list, the modules are seen by :meth:`Module.parameters`,
    :meth:`Module.to`, :meth:`Module.state_dict` and the rest of the Module API. It has no
    ``forward``: the owning module decides how to call them.

    Args:
        modules (iterable of Module, optional): the initial modules.

    Example::

        >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        >>> x = torch.ones(2, 4)
        >>> for layer in layers:
        ...     x = layer(x)
        >>> x.shape
        torch.Size([2, 4])
        >>> len(list(layers.parameters()))
        6
    """

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    _get_abs_string_index = _abs_string_index

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._get_abs_string_index(idx), module)

    def __delitem__(self, idx: Union[int, slice]) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        str_indices = [str(i) for i in range(len(self._modules))]
        self.__dict__["_modules"] = dict(zip(str_indices, self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __repr__(self) -> str:
        list_of_reprs = [repr(item) for item in self]
        if len(list_of_reprs) == 0:
            return self._get_name() + "()"
        start_end_indices = [[0, 0]]
        repeated_blocks = [list_of_reprs[0]]
        for i, r in enumerate(list_of_reprs[1:], 1):
            if r == repeated_blocks[-1]:
                start_end_indices[-1][1] += 1
                continue
            start_end_indices.append([i, i])
            repeated_blocks.append(r)
        lines = []
        main_str = self._get_name() + "("
        for (start_id, end_id), b in zip(start_end_indices, repeated_blocks):
            local_repr = f"({start_id}): {b}"
            if start_id != end_id:
                n = end_id - start_id + 1
                local_repr = f"({start_id}-{end_id}): {n} x {b}"
            lines.append(_addindent(local_repr, 2))
        main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def __dir__(self) -> Any:
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index: int, module: Module) -> None:
        """Inserts a module before position ``index``.

        Args:
            index (int): the position (negative counts from the end).
            module (Module): the module to insert.
        """
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> ModuleList:
        """Adds a module at the end; returns the ``ModuleList``.

        Args:
            module (Module): the module to add.
        """
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: Union[int, slice]) -> Module:
        """Removes the module at ``key`` and returns it; the later modules are renumbered.

        Args:
            key (int or slice): the position of the module.
        """
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Adds the modules of an iterable at the end; returns the ``ModuleList``.

        Args:
            modules (iterable of Module): the modules to add.
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dictionary of modules, registered as children under their keys.

    Iteration, ``keys()``, ``items()`` and ``values()`` follow insertion order.

    Args:
        modules (mapping or iterable of (str, Module) pairs, optional): the initial modules.

    Example::

        >>> acts = nn.ModuleDict({"relu": nn.ReLU(), "tanh": nn.Tanh()})
        >>> acts["relu"](torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
        >>> list(acts.keys())
        ['relu', 'tanh']
    """

    def __init__(self, modules: Optional[Mapping[str, Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Removes all modules."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes the module under ``key`` and returns it.

        Args:
            key (str): the key of the module.
        """
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        """Returns an iterable of the keys, in insertion order."""
        return self._modules.keys()

    def items(self) -> Iterable[Tuple[str, Module]]:
        """Returns an iterable of the ``(key, module)`` pairs, in insertion order."""
        return self._modules.items()  # type: ignore[return-value]

    def values(self) -> Iterable[Module]:
        """Returns an iterable of the modules, in insertion order."""
        return self._modules.values()  # type: ignore[return-value]

    def update(self, modules: Any) -> None:
        """Adds or replaces modules from a mapping or an iterable of ``(key, module)`` pairs.

        Args:
            modules (mapping or iterable of (str, Module) pairs): the modules to add.
        """
        if isinstance(modules, (OrderedDict, ModuleDict, dict, Mapping)):
            for key, module in modules.items():
                self[key] = module
        else:
            for j, m in enumerate(modules):
                if len(m) != 2:
                    raise ValueError(
                        f"ModuleDict update sequence element #{j} has length {len(m)}; 2 is "
                        "required"
                    )
                self[m[0]] = m[1]


class ParameterList(Module):
    """A list of parameters, registered as ``"0"``, ``"1"``, ...

    Tensors assigned to it are wrapped in :class:`Parameter`, so they are seen by
    :meth:`Module.parameters` and the state_dict.

    Args:
        values (iterable, optional): the initial parameters (or tensors).

    Example::

        >>> params = nn.ParameterList([nn.Parameter(torch.zeros(2)) for _ in range(3)])
        >>> len(list(params.parameters()))
        3
    """

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    _get_abs_string_index = _abs_string_index

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return self.__class__([self[i] for i in range(len(self))[idx]])
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        idx_s = self._get_abs_string_index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, idx_s, param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def append(self, value: Any) -> ParameterList:
        """Adds a value at the end (a tensor becomes a :class:`Parameter`); returns the list.

        Args:
            value: the parameter (or tensor) to add.
        """
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Adds the values of an iterable at the end; returns the list.

        Args:
            values (iterable): the parameters (or tensors) to add.
        """
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per entry: its kind, dtype and size."""
        lines = []
        for k, p in enumerate(self):
            if isinstance(p, Tensor):
                size_str = "x".join(str(size) for size in p.size())
                parastr = "{} containing: [{} of size {}]".format(
                    "Parameter" if isinstance(p, Parameter) else "Tensor",
                    _legacy_name(p), size_str)
                lines.append("  (" + str(k) + "): " + parastr)
            else:
                lines.append("  (" + str(k) + "): Object of type: " + type(p).__name__)
        return "\n".join(lines)


class ParameterDict(Module):
    """An ordered dictionary of parameters, registered under their keys.

    Tensors assigned to it are wrapped in :class:`Parameter`.

    Args:
        parameters (mapping or iterable of (str, Parameter) pairs, optional): the initial
            parameters.

    Example::

        >>> pd = nn.ParameterDict({"scale": nn.Parameter(torch.ones(3))})
        >>> [name for name, _ in pd.named_parameters()]
        ['scale']
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: Dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        """Returns an iterable of the keys, in insertion order."""
        return self._keys.keys()

    def items(self) -> Iterable[Tuple[str, Any]]:
        """Returns an iterable of the ``(key, parameter)`` pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        """Returns an iterable of the parameters, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Adds or replaces parameters from a mapping or an iterable of ``(key, value)`` pairs.

        Args:
            parameters (mapping or iterable of (str, Parameter) pairs): the values to add.
        """
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self) -> str:
        """One line per entry: its key, kind, dtype and size."""
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                size_str = "x".join(str(size) for size in p.size())
                parastr = "{} containing: [{} of size {}]".format(
                    "Parameter" if isinstance(p, Parameter) else "Tensor",
                    _legacy_name(p), size_str)
                lines.append("  (" + str(k) + "): " + parastr)
            else:
                lines.append("  (" + str(k) + "): Object of type: " + type(p).__name__)
        return "\n".join(lines)


def _legacy_name(t: Tensor) -> str:
    return "torch." + _dtype.LEGACY_NAMES[t.dtype.name]
