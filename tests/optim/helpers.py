"""The optim tests share the nn tests' helpers: identical models in both libraries."""

from ..nn.helpers import *  # noqa: F403
from ..nn.helpers import assert_close, assert_states_close, cnn, copy_state, mlp, twin  # noqa: F401
