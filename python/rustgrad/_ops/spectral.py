"""The short-time Fourier transform (stft) and its inverse (istft), composed, as torch's, from
differentiable ops so that their gradients come from the parts:

stft: the signal padded by n_fft // 2 at both ends when `center` (ViewBackward0, F.pad's node,
ViewBackward0), cut into frames hop_length apart (AsStridedBackward0), multiplied by the window
(MulBackward0; the window is zero-padded to n_fft at both ends when win_length < n_fft), each
frame transformed (FftR2CBackward0 or FftC2CBackward0, scaled by 1/sqrt(n_fft) when
`normalized`) and the result laid out as (batch?, frequency, frame) (TransposeBackward1).

istft: the frames' inverse transforms (FftC2RBackward0 or FftC2CBackward0), multiplied by the
window, overlap-added (UnfoldBackwardBackward0), cut to the signal (SliceBackward0) and divided
by the overlap-added squared window (DivBackward0); a window envelope that vanishes somewhere
(torch's NOLA check) is refused."""

from __future__ import annotations

import warnings
from typing import Optional

from .. import _creation, _dtype, _warn_once
from .._tensor import Tensor
from ._declare import op
from ._node import node
from .complex_views import view_as_complex, view_as_real
from .conv import pad
from .fft import _BY_N, _BY_SQRT_N, _NONE, _c2c, _c2r, _r2c
from .views import _unfold_grad, as_strided, narrow

# torch names the last node of a 1-d input's stft `squeeze_(0)`'s: SqueezeBackward4, a name
# linalg.py's batched matmul owns (its spec gives the name's saved getters)
_SQUEEZE_INPLACE = node("SqueezeBackward4", lambda g, saved, shape: g.reshape(shape),
                        variant=True)

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known "
              "to cause spectral leakage. Other windows such as torch.hann_window or "
              "torch.hamming_window are recommended to reduce spectral leakage.To suppress this "
              "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
              "device=<device>)`.")
_NO_INVERSE_WINDOW = ("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.")
_REAL_OUTPUT = ("stft with return_complex=False is deprecated. In a future pytorch release, "
                "stft will return complex tensors for all inputs, and return_complex=False will "
                "raise an error.\nNote: you can still call torch.view_as_real on the complex "
                "output to recover the old return format.")


def _warn(key: str, message: str) -> None:
    if _warn_once.due(key):
        warnings.warn(message, UserWarning, stacklevel=3)


def _type_name(t: Tensor) -> str:
    """The tensor's type as torch's stft/istft messages print it."""
    dt = t.dtype
    cuda = t.device.type != "cpu"
    if dt.is_complex:
        kind = "Float" if dt.itemsize == 8 else "Double"
        return f"{'CUDA' if cuda else 'CPU'}Complex{kind}Type"
    return f"torch.{'cuda.' if cuda else ''}{_dtype.LEGACY_NAMES[dt.name]}"


def _flag(v: Optional[bool]) -> str:
    return "None" if v is None else str(int(bool(v)))


def _shape(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _window_text(window: Optional[Tensor]) -> str:
    return "None" if window is None else f"{_type_name(window)}{{{_shape(window)}}}"


def _is_complex(t: Optional[Tensor]) -> bool:
    return t is not None and t._data.dtype.kind == "c"


def _full_window(window: Optional[Tensor], win_length: int, n_fft: int, like: Tensor
                 ) -> Optional[Tensor]:
    """The window as n_fft entries (zero-padded at both ends), or None for a rectangular
    window of n_fft entries."""
    if window is None:
        if win_length == n_fft:
            return None
        window = _creation.ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = pad(window, [left, n_fft - win_length - left])
    return window


def _too_few_dims(cdim: int) -> IndexError:
    # torch reads size(-3) of the input's real view, which has one dim more than the input
    nd = cdim + 1
    return IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                      "but got -3)")


@op(method="stft", function="stft",
    grad_fn=("TransposeBackward1", "SqueezeBackward4", "ViewAsRealBackward0"),
    autocast=dict(cpu="fp32"))
