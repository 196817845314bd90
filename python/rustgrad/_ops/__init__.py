"""Differentiable ops, one module per family: forward on arrays, backward formula beside it.

Every backward formula is written in rustgrad ops, so under `create_graph=True` it records a
graph of its own and double backward needs no second set of formulas.
"""
