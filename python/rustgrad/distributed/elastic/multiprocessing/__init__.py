"""``rustgrad.distributed.elastic.multiprocessing``: holds ``errors`` (``record``)."""