def stft(input: Tensor, n_fft: int, hop_length: Optional[int] = None,
         win_length: Optional[int] = None, window: Optional[Tensor] = None,
         center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: Optional[bool] = None, return_complex: Optional[bool] = None,
         align_to_window: Optional[bool] = None) -> Tensor:
    """The short-time Fourier transform of input: the transforms of its frames, n_fft entries
    hop_length apart, each multiplied by window.

    Args:
        input (Tensor): the signal, 1-d (L) or batched 2-d (B, L), real or complex.
        n_fft (int): the size of each frame's transform.
        hop_length (int, optional): the distance between frames. Default: ``n_fft // 4``.
        win_length (int, optional): the window's size (at most n_fft; the window is
            zero-padded to n_fft at both ends). Default: ``n_fft``.
        window (Tensor, optional): the 1-d window of win_length entries. Default: ones.
        center (bool, optional): whether input is padded by n_fft // 2 at both ends, so that
            frame t is centred at t * hop_length. Default: ``True``.
        pad_mode (str, optional): F.pad's mode for that padding. Default: ``"reflect"``.
        normalized (bool, optional): whether the transforms are scaled by 1/sqrt(n_fft).
            Default: ``False``.
        onesided (bool, optional): whether only the n_fft // 2 + 1 non-negative frequencies
            are returned. Default: ``True`` for a real input and window.
        return_complex (bool, optional): a complex result (``False``, deprecated: its real
            view, with a last dim of 2). Required for a real input and window.
        align_to_window (bool, optional): with ``center=False``, whether frames start where
            their (padded) window starts.

    Returns (B?, N, T): N frequencies (n_fft // 2 + 1 when onesided, else n_fft) by T frames.

    Example::

        >>> x = rustgrad.arange(8.)
        >>> rustgrad.stft(x, 4, hop_length=2, window=rustgrad.ones(4), return_complex=True).shape
        torch.Size([3, 5])
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    x = input
    if center:
        nd = x.dim()
        x = x.view([1] * (3 - nd) + list(x.shape))
        x = pad(x, [n_fft // 2, n_fft // 2], pad_mode)
        x = x.view(list(x.shape)[-nd:] if nd else list(x.shape))
    if return_complex is None:
        if not (_is_complex(x) or _is_complex(window)):
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    where = (f"stft({_type_name(x)}{_shape(x)}, n_fft={n_fft}, hop_length={hop}, "
             f"win_length={win}, window={_window_text(window)}, normalized={_flag(normalized)}, "
             f"onesided={_flag(onesided)}, return_complex={_flag(return_complex)}, "
             f"align_to_window={_flag(align_to_window)}) : ")
    kind = x._data.dtype.kind
    if kind not in "fc":
        raise NotImplementedError(where + "expected a tensor of floating point or complex values")
    nd = x.dim()
    if nd not in (1, 2):
        raise RuntimeError(where + "expected a 1D or 2D tensor")
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(where + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(where + f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(where + f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(where + "expected a 1D window tensor of size equal to "
                           f"win_length={win}, but got window with size {_shape(window)}")
    complex_in = kind == "c" or _is_complex(window)
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if x._data.dtype.itemsize < 4:
        raise NotImplementedError(
            f"MKL FFT doesn't support tensors of type: {_dtype.scalar_type_name(x.dtype)}")
    if window is None:
        _warn("stft_window", _NO_WINDOW)
    full = _full_window(window, win, n_fft, x)
    if align_to_window and win < n_fft:
        left = (n_fft - win) // 2
        x = pad(x, [left, n_fft - win - left])
        length = x.shape[-1]
    if nd == 1:
        x = x.unsqueeze(0)
    frames = 1 + (length - n_fft) // hop
    s0, s1 = x.stride()
    y = as_strided(x, (x.shape[0], frames, n_fft), (s0, hop * s1, s1), x.storage_offset())
    if full is not None:
        y = y * full
    scale = _BY_SQRT_N if normalized else _NONE
    if y._data.dtype.kind == "c":
        out = _c2c(y, (2,), scale, True)
    else:
        out = _r2c(y, (2,), scale, bool(onesided))
    out.transpose_(1, 2)
    if nd == 1:
        shape = tuple(out.shape)
        out = _SQUEEZE_INPLACE.record(out._data.reshape(shape[1:]), (out,), shape)
    if not return_complex:
        _warn("stft_real", _REAL_OUTPUT)
        out = view_as_real(out)
    return out


@op(method="istft", function="istft",
    grad_fn=("DivBackward0", "ConstantPadNdBackward0", "SqueezeBackward1"))
def istft(input: Tensor, n_fft: int, hop_length: Optional[int] = None,
          win_length: Optional[int] = None, window: Optional[Tensor] = None,
          center: bool = True, normalized: bool = False, onesided: Optional[bool] = None,
          length: Optional[int] = None, return_complex: bool = False) -> Tensor:
    """The inverse of stft: the signal whose short-time transform input is, by overlap-adding
    the frames' inverse transforms and dividing by the overlap-added squared window.

    Args:
        input (Tensor): the complex transform, (B?, N, T) as stft returns it.
        n_fft (int): the size of each frame's transform.
        hop_length (int, optional): the distance between frames. Default: ``n_fft // 4``.
        win_length (int, optional): the window's size. Default: ``n_fft``.
        window (Tensor, optional): the 1-d window of win_length entries. Default: ones.
        center (bool, optional): whether the signal was padded by n_fft // 2 at both ends.
            Default: ``True``.
        normalized (bool, optional): whether the transform was scaled by 1/sqrt(n_fft).
            Default: ``False``.
        onesided (bool, optional): whether input holds the non-negative frequencies only.
            Default: ``True`` unless input has n_fft frequencies.
        length (int, optional): the signal's length: the result is cut or zero-padded to it.
        return_complex (bool, optional): a complex result (a two-sided input is then
            required). Default: ``False``.

    Example::

        >>> x = rustgrad.arange(8.)
        >>> w = rustgrad.hann_window(4)
        >>> s = rustgrad.stft(x, 4, hop_length=1, window=w, return_complex=True)
        >>> rustgrad.allclose(rustgrad.istft(s, 4, hop_length=1, window=w, length=8), x)
        True
    """
    if input._data.dtype.kind != "c":
        raise TypeError("istft requires a complex-valued input tensor matching the output from "
                        "stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    where = (f"istft({_type_name(input)}{_shape(input)}, n_fft={n_fft}, hop_length={hop}, "
             f"win_length={win}, window={_window_text(window)}, center={_flag(center)}, "
             f"normalized={_flag(normalized)}, onesided={_flag(onesided)}, "
             f"length={'None' if length is None else int(length)}, "
             f"return_complex={_flag(return_complex)}) ")
    if input.numel() == 0:
        raise RuntimeError(where + ": input tensor cannot be empty.")
    cdim = input.dim()
    if cdim < 2:
        raise _too_few_dims(cdim)
    if cdim not in (2, 3):
        raise RuntimeError(where + f": expected a tensor with 3 or 4 dimensions, but got {cdim + 1}")
    x = input.unsqueeze(0) if cdim == 2 else input
    bins, frames = x.shape[1], x.shape[2]
    if onesided is None:
        onesided = bins != n_fft
    if onesided:
        if n_fft // 2 + 1 != bins:
            raise RuntimeError(where + ": expected the frequency dimension (3rd to the last) of "
                               "the input tensor to match n_fft / 2 + 1 when onesided=True, but "
                               f"got {bins}")
    elif n_fft != bins:
        raise RuntimeError(where + ": expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {bins}")
    if not 0 < hop <= win:
        raise RuntimeError(where + ": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(where + ": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(where + ": Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    if _is_complex(window) and not return_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    if return_complex and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if window is None:
        _warn("istft_window", _NO_INVERSE_WINDOW)
    full = _full_window(window, win, n_fft, x)
    if full is None:
        full = _creation.ones(n_fft, dtype=x.dtype.to_real(), device=x.device)
    # (B, T, N), through the real view as torch's graph
    y = view_as_complex(view_as_real(x).transpose(1, 2))
    if return_complex:
        y = _c2c(y, (2,), _BY_SQRT_N if normalized else _BY_N, False)
    else:
        if not onesided:
            y = narrow(y, 2, 0, n_fft // 2 + 1)
        y = _c2r(y, (2,), _BY_SQRT_N if normalized else _BY_N, n_fft)
    y = y * full
    total = n_fft + hop * (frames - 1)
    batch = y.shape[0]
    y = _unfold_grad(y, (batch, total), 1, n_fft, hop)
    squared = full.pow(2).expand(1, frames, n_fft)
    envelope = _unfold_grad(squared, (1, total), 1, n_fft, hop)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    else:
        end = total - n_fft // 2 if center else total
    end = min(end, total)
    y = _slice(y, start, end)
    envelope = _slice(envelope, start, end)
    if envelope.numel() == 0:
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == "
                           "0. Specify the reduction dim with the 'dim' argument.")
    if bool((envelope.detach().abs().min() < 1e-11).item()):
        raise RuntimeError(where + "window overlap add min: 1")
    y = y / envelope
    if length is not None and y.shape[1] < int(length):
        y = pad(y, [0, int(length) - y.shape[1]])
    if cdim == 2:
        y = y.squeeze(0)
    return y


def _slice(t: Tensor, start: int, end: int) -> Tensor:
    """t[:, start:end] (SliceBackward0), an empty result where end <= start."""
    return t[:, start:max(end, start)]
