"""``rustgrad.distributed.elastic``: the parts of torch.distributed.elastic that training
scripts import (``multiprocessing.errors.record``); rustgrad's launcher is
``python -m rustgrad.distributed.run``."""
