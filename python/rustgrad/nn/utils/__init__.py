"""rustgrad.nn.utils: gradient clipping, parameter/vector conversion, parametrizations
(parametrize, parametrizations), stateless calls (stateless) and the legacy
hook forms of weight_norm and spectral_norm, as torch.nn.utils (prune is imported on demand,
as torch's: `import rustgrad.nn.utils.prune as prune`)."""

from . import parametrizations, parametrize, rnn, stateless
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm",
    "parameters_to_vector", "vector_to_parameters", "rnn", "parametrizations", "parametrize",
    "stateless", "spectral_norm", "remove_spectral_norm", "weight_norm", "remove_weight_norm",
]
