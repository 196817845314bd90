"""torch's complex-number API: conj, conj_physical(_), resolve_conj, resolve_neg, is_conj,
is_neg, real and imag; view_as_real / view_as_complex (and their _copy forms), complex, polar,
cfloat/cdouble, and the complex forms of abs and angle (pointwise.py hands complex inputs here).

On a real tensor torch's conj, conj_physical, resolve_conj, resolve_neg and real return the
tensor itself (the same object, not a view); is_conj and is_neg are False; imag is an error.
conj_physical_ writes nothing new but is an in-place op all the same: the version moves and,
with autograd, self's history gains ConjPhysicalBackward1, as torch's.

Gradients follow torch's convention for complex autograd: for a real loss L the gradient of a
complex z is dL/dx + i dL/dy (the conjugate Wirtinger derivative, doubled). Where torch returns
a lazy view, rustgrad differs where noted: real and imag are views (sharing memory and
version, their history remade after a write to the complex tensor), but an in-place write
through one under autograd is refused; conj, view_as_real and view_as_complex are copies
(is_conj() stays False)."""

from __future__ import annotations

from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._unary import COMPLEX
from ._util import quiet_fp, real_part, same_device
from .copyslices import AS_STRIDED, OTHER_ITEM_SIZE, geometry_of, inplace_from


def _is_complex(t: Tensor) -> bool:
    return t._data.dtype.kind == "c"


