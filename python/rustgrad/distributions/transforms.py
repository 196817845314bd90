"""Transforms: invertible (or not) maps between constrained spaces, with the log-determinant of
their Jacobians, as torch.distributions.transforms. A TransformedDistribution pushes a base
distribution through them.

Example::

    >>> from rustgrad.distributions.transforms import ExpTransform
    >>> t = ExpTransform()
    >>> x = torch.tensor([0.0, 1.0])
    >>> t(x)
    tensor([1.0000, 2.7183])
    >>> t.inv(torch.tensor([1.0, 4.0]))
    tensor([0.0000, 1.3863])
    >>> t.log_abs_det_jacobian(x, t(x))
    tensor([0., 1.])
"""

from __future__ import annotations

import math
import operator
import weakref
from functools import reduce
from numbers import Number, Real
from typing import Any, List, Optional, Sequence, Union

from . import _linalg, constraints
from . import _rg as rg
from ._rg import Size, Tensor
from .utils import _sum_rightmost, broadcast_all, broadcast_shapes, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


class Transform:
    """A map y = t(x) from ``domain`` to ``codomain`` with its inverse ``t.inv`` and
    ``log_abs_det_jacobian(x, y)``, the log of |det dy/dx| (per event of the domain).

    ``t(x)`` calls ``_call``, ``t.inv(y)`` calls ``_inverse``. With ``cache_size=1`` the latest
    (x, y) pair is remembered, so that ``t.inv(t(x))`` gives back x itself (by identity), which
    non-invertible transforms and numerically lossy inverses rely on.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the latest pair).

    Attributes:
        domain (Constraint): where the inputs live.
        codomain (Constraint): where the outputs live.
        bijective (bool): whether the map is invertible.
        sign (int or Tensor): for a monotone map of one variable, +1 or -1.
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = cache_size
        self._inv: Optional[Any] = None
        if cache_size == 0:
            pass
        elif cache_size == 1:
            self._cached_x_y: Any = (None, None)
        else:
            raise ValueError("cache_size must be 0 or 1")
        super().__init__()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_inv"] = None  # a weak reference does not pickle
        return state

    @property
    def event_dim(self) -> int:
        """The event dims of domain and codomain, where they agree (else a ValueError)."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (``t.inv(y)`` solves ``t(x) = y``); ``t.inv.inv`` is t."""
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> Any:
        """+1 or -1: the sign of the derivative of a monotone transform of one variable."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with another cache size (itself when the size is the same).

        Args:
            cache_size (int): 0 or 1.
        """
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        """y = t(x) (from the cache when x is the cached input)."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        """x = t.inv(y) (from the cache when y is the cached output)."""
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |det dy/dx| at the pair (x, y = t(x)), one per domain event.

        Args:
            x (Tensor): the input.
            y (Tensor): the output t(x).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """The output shape for an input of this shape.

        Args:
            shape (Size): the input's shape.
        """
        return Size(shape)

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """The input shape for an output of this shape.

        Args:
            shape (Size): the output's shape.
        """
        return Size(shape)


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform  # a strong reference: the inverse keeps its forward alive

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The forward transform's codomain."""
        return self._inv.codomain  # type: ignore[union-attr]

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        """The forward transform's domain."""
        return self._inv.domain  # type: ignore[union-attr]

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """The forward transform's."""
        return self._inv.bijective  # type: ignore[union-attr]

    @property
    def sign(self) -> Any:
        """The forward transform's."""
        return self._inv.sign  # type: ignore[union-attr]

    @property
    def inv(self) -> Transform:
        """The forward transform."""
        return self._inv  # type: ignore[return-value]

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The inverse of the forward transform with this cache size."""
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _InverseTransform):
            return False
        return self._inv == other._inv

    __hash__ = Transform.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        """The forward transform's inverse at x."""
        return self._inv._inv_call(x)  # type: ignore[union-attr]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Minus the forward transform's, at (y, x)."""
        return -self._inv.log_abs_det_jacobian(y, x)  # type: ignore[union-attr]

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """The forward transform's inverse_shape."""
        return self._inv.inverse_shape(shape)  # type: ignore[union-attr]

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """The forward transform's forward_shape."""
        return self._inv.forward_shape(shape)  # type: ignore[union-attr]


