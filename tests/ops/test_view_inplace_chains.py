"""Property: random chains of view and in-place ops give torch's values, versions and gradients.

Each drawn program starts from `b = a * 1` (a non-leaf, so in-place ops are allowed), takes views
of views, writes through them in place (torch rewrites the base's history: CopySlices), mixes in
out-of-place ops, and ends in a weighted sum whose gradient with respect to `a` and `c` (a second
leaf used by some in-place ops) is compared with torch's.
"""

import numpy as np
import rustgrad
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VIEWS = [
    ("row", lambda t: t[1]),
    ("rows", lambda t: t[1:3]),
    ("cols", lambda t: t[:, ::2]),
    ("transpose", lambda t: t.transpose(0, 1)),
    ("unsqueeze", lambda t: t.unsqueeze(0)),
    ("view", lambda t: t.view(-1)),
    ("expand_free", lambda t: t[..., :2]),
]

INPLACE = [
    ("add_", lambda t, c: t.add_(0.5)),
    ("mul_", lambda t, c: t.mul_(1.5)),
    ("sub_tensor", lambda t, c: t.sub_(c.reshape(-1)[: t.shape[-1]] if t.dim() else c.sum())),
    ("mul_tensor", lambda t, c: t.mul_(c.reshape(-1)[: t.shape[-1]] if t.dim() else c.sum())),
    ("clamp_", lambda t, c: t.clamp_(-1.0, 1.0)),
    ("zero_", lambda t, c: t.zero_()),
    ("fill_", lambda t, c: t.fill_(2.0)),
    ("setitem", lambda t, c: t.__setitem__(0, 3.0) if t.dim() else t.fill_(3.0)),
    ("iadd", lambda t, c: t.__iadd__(1.0)),
]


def _run(lib, program, a0, c0, w0):
    a = lib.tensor(a0, dtype=lib.float64, requires_grad=True)
    c = lib.tensor(c0, dtype=lib.float64, requires_grad=True)
    b = a * 1
    cur = b
    for kind, index in program:
        if kind == "view":
            name, fn = VIEWS[index % len(VIEWS)]
            if name == "view" and not cur.is_contiguous():
                continue
            if name in ("row", "rows", "cols") and (cur.dim() < 2 or cur.shape[0] < 3):
                continue
            if name == "transpose" and cur.dim() < 2:
                continue
            cur = fn(cur)
        elif kind == "inplace":
            _, fn = INPLACE[index % len(INPLACE)]
            fn(cur, c)
        elif kind == "reset":
            cur = b
    loss = (b * lib.tensor(w0, dtype=lib.float64)).sum()
    loss.backward()
    grads = [None if x.grad is None else x.grad.detach().numpy().copy() for x in (a, c)]
    return b.detach().numpy().copy(), b._version, grads


step = st.tuples(st.sampled_from(["view", "inplace", "inplace", "reset"]),
                 st.integers(0, 20))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=st.lists(step, min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_property_view_inplace_chains_match_torch(program, seed):
    rng = np.random.default_rng(seed)
    a0 = rng.standard_normal((4, 5))
    c0 = rng.standard_normal((4, 5))
    w0 = rng.standard_normal((4, 5))
    want = _run(torch, program, a0, c0, w0)
    got = _run(rustgrad, program, a0, c0, w0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    assert got[1] == want[1], (got[1], want[1])
    for g, w in zip(got[2], want[2]):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _no_grad_view_then_inplace(lib, make_base, write):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = make_base(a)
    with lib.no_grad():
        v = base[:2]
    before = (a.detach().numpy().copy(), a._version)
    try:
        write(v)
    except RuntimeError as e:
        return type(e), str(e), before, (a.detach().numpy().copy(), a._version)
    return None, "", before, (a.detach().numpy().copy(), a._version)


def test_view_created_under_no_grad_modified_in_grad_mode_raises_like_torch():
    phrase = "created in no_grad mode and is being modified inplace with grad mode enabled"
    for make_base in (lambda a: a, lambda a: a * 1):
        for write in (lambda v: v.mul_(2), lambda v: v.__setitem__(0, 1.0), lambda v: v.zero_()):
            want = _no_grad_view_then_inplace(torch, make_base, write)
            got = _no_grad_view_then_inplace(rustgrad, make_base, write)
            assert want[0] is RuntimeError and phrase in want[1]
            assert got[0] is RuntimeError and phrase in got[1], got[1]
            np.testing.assert_array_equal(got[3][0], got[2][0])  # nothing was written
            assert got[3][1] == got[2][1]