def _tensor_arg(x: Any, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _conj_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.conj()


def _conj_physical0_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.conj_physical()


CONJ = node("ConjBackward0", _conj_bw)
CONJ_PHYSICAL = node("ConjPhysicalBackward0", _conj_physical0_bw)


@op(method="conj", function="conj", grad_fn="ConjBackward0")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate of input (computed, not a lazy view); input itself when real.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.conj() is x
        True
    """
    _tensor_arg(input, "conj")
    if _is_complex(input):
        return CONJ.record(input._backend.conj(input._data), (input,))
    return input


@op(method="conj_physical", function="conj_physical", grad_fn="ConjPhysicalBackward0")
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate of input computed eagerly; input itself when real.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> rustgrad.conj_physical(x) is x
        True
    """
    _tensor_arg(input, "conj_physical")
    if _is_complex(input):
        return CONJ_PHYSICAL.record(input._backend.conj(input._data), (input,))
    return input


def _conj_physical_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.conj_physical()  # a real gradient passes unchanged


CONJ_PHYSICAL_ = node("ConjPhysicalBackward1", _conj_physical_bw)


@op(method="conj_physical_", function="conj_physical_", grad_fn="ConjPhysicalBackward1")
def conj_physical_(self: Tensor) -> Tensor:
    """conj_physical written into self: the values stay, the version moves and autograd records
    ConjPhysicalBackward1 (whose gradient passes unchanged), as torch's."""
    _tensor_arg(self, "conj_physical_")
    return inplace_from(self, lambda src: CONJ_PHYSICAL_.record(src._backend.conj(src._data),
                                                                (src,)), False)


@op(method="resolve_conj", function="resolve_conj")
def resolve_conj(input: Tensor) -> Tensor:
    """input with a lazy conjugation materialized: input itself (real tensors have none).

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.resolve_conj() is x
        True
    """
    _tensor_arg(input, "resolve_conj")
    return input


@op(method="resolve_neg", function="resolve_neg")
def resolve_neg(input: Tensor) -> Tensor:
    """input with a lazy negation materialized: input itself (rustgrad has no lazy negation).

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.resolve_neg() is x
        True
    """
    _tensor_arg(input, "resolve_neg")
    return input


@op(method="is_conj", function="is_conj")
def is_conj(input: Tensor) -> bool:
    """Whether input's conjugate bit is set: never in rustgrad (conj computes its values).

    Example::

        >>> rustgrad.tensor([1.]).is_conj()
        False
    """
    _tensor_arg(input, "is_conj")
    return False


@op(method="is_neg", function="is_neg")
def is_neg(input: Tensor) -> bool:
    """Whether input's negative bit is set: never in rustgrad.

    Example::

        >>> rustgrad.tensor([1.]).is_neg()
        False
    """
    _tensor_arg(input, "is_neg")
    return False


def _real_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g  # the engine casts it to the complex input's dtype (imaginary part 0)


def _imag_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return complex(g.new_zeros(()).expand_as(g), g)  # i g


# torch takes a real or imaginary part as a select of view_as_real: its node is SelectBackward0
REAL = node("SelectBackward0", _real_bw, variant=True)
IMAG = node("SelectBackward0", _imag_bw, variant=True)


def _remake_part(view: Tensor, base: Tensor) -> Any:
    """A real or imaginary part's history remade over its complex base's current one (after an
    in-place write to the base): an as_strided view of view_as_real(base), whose memory is the
    base's (copyslices.regenerate_view)."""
    bd, vd = base._data, view._data
    if bd.dtype.kind != "c" or vd.dtype.kind != "f" or 2 * vd.itemsize != bd.itemsize:
        return None
    pairs = bd[..., None].view(vd.dtype)  # the base's memory as (real, imaginary) pairs
    geometry = geometry_of(vd, pairs)
    if geometry is None:
        return None
    return AS_STRIDED.record(vd, (VIEW_AS_REAL.record(pairs, (base,)),), geometry)


OTHER_ITEM_SIZE.append(_remake_part)


@op(prop="real", function="real", grad_fn="SelectBackward0")
def real(input: Tensor) -> Tensor:
    """The real part of input, a view; input itself, for real tensors.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.real is x
        True
    """
    _tensor_arg(input, "real")
    if _is_complex(input):
        return REAL.record(input._data.real, (input,), None, input)
    return input


@op(prop="imag", function="imag", grad_fn="SelectBackward0")
def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex input, a view; a TypeError for real
    tensors, as torch's.

    Example::

        >>> rustgrad.tensor([1.]).imag
        Traceback (most recent call last):
            ...
        TypeError: imag is not implemented for tensors with non-complex dtypes.
    """
    _tensor_arg(input, "imag")
    if _is_complex(input):
        return IMAG.record(input._data.imag, (input,), None, input)
    raise TypeError("imag is not implemented for tensors with non-complex dtypes.")


# ---- abs and angle of complex tensors (pointwise.py's abs and angle hand them here) --------
def _nonzero_abs(z: Tensor) -> Tensor:
    """|z| with 1 where z is 0, the denominator of z's direction (z / |z| is then 0 there)."""
    a = z.abs()
    return a + (a == 0).to(a.dtype)


def _complex_abs_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    z = saved.self
    return g * (z / _nonzero_abs(z))  # g sgn(z), 0 at z = 0


def _complex_angle_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    z = saved.self
    den = _nonzero_abs(z)
    return complex(0 - z.imag, z.real) * (g / (den * den))  # g i z / |z|^2, 0 at z = 0


COMPLEX_ABS = node("AbsBackward0", _complex_abs_bw, saved=("self",), variant=True)
COMPLEX_ANGLE = node("AngleBackward0", _complex_angle_bw, saved=("self",), variant=True)


def _complex_abs(input: Tensor) -> Tensor:
    return COMPLEX_ABS.record(input._backend.abs(input._data), (input,), self=input)


def _complex_angle(input: Tensor) -> Tensor:
    return COMPLEX_ANGLE.record(input._backend.angle(input._data), (input,), self=input)


COMPLEX["abs"] = _complex_abs
COMPLEX["angle"] = _complex_angle


# ---- view_as_real, view_as_complex, complex, polar ---------------------------------------
def _view_as_real_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return view_as_complex(g)


def _view_as_complex_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return view_as_real(g)


VIEW_AS_REAL = node("ViewAsRealBackward0", _view_as_real_bw)
VIEW_AS_COMPLEX = node("ViewAsComplexBackward0", _view_as_complex_bw)


def _real_parts(xp: Any, d: Any) -> Any:
    """A complex array's (real, imag) pairs along a new last dim of 2."""
    return xp.stack((d.real, d.imag), axis=-1)


@op(function=("view_as_real", "view_as_real_copy"), grad_fn="ViewAsRealBackward0")
def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dim of 2: (real, imaginary) pairs.

    Example::

        >>> rustgrad.view_as_real(rustgrad.tensor([1 + 2j, 3 - 1j]))
        tensor([[ 1.,  2.],
                [ 3., -1.]])
    """
    _tensor_arg(input, "view_as_real")
    if not _is_complex(input):
        raise TypeError("view_as_real is only supported for complex tensors")
    return VIEW_AS_REAL.record(_real_parts(input._backend, input._data), (input,))


@op(function=("view_as_complex", "view_as_complex_copy"), grad_fn="ViewAsComplexBackward0",
    autocast=dict(cpu="fp32"))
def view_as_complex(input: Tensor) -> Tensor:
    """A real tensor whose last dim of 2 holds (real, imaginary) pairs as a complex tensor.

    Example::

        >>> rustgrad.view_as_complex(rustgrad.tensor([[1., 2.], [3., -1.]]))
        tensor([1.+2.j, 3.-1.j])
    """
    _tensor_arg(input, "view_as_complex")
    d = input._data
    if d.dtype.kind != "f":
        raise NotImplementedError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {_dtype.scalar_type_name(input.dtype)}")
    if d.dtype.itemsize < 4:
        _ = _dtype.complex32.np  # raises: rustgrad stores no complex32
    if d.ndim == 0 or d.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return VIEW_AS_COMPLEX.record(_pair(input._backend, d[..., 0], d[..., 1]), (input,))


def _pair(xp: Any, re: Any, im: Any) -> Any:
    """The complex array re + i im (arrays of one float dtype, broadcast)."""
    cdt = _dtype.from_np(re.dtype).to_complex().np
    shape = xp.broadcast_shapes(re.shape, im.shape)
    out = xp.empty(shape, dtype=cdt)
    out.real = re
    out.imag = im
    return out


def _complex_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    g = _as_complex_grad(g)
    return real_part(g), IMAG.record(g._data.imag.copy(), (g,))  # new tensors, not views


def _as_complex_grad(g: Tensor) -> Tensor:
    return g if _is_complex(g) else g.to(_dtype.from_np(g._data.dtype).to_complex())


def _polar_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    r, theta = saved.abs, saved.angle
    gr, gi = g.real, g.imag
    c, s = theta.cos(), theta.sin()
    return gr * c + gi * s, r * (gi * c - gr * s)


COMPLEX_NODE = node("ComplexBackward0", _complex_bw)
POLAR = node("PolarBackward0", _polar_bw, saved=("abs", "angle"))


def _float_pair(name: str, a: Any, b: Any, second: str) -> None:
    for pos, (x, arg) in enumerate(((a, name == "polar" and "abs" or "real"), (b, second))):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos + 1}) must be Tensor, "
                            f"not {type(x).__name__}")
    da, db = a._data, b._data
    if da.dtype.kind != "f" or db.dtype.kind != "f":
        raise NotImplementedError(
            f"Expected both inputs to be Half, Float or Double tensors but got "
            f"{_dtype.scalar_type_name(a.dtype)} and {_dtype.scalar_type_name(b.dtype)}")
    if da.dtype != db.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {_dtype.scalar_type_name(a.dtype)} but got scalar "
            f"type {_dtype.scalar_type_name(b.dtype)} for second argument")
    same_device(da, db)
    if da.dtype.itemsize < 4:
        _ = _dtype.complex32.np  # raises: rustgrad stores no complex32


@op(function="complex", grad_fn="ComplexBackward0")
def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001  (torch's name)
    """The complex tensor real + i imag (float32 gives complex64, float64 complex128).

    Args:
        real (Tensor): the real parts (float32 or float64).
        imag (Tensor): the imaginary parts, of real's dtype, broadcast with it.

    Example::

        >>> rustgrad.complex(rustgrad.tensor([1., 3.]), rustgrad.tensor([2., -1.]))
        tensor([1.+2.j, 3.-1.j])
    """
    _float_pair("complex", real, imag, "imag")
    return COMPLEX_NODE.record(_pair(real._backend, real._data, imag._data), (real, imag))


@op(function="polar", grad_fn="PolarBackward0", autocast=dict(cpu="fp32"))
def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002  (torch's names)
    """The complex tensor abs (cos(angle) + i sin(angle)).

    Args:
        abs (Tensor): the magnitudes (float32 or float64).
        angle (Tensor): the angles in radians, of abs's dtype, broadcast with it.

    Example::

        >>> rustgrad.polar(rustgrad.tensor([2.]), rustgrad.tensor([0.]))
        tensor([2.+0.j])
    """
    _float_pair("polar", abs, angle, "angle")
    xp = abs._backend
    r, t = abs._data, angle._data
    with quiet_fp(xp):
        out = _pair(xp, r * xp.cos(t), r * xp.sin(t))
    return POLAR.record(out, (abs, angle), abs=abs, angle=angle)


@op(method="cfloat")
def cfloat(self: Tensor) -> Tensor:
    """self as complex64 (imaginary parts 0 for a real tensor): self.to(torch.complex64).

    Example::

        >>> rustgrad.tensor([1., 2.]).cfloat()
        tensor([1.+0.j, 2.+0.j])
    """
    return self.to(_dtype.complex64)


@op(method="cdouble")
def cdouble(self: Tensor) -> Tensor:
    """self as complex128 (imaginary parts 0 for a real tensor): self.to(torch.complex128).

    Example::

        >>> rustgrad.tensor([1.]).cdouble()
        tensor([1.+0.j], dtype=torch.complex128)
    """
    return self.to(_dtype.complex128)


