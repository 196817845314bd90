"""torch.special: the special functions (gammaln, digamma/psi, polygamma, multigammaln, erf,
erfc, erfcx, erfinv, i0, i0e, i1, i1e, ndtr, ndtri, log_ndtr, logit, expit, xlogy, xlog1py,
entr, sinc, round, gammainc, gammaincc, ...) under torch's names.

The ops are declared in `_ops/special.py` with `special=` and bound here; the names that spell an
op declared elsewhere under its own name (torch.special.expit is sigmoid) are assigned below:
a name is declared once, so an alias is a plain binding of the op it names.

Example::

    >>> import rustgrad.special
    >>> rustgrad.special.gammaln(rustgrad.tensor([1., 3.]))
    tensor([0.0000, 0.6931])
"""

from __future__ import annotations

from typing import List

from . import _bind
from ._ops import activation as _activation
from ._ops import pointwise as _pointwise
from ._ops import reduce as _reduce

# torch.special's names of ops rustgrad declares under their own names
erf = _pointwise.erf
exp2 = _pointwise.exp2
expm1 = _pointwise.expm1
log1p = _pointwise.log1p
expit = _activation.sigmoid
softmax = _activation.softmax
log_softmax = _activation.log_softmax
logsumexp = _reduce.logsumexp

__all__: List[str] = ["erf", "exp2", "expit", "expm1", "log1p", "log_softmax", "logsumexp",
                      "softmax"]
__all__ += _bind.bind_namespace(globals(), "rustgrad.special", "special")
