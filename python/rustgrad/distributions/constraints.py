"""Constraints: the sets a distribution's parameters and values live in, as torch.distributions.

A constraint's ``check(value)`` is a bool tensor: whether each event of value satisfies it (the
rightmost ``event_dim`` dims of value make one event). Module-level instances name the common
sets (``real``, ``positive``, ``simplex``, ...) and factories the parameterized ones
(``interval(0, 2)``, ``greater_than(1.0)``, ``independent(real, 1)``, ...).

Example::

    >>> from rustgrad.distributions import constraints
    >>> constraints.positive.check(torch.tensor([1.0, 0.0, -1.0]))
    tensor([ True, False, False])
    >>> constraints.simplex.check(torch.tensor([0.25, 0.75]))
    tensor(True)
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from . import _linalg
from . import _rg as rg
from ._rg import Tensor

__all__ = [
    "Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
    "greater_than", "greater_than_eq", "half_open_interval", "independent", "integer_interval",
    "interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square",
    "stack", "symmetric", "unit_interval",
]


class Constraint:
    """A region of values: ``check(value)`` says, per event, whether value lies in it.

    Attributes:
        is_discrete (bool): whether the region is a set of integers (or of discrete values).
        event_dim (int): how many rightmost dims of a value make one event.
    """

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor of value's batch shape: whether each event satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        # the class name without its leading underscore: _Real -> Real()
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (Uniform's low < high):
    validation skips it, and it cannot check anything itself."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """Whether the region is discrete, when it was given; else NotImplementedError."""
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The event dims, when they were given; else NotImplementedError."""
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        """A dependent constraint with these static properties (the others kept)."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x: Tensor) -> Tensor:
        """Always a ValueError: a dependent constraint cannot check values."""
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether `constraint` is a dependent one (which validation skips).

    Args:
        constraint (Constraint): the constraint.

    Example::

        >>> from rustgrad.distributions import constraints
        >>> constraints.is_dependent(constraints.dependent), constraints.is_dependent(constraints.real)
        (True, False)
    """
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint: reads as the instance's constraint (a
    Uniform's ``interval(low, high)``) and as a dependent constraint on the class. Used as
    ``@constraints.dependent_property(is_discrete=..., event_dim=...)``."""

    def __init__(self, fn: Optional[Callable[..., Any]] = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        """Decorates a method computing the constraint of an instance."""
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """A constraint reinterpreting some batch dims as event dims: an event satisfies it when
    every element of it satisfies the base constraint."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("reinterpreted_batch_ndims must be a nonnegative int")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """The base constraint's."""
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The base constraint's event dims plus the reinterpreted ones."""
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        """The base check, all-reduced over the reinterpreted dims."""
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            expected = self.base_constraint.event_dim + n
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    """The values 0 and 1."""

    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is 0 or 1."""
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors: 0/1 entries summing to 1."""

    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        """Whether each vector is one-hot."""
        binary = ((value == 0) | (value == 1)).all(-1)
        return binary & (value.sum(-1) == 1)


def _bound_str(b: Any) -> str:
    # format(), as an f-string shows it: a 0-d tensor reads as its number
    return f"{b}"


class _IntegerInterval(Constraint):
    """The integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is an integer within the bounds."""
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}(lower_bound={_bound_str(self.lower_bound)}, "
                f"upper_bound={_bound_str(self.upper_bound)})")


class _IntegerLessThan(Constraint):
    """The integers <= upper_bound."""

    is_discrete = True

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is an integer <= upper_bound."""
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={_bound_str(self.upper_bound)})"


class _IntegerGreaterThan(Constraint):
    """The integers >= lower_bound."""

    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is an integer >= lower_bound."""
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={_bound_str(self.lower_bound)})"


class _Real(Constraint):
    """The extended real line (anything but NaN)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is not NaN."""
        return value == value


class _GreaterThan(Constraint):
    """The reals > lower_bound."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value exceeds the bound."""
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={_bound_str(self.lower_bound)})"


class _GreaterThanEq(Constraint):
    """The reals >= lower_bound."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is at least the bound."""
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={_bound_str(self.lower_bound)})"


class _LessThan(Constraint):
    """The reals < upper_bound."""

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is below the bound."""
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={_bound_str(self.upper_bound)})"


class _Interval(Constraint):
    """The reals in [lower_bound, upper_bound]."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value lies in the closed interval."""
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}(lower_bound={_bound_str(self.lower_bound)}, "
                f"upper_bound={_bound_str(self.upper_bound)})")


class _HalfOpenInterval(Constraint):
    """The reals in [lower_bound, upper_bound)."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        """Whether each value lies in the half-open interval."""
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}(lower_bound={_bound_str(self.lower_bound)}, "
                f"upper_bound={_bound_str(self.upper_bound)})")


class _Simplex(Constraint):
    """Vectors of nonnegative entries summing to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        """Whether each vector lies on the simplex."""
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Count vectors: nonnegative entries summing to at most upper_bound."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, x: Tensor) -> Tensor:
        """Whether each vector holds nonnegative counts summing to at most the bound."""
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is zero above its diagonal."""
        return (value.tril() == value).flatten(-2).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal (Cholesky factors)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is lower triangular with a positive diagonal."""
        lower = (value.tril() == value).flatten(-2).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower Cholesky with rows of unit norm."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is a lower Cholesky factor whose rows have norm 1."""
        tol = rg.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = (value.detach() ** 2).sum(-1).sqrt()
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(-1)
        return lower_cholesky.check(value) & unit_rows


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is square (the same answer for every batch entry)."""
        return rg.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                       dtype=rg.bool_, device=value.device)


class _Symmetric(_Square):
    """Symmetric square matrices (within an absolute 1e-6)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is square and equal to its transpose."""
        square = super().check(value)
        if not bool(square.all()):
            return square
        return ((value - value.mT).abs() <= 1e-6 + 1e-5 * value.mT.abs()).flatten(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric positive-semidefinite matrices (no negative eigenvalue)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is symmetric with nonnegative eigenvalues."""
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        with rg.no_grad():
            return (_linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric positive-definite matrices (those with a Cholesky factorization)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is symmetric and its Cholesky factorization succeeds."""
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return _linalg.cholesky_ok(value)


class _Cat(Constraint):
    """Constraints applied to consecutive pieces of one dim (of the given lengths)."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0, lengths: Optional[Sequence[int]] = None) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("cat expects a sequence of Constraints")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError("cat: one length per constraint")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """Whether any piece is discrete."""
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The largest event dims of the pieces."""
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        """Each piece checked by its constraint, the results concatenated along dim."""
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"dim {self.dim} out of range for a {value.dim()}-d value")
        checks: List[Tensor] = []
        start = 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return rg.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraints applied to the slices of one dim, one each."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("stack expects a sequence of Constraints")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """Whether any slice's constraint is discrete."""
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The largest event dims of the slices' constraints, plus the stacked dim when it is
        one of the event dims."""
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value: Tensor) -> Tensor:
        """Each slice checked by its constraint, the results stacked along dim."""
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"dim {self.dim} out of range for a {value.dim()}-d value")
        slices = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return rg.stack([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: a value is valid when it lies in the support of the
    components (checked against every component, broadcast over the component dim).

    Args:
        base_constraint (Constraint): the components' support.
    """

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """The components' support's."""
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The components' support's."""
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        """The components' check of value with a component dim inserted, all-reduced over it."""
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


# the instances and factories of the public API (torch's names)
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
