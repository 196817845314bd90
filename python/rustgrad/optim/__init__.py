"""rustgrad.optim: Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax,
NAdam, RAdam, LBFGS, Rprop, ASGD, Adafactor, Muon, lr_scheduler, swa_utils and
swap_in_optimizer_params_and_state."""

from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "LBFGS", "lr_scheduler", "Rprop", "ASGD", "swa_utils", "Adafactor",
           "Muon", "swap_in_optimizer_params_and_state"]
