"""Helpers torch keeps in ``torch.nn.modules.utils`` that scripts import by that path."""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["consume_prefix_in_state_dict_if_present"]


def consume_prefix_in_state_dict_if_present(state_dict: Dict[str, Any], prefix: str) -> None:
    """Strips ``prefix`` from the keys of ``state_dict`` that start with it, in place (torch's
    helper for loading a ``DistributedDataParallel`` state_dict, whose keys start with
    ``"module."``, into the plain model). A renamed key moves to the end of the dict, as in
    torch; the keys of a ``_metadata`` attribute, if any, are renamed too (``"module"``
    becomes ``""``).

    Args:
        state_dict (dict): the state_dict, changed in place.
        prefix (str): the prefix, e.g. ``"module."``.

    Example::

        >>> from rustgrad.nn.modules.utils import consume_prefix_in_state_dict_if_present
        >>> sd = {"module.weight": 1, "module.bias": 2}
        >>> consume_prefix_in_state_dict_if_present(sd, "module.")
        >>> sd
        {'weight': 1, 'bias': 2}
    """
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    bare = prefix.replace(".", "")
    for key in list(metadata):
        # "" is the wrapper's own entry and stays; "module" and "module.*" are the model's
        if key and (key == bare or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)
