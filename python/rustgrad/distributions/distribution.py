"""Distribution: the base class of every probability distribution, as torch.distributions'."""

from __future__ import annotations

import warnings
from typing import Any, Dict, Optional, Sequence, Type, TypeVar

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .utils import lazy_property

__all__ = ["Distribution"]

_D = TypeVar("_D", bound="Distribution")
_size = Size()


def _as_size(shape: Any) -> Size:
    return shape if isinstance(shape, Size) else Size(shape)


class Distribution:
    """A probability distribution with a batch of independent parameter sets.

    A distribution has a ``batch_shape`` (independent, differently parameterized copies) and an
    ``event_shape`` (the shape of one draw: ``()`` for a scalar distribution, ``(k,)`` for a
    k-dimensional one). ``sample(sample_shape)`` returns ``sample_shape + batch_shape +
    event_shape``; ``log_prob(value)`` returns one log-density per event.

    Args:
        batch_shape (Size): the batch shape.
        event_shape (Size): the shape of one event.
        validate_args (bool, optional): whether to check parameters and values against their
            constraints (a ValueError on a violation). Default: the class-wide setting, True
            unless Python runs with ``-O`` or ``set_default_validate_args(False)`` was called.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns argument validation on or off for every distribution made without an explicit
        ``validate_args`` (it is on by default, off under ``python -O``).

        Args:
            value (bool): whether to validate.
        """
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Sequence[int] = _size, event_shape: Sequence[int] = _size,
                 validate_args: Optional[bool] = None) -> None:
        self._batch_shape = _as_size(batch_shape)
        self._event_shape = _as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # depends on other parameters: nothing to check here
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # computed from the parameter that was given, not given itself
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")
        super().__init__()

    def expand(self: _D, batch_shape: Sequence[int], _instance: Optional[Distribution] = None) -> _D:
        """A distribution of the same kind with its parameters expanded (as views) to a larger
        batch shape; nothing is copied.

        Args:
            batch_shape (Size): the new batch shape.
            _instance: for subclasses that override expand.
        """
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> Dict[str, constraints.Constraint]:
        """The constraint each parameter must satisfy, by parameter name."""
        raise NotImplementedError

    @property
    def support(self) -> Optional[Any]:
        """The constraint the values of the distribution satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Sequence[int] = _size) -> Tensor:
        """Draws a sample of shape ``sample_shape + batch_shape + event_shape``, outside autograd
        (see rsample for a differentiable draw).

        Args:
            sample_shape (Size): how many independent draws, as a shape. Default: one.
        """
        with rg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = _size) -> Tensor:
        """Draws a reparameterized sample: a differentiable function of the parameters and of
        parameter-free noise, so gradients flow from the sample to the parameters.

        Args:
            sample_shape (Size): how many independent draws, as a shape. Default: one.
        """
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """n samples (deprecated: use ``sample((n,))``).

        Args:
            n (int): how many.
        """
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density (or mass) at value, one per event.

        Args:
            value (Tensor): values in the support, broadcastable with batch_shape + event_shape.
        """
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at value.

        Args:
            value (Tensor): the points.
        """
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function (quantile function) at value.

        Args:
            value (Tensor): probabilities in [0, 1].
        """
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support, along a new leading dim.

        Args:
            expand (bool): expand the values over the batch shape (else the batch dims are 1).
        """
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, one per batch entry."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy), one per batch entry."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: Sequence[int] = _size) -> Size:
        """sample_shape + batch_shape + event_shape: the shape of a sample."""
        return Size(tuple(_as_size(sample_shape)) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Raises torch's ValueError when value is not a tensor, its shape does not fit the
        distribution's, or some entry lies outside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        actual = value.shape
        expected = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs "
                                 f"{expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. "
                          "Please initialize the distribution with `validate_args=False` to turn off "
                          "validation.", stacklevel=3)
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls: Type[Any], _instance: Optional[Distribution] = None) -> Any:
        """A blank instance for expand: a subclass with its own __init__ must define expand."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a "
                                      "custom __init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names)
        return f"{self.__class__.__name__}({args})"
