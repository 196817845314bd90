"""torch.utils.data._utils.collate's import path for rustgrad's collation (see ../_collate.py)."""

from .._collate import (  # noqa: F401
    collate,
    collate_float_fn,
    collate_int_fn,
    collate_numpy_array_fn,
    collate_numpy_scalar_fn,
    collate_str_fn,
    collate_tensor_fn,
    default_collate,
    default_collate_err_msg_format,
    default_collate_fn_map,
    default_convert,
)
