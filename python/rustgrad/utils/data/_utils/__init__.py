"""torch.utils.data._utils's import paths (`_utils.collate`, `_utils.worker`), which some
programs import from directly."""

from . import collate, worker  # noqa: F401