class ComposeTransform(Transform):
    """Several transforms applied in order: ``parts[-1](...parts[0](x))``.

    Args:
        parts (list of Transform): the transforms, first applied first.
        cache_size (int): the cache size given to every part.
    """

    def __init__(self, parts: Sequence[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposeTransform):
            return False
        return self.parts == other.parts

    __hash__ = Transform.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        """The first part's domain, widened to as many event dims as the later parts need."""
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # walk back from the last codomain: each part may add or remove event dims
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        """The last part's codomain, widened to as many event dims as the earlier parts need."""
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """Whether every part is."""
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:
        """The product of the parts' signs."""
        sign: Any = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        """The composition of the parts' inverses, in reverse order."""
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same composition with every part given this cache size."""
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        """The parts applied in order."""
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The sum of the parts' terms, each summed over the event dims it does not own."""
        if not self.parts:
            return rg.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(xi, yi), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return reduce(operator.add, terms)

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """The shape after every part."""
        for part in self.parts:
            shape = part.forward_shape(shape)
        return Size(shape)

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """The shape before every part."""
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return Size(shape)

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """A transform whose rightmost batch dims are reinterpreted as event dims: its
    log_abs_det_jacobian is summed over them.

    Args:
        base_transform (Transform): the transform.
        reinterpreted_batch_ndims (int): how many rightmost dims become event dims.
        cache_size (int): 0 or 1.
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with this cache size."""
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        """The base domain with the reinterpreted dims."""
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        """The base codomain with the reinterpreted dims."""
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """The base transform's."""
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        """The base transform's."""
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The base transform's, summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """The base transform's."""
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """The base transform's."""
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims of an event from ``in_shape`` to ``out_shape`` (the same
    number of elements); its Jacobian is a permutation, log-determinant 0.

    Args:
        in_shape (Size): the event shape of the input.
        out_shape (Size): the event shape of the output.
        cache_size (int): 0 or 1.
    """

    bijective = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int], cache_size: int = 0) -> None:
        self.in_shape = Size(in_shape)
        self.out_shape = Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        """The reals with len(in_shape) event dims."""
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        """The reals with len(out_shape) event dims."""
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same reshape with this cache size."""
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Zeros of the batch shape."""
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.new_zeros(batch)

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """shape with in_shape replaced by out_shape."""
        if len(shape) < len(self.in_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.in_shape)
        if tuple(shape[cut:]) != tuple(self.in_shape):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(self.in_shape)}")
        return Size(tuple(shape[:cut]) + tuple(self.out_shape))

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """shape with out_shape replaced by in_shape."""
        if len(shape) < len(self.out_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.out_shape)
        if tuple(shape[cut:]) != tuple(self.out_shape):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(self.out_shape)}")
        return Size(tuple(shape[:cut]) + tuple(self.in_shape))


class ExpTransform(Transform):
    """y = exp(x), from the reals onto the positive reals."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """x: the log of exp's derivative exp(x)."""
        return x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals.

    Args:
        exponent (Tensor or float): the exponent.
        cache_size (int): 0 or 1.
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Union[Tensor, float], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with this cache size."""
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Any:
        """The exponent's sign."""
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all())

    __hash__ = Transform.__hash__

    def _exponent_beside(self, x: Tensor) -> Tensor:
        # a number's exponent is a 0-d tensor on the default device: rustgrad's ops (unlike
        # torch's) do not combine a CPU scalar tensor with one on another device
        e = self.exponent
        return e.to(x.device) if e.dim() == 0 and e.device != x.device else e

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self._exponent_beside(x))

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self._exponent_beside(y))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |exponent * x ** (exponent - 1)|, written as log |exponent * y / x|."""
        return (self._exponent_beside(x) * y / x).abs().log()

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """shape broadcast with the exponent's."""
        return broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """shape broadcast with the exponent's."""
        return broadcast_shapes(shape, getattr(self.exponent, "shape", ()))


