"""The CPU backend: NumPy. Exposes the array API the ops use plus device bookkeeping."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy import *  # noqa: F403  (the backend namespace is numpy's)

DEVICE_TYPE = "cpu"
DEVICE_INDEX = 0  # storage accounting slot (see rust/core/src/storage.rs)


def device_of(array: Any) -> Any:
    from . import CPU

    return CPU


def storage_slot(array: Any) -> int:
    return 0


def to_numpy(array: Any) -> np.ndarray:
    return array


def from_numpy(array: np.ndarray, index: Any = None) -> np.ndarray:
    return array


def add_at(target: Any, index: Any, values: Any) -> None:
    np.add.at(target, index, values)
