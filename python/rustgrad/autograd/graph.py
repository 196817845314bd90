"""rustgrad.autograd.graph: the Node type of grad_fn objects."""

from __future__ import annotations

from .. import _core

Node = _core.Node

__all__ = ["Node"]