def _clipped_sigmoid(x: Tensor) -> Tensor:
    # kept inside (0, 1) so that the inverse (a logit) stays finite
    finfo = rg.finfo(x.dtype)
    return rg.sigmoid(x).clamp(min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(Transform):
    """y = sigmoid(x), from the reals onto the unit interval (clipped inside it)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        finfo = rg.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log(sigmoid(x) (1 - sigmoid(x))) = -softplus(-x) - softplus(x)."""
        return -rg.softplus(-x) - rg.softplus(x)


class SoftplusTransform(Transform):
    """y = log(1 + exp(x)), from the reals onto the positive reals."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return rg.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        # log(exp(y) - 1) = y + log(1 - exp(-y)), stable for large y
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log sigmoid(x) = -softplus(-x)."""
        return -rg.softplus(-x)


class TanhTransform(Transform):
    """y = tanh(x), from the reals onto (-1, 1)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        # atanh; no clipping: a y of exactly +-1 gives +-inf, as torch's
        return 0.5 * (y.log1p() - (-y).log1p())

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log(1 - tanh(x)^2), in the stable form 2 (log 2 - x - softplus(-2x))."""
        return 2.0 * (math.log(2.0) - x - rg.softplus(-2.0 * x))


class AbsTransform(Transform):
    """y = |x| (not invertible: the inverse picks the nonnegative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """y = loc + scale * x.

    Args:
        loc (Tensor or float): the shift.
        scale (Tensor or float): the scale.
        event_dim (int): the event dims of x (the log-determinant sums over them). Default: 0.
        cache_size (int): 0 or 1.
    """

    bijective = True

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float], event_dim: int = 0,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc: Any = loc
        self.scale: Any = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        """The event dims given."""
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        """The reals (with event_dim event dims)."""
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        """The reals (with event_dim event dims)."""
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with this cache size."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, Number) and isinstance(theirs, Number):
                if mine != theirs:
                    return False
            elif not bool((mine == theirs).all()):  # type: ignore[union-attr]
                return False
        return True

    __hash__ = Transform.__hash__

    @property
    def sign(self) -> Any:
        """The scale's sign."""
        if isinstance(self.scale, Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |scale|, expanded to x's batch shape (summed over the event dims)."""
        shape = tuple(x.shape)
        if isinstance(self.scale, Real):
            result = rg.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """shape broadcast with loc's and scale's."""
        return broadcast_shapes(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """shape broadcast with loc's and scale's."""
        return broadcast_shapes(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dim, from real vectors onto the simplex (not invertible:
    the inverse gives the log, one representative of the logits)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """shape (at least one dim)."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(shape)

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """shape (at least one dim)."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(shape)


class StickBreakingTransform(Transform):
    """A bijection from R^(K-1) onto the K-simplex by stick breaking: the i-th coordinate,
    through a sigmoid (shifted so that x = 0 maps to the uniform vector), is the fraction of
    the remaining stick the i-th entry takes; the last entry takes what is left."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = Transform.__hash__

    @staticmethod
    def _log_offsets(like: Tensor, n: int) -> Tensor:
        # log(n), log(n - 1), ..., log(1): the shifts that send x = 0 to the uniform vector
        return rg.arange(n, 0, -1, dtype=like.dtype, device=like.device).log()

    def _call(self, x: Tensor) -> Tensor:
        z = _clipped_sigmoid(x - self._log_offsets(x, x.shape[-1]))
        left = (1 - z).cumprod(-1)  # the stick left after each break
        one = x.new_ones(tuple(x.shape[:-1]) + (1,))
        return rg.cat([z, one], -1) * rg.cat([one, left], -1)

    def _inverse(self, y: Tensor) -> Tensor:
        taken = y[..., :-1]
        left = (1 - taken.cumsum(-1)).clamp(min=rg.finfo(y.dtype).tiny)
        return taken.log() - left.log() + self._log_offsets(y, taken.shape[-1])

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The sum over coordinates of log(y_i (1 - z_i)), z_i the i-th break fraction."""
        shifted = x - self._log_offsets(x, x.shape[-1])
        return (-shifted + rg.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """shape with its last dim one longer."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """shape with its last dim one shorter."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(Transform):
    """From unconstrained square matrices to lower-triangular ones with a positive diagonal:
    the strictly lower triangle kept, the diagonal exponentiated (not invertible onto all
    matrices: the upper triangle is dropped)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """From unconstrained square matrices to positive-definite ones: L @ L.mT with L the
    LowerCholeskyTransform of the input."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(_linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): onto the unit interval (the probability integral transform).

    Args:
        distribution (Distribution): a distribution of one variable with cdf and icdf.
        cache_size (int): 0 or 1.
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The distribution's support."""
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The distribution's log density at x (the cdf's derivative is the density)."""
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with this cache size."""
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


class CorrCholeskyTransform(Transform):
    """From unconstrained vectors of D (D - 1) / 2 entries to Cholesky factors of D x D
    correlation matrices (lower triangular, positive diagonal, rows of unit norm).

    The vector fills the strictly lower triangle row by row; each entry passes through tanh,
    and each row is then completed by a signed stick breaking: entry j of a row takes the
    fraction tanh(x_j) of the square root of what the row's earlier entries left of its unit
    norm, and the diagonal takes the rest.
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        eps = rg.finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # the root of what each row leaves of its unit norm before each entry
        left = (1 - r**2).sqrt().cumprod(-1)
        ones = rg.ones_like(left[..., :1])
        r = r + rg.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * rg.cat([ones, left[..., :-1]], -1)

    def _inverse(self, y: Tensor) -> Tensor:
        left = 1 - (y * y).cumsum(-1)
        left_before = rg.cat([rg.ones_like(left[..., :1]), left[..., :-1]], -1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_before, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor, intermediates: Any = None) -> Tensor:
        """log |det| of the map from x to the strictly lower triangle of y (the spaces differ in
        dimension, so the triangle stands for y): the stick breaking's half log of what each
        row leaves, plus the tanh's log(1 - tanh(x)**2) written stably."""
        left = 1 - (y * y).cumsum(-1)
        # diagonal -2 of the cumulative sums is what the entries of diagonal -1 see: no shift
        stick = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        tanh = -2 * (x + rg.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh

    def forward_shape(self, shape: Sequence[int]) -> Size:
        """(..., N) to (..., D, D), with N = D (D - 1) / 2."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape: Sequence[int]) -> Size:
        """(..., D, D) to (..., D (D - 1) / 2)."""
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


def _check_piece(what: str, t: Tensor, dim: int, size: int, name: str) -> None:
    # torch's AssertionErrors for a dim out of range or a size that does not fit
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {t.dim()} dimensions")
    if t.size(dim) != size:
        raise AssertionError(f"{name[0]}.size({dim}) = {t.size(dim)} must equal {name[1:]} {size}")


class CatTransform(Transform):
    """Transforms applied to consecutive pieces of one dim, as ``rustgrad.cat`` would join
    them: piece i, of ``lengths[i]`` entries along ``dim``, goes through ``tseq[i]``.

    Args:
        tseq (list of Transform): the transforms, one per piece.
        dim (int): the dim the pieces are cut along.
        lengths (list of int, optional): the pieces' lengths (default: 1 each).
        cache_size (int): 0 or 1 (given to every transform).

    Example::

        >>> from rustgrad.distributions.transforms import CatTransform, ExpTransform, identity_transform
        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[2, 1])
        >>> t(torch.tensor([0.0, 1.0, 5.0]))
        tensor([1.0000, 2.7183, 5.0000])
    """

    transforms: List[Transform]

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, lengths: Optional[Sequence[int]] = None,
                 cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        """The largest event dims of the transforms."""
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The total length of the pieces."""
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with this cache size."""
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, t: Tensor) -> List[Tensor]:
        out, start = [], 0
        for length in self.lengths:
            out.append(t.narrow(self.dim, start, length))
            start = start + length
        return out

    def _call(self, x: Tensor) -> Tensor:
        _check_piece("tensor", x, self.dim, self.length, "xlength")
        return rg.cat([t(p) for t, p in zip(self.transforms, self._pieces(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        _check_piece("tensor", y, self.dim, self.length, "ylength")
        return rg.cat([t.inv(p) for t, p in zip(self.transforms, self._pieces(y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Each piece's, summed over the event dims it lacks; concatenated along dim when dim is
        a batch dim, else added up.

        Args:
            x (Tensor): the input.
            y (Tensor): the output.
        """
        _check_piece("x", x, self.dim, self.length, "xlength")
        _check_piece("y", y, self.dim, self.length, "ylength")
        event_dim = self.event_dim
        parts = []
        for t, xp, yp in zip(self.transforms, self._pieces(x), self._pieces(y)):
            part = t.log_abs_det_jacobian(xp, yp)
            if t.event_dim < event_dim:
                part = _sum_rightmost(part, event_dim - t.event_dim)
            parts.append(part)
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + event_dim
        if dim < 0:
            return rg.cat(parts, dim)
        return reduce(operator.add, parts)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """Whether every transform is."""
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        """The transforms' domains, concatenated."""
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        """The transforms' codomains, concatenated."""
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms applied to the slices of one dim, as ``rustgrad.stack`` would join them: slice
    i along ``dim`` goes through ``tseq[i]``.

    Args:
        tseq (list of Transform): the transforms, one per slice.
        dim (int): the dim the slices are taken along.
        cache_size (int): 0 or 1 (given to every transform).

    Example::

        >>> from rustgrad.distributions.transforms import ExpTransform, StackTransform, identity_transform
        >>> t = StackTransform([ExpTransform(), identity_transform], dim=1)
        >>> t(torch.tensor([[0.0, 3.0], [1.0, 4.0]]))
        tensor([[1.0000, 3.0000],
                [2.7183, 4.0000]])
    """

    transforms: List[Transform]

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with this cache size."""
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z: Tensor) -> List[Tensor]:
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x: Tensor) -> Tensor:
        _check_piece("tensor", x, self.dim, len(self.transforms), "xlen(transforms)")
        return rg.stack([t(s) for s, t in zip(self._slice(x), self.transforms)], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        _check_piece("tensor", y, self.dim, len(self.transforms), "ylen(transforms)")
        return rg.stack([t.inv(s) for s, t in zip(self._slice(y), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Each slice's, stacked along dim.

        Args:
            x (Tensor): the input.
            y (Tensor): the output.
        """
        _check_piece("x", x, self.dim, len(self.transforms), "xlen(transforms)")
        _check_piece("y", y, self.dim, len(self.transforms), "ylen(transforms)")
        return rg.stack([t.log_abs_det_jacobian(xs, ys)
                         for xs, ys, t in zip(self._slice(x), self._slice(y), self.transforms)], self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """Whether every transform is."""
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        """The transforms' domains, stacked."""
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        """The transforms' codomains, stacked."""
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


def _parts(transforms: Union[Transform, List[Transform]]) -> List[Transform]:
    """A transform or a list of them, as a list (ValueError otherwise)."""
    if isinstance(transforms, Transform):
        return [transforms]
    if isinstance(transforms, list):
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        return transforms
    raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
