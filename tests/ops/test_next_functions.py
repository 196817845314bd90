"""next_functions as torch's: a Python-scalar operand of add/sub/mul/div/where is an input slot
without an edge, `(None, 0)`; pow/rsub/clamp take scalars as arguments and have no such slot."""

import pytest

from ..parity import oracle_for, rustgrad_on

PROGRAMS = ["x+1", "1+x", "x-1", "1-x", "x*2", "2*x", "x/2", "2/x", "x**2", "2**x",
            "x.add(1, alpha=2)", "m.where(x>0, x, 0.)", "m.where(x>0, 0., x)", "x.clamp(0, 1)",
            "x*x", "x.exp()*3+1"]


def _shape(lib, program):
    x = lib.ones(2, requires_grad=True)
    y = eval(program, {"x": x, "m": lib})
    out, stack = [], [(y.grad_fn, 0)]
    while stack:
        fn, depth = stack.pop()
        if fn is None:
            out.append((depth, None))
            continue
        out.append((depth, fn.name()))
        stack.extend((f, depth + 1) for f, _ in fn.next_functions)
    y.sum().backward()
    return out, x.grad.tolist()


@pytest.mark.parametrize("program", PROGRAMS)
def test_next_functions_scalar_operands_match_torch(program, device):
    got, want = _shape(rustgrad_on(device), program), _shape(oracle_for(device), program)
    assert got[0] == want[0]
    assert got[1] == pytest.approx(want[1], rel=1e-6)
