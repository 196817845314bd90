"""Programs of the kinds torch users run (training loops, custom Functions, hooks, GPT, GAN, DQN,
checkpoints, LBFGS, higher-order gradients), each run once with `torch` and once with `rustgrad`
bound as the library.

Every program is `def program(torch) -> dict`: weights come from a seeded NumPy RNG (module
constructors draw from each library's own generator, so every parameter is overwritten), and the
returned observables (losses per step, final parameters, gradients, flags, error captures) plus
everything printed must agree, floats within a tolerance.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import warnings
from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import torch as real_torch

PROGRAMS: list[Callable[[ModuleType], dict]] = []


def program(fn: Callable[[ModuleType], dict]) -> Callable[[ModuleType], dict]:
    PROGRAMS.append(fn)
    return fn


# ---------------------------------------------------------------------------------------------
# helpers shared by the programs


def seed_params(torch: ModuleType, model: Any, seed: int, scale: float = 0.3) -> Any:
    """Overwrite every parameter with values from a seeded NumPy RNG (same in both libraries)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            values = rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)
            p.copy_(torch.from_numpy(values))
    return model


def data(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def params_of(model: Any) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def grads_of(model: Any) -> dict:
    return {name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}


def err(fn: Callable[[], Any]) -> tuple[str, str] | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type and message are what is compared)
        return (type(e).__name__, str(e))
    return None


def err_head(fn: Callable[[], Any], words: int = 12) -> tuple[str, str] | None:
    """The exception type and the message's first words (tails name library-specific types)."""
    e = err(fn)
    return None if e is None else (e[0], " ".join(e[1].split()[:words]))


# ---------------------------------------------------------------------------------------------
# comparison


def plain(value: Any, lib: ModuleType) -> Any:
    if isinstance(value, lib.Tensor):
        return ("tensor", str(value.dtype).split(".")[-1], np.array(value.detach().numpy()))
    if isinstance(value, dict):
        return {k: plain(v, lib) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, lib) for v in value]
    return value


def assert_same(expected: Any, got: Any, path: str, rtol: float, atol: float) -> None:
    if isinstance(expected, dict):
        assert isinstance(got, dict), path
        assert list(expected) == list(got), f"{path}: keys {list(expected)} vs {list(got)}"
        for k in expected:
            assert_same(expected[k], got[k], f"{path}.{k}", rtol, atol)
    elif isinstance(expected, tuple) and expected[:1] == ("tensor",):
        assert isinstance(got, tuple) and got[0] == "tensor", f"{path}: {got!r} is no tensor"
        assert expected[1] == got[1], f"{path}: dtype {expected[1]} vs {got[1]}"
        assert expected[2].shape == got[2].shape, f"{path}: shape {expected[2].shape} vs {got[2].shape}"
        np.testing.assert_allclose(got[2], expected[2], rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), f"{path}: {expected!r} vs {got!r}"
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, f"{path}[{i}]", rtol, atol)
    elif isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(got, (float, int)), f"{path}: {got!r}"
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=path)
    else:
        assert expected == got, f"{path}: {expected!r} vs {got!r}"


def run_program(fn: Callable[[ModuleType], dict], lib: ModuleType) -> tuple[Any, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fn(lib)
    return plain(result, lib), out.getvalue()


# ---------------------------------------------------------------------------------------------
# autograd walkthroughs


@program
def autograd_walkthrough(torch):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * w
    y.retain_grad()
    z = y.exp().sum()
    print(x.is_leaf, y.is_leaf, z.grad_fn.name(), y.grad_fn.name())
    print([f[0].name() if f[0] is not None else None for f in z.grad_fn.next_functions])
    z.backward()
    print(x.grad)
    print(y.grad)

    d = y.detach()
    print(d.requires_grad, d.is_leaf, d.grad_fn)
    with torch.no_grad():
        u = x * 2
    print(u.requires_grad, torch.is_grad_enabled())

    # an in-place op on a tensor saved for backward bumps its version counter
    a = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
    s = a.sigmoid()
    v0 = s._version
    s.mul_(2)
    stale = err_head(lambda: s.sum().backward())

    # in-place on a leaf that requires grad
    leaf_inplace = err(lambda: a.add_(1))

    # backward twice without retain_graph
    b = torch.tensor([2.0], requires_grad=True)
    c = (b * b).sum()
    c.backward()
    twice = err_head(lambda: c.backward(), 10)

    # gradients accumulate until zeroed
    g = torch.tensor([1.0, -1.0], requires_grad=True)
    for _ in range(3):
        (g ** 2).sum().backward()
    acc = g.grad.clone()
    g.grad.zero_()

    with torch.enable_grad():
        on = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    off = (g * 2).requires_grad
    torch.set_grad_enabled(True)
    return {"x_grad": x.grad, "y_grad": y.grad, "w_grad": w.grad, "version": [v0, s._version],
            "stale": stale, "leaf_inplace": leaf_inplace, "twice": twice, "acc": acc,
            "on": on, "off": off, "d": d}


@program
def custom_function(torch):
    log = True

    class ScaledTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = torch.tanh(x) * scale
            ctx.save_for_backward(x, scale)
            return y

        @staticmethod
        def backward(ctx, grad_out):
            x, scale = ctx.saved_tensors
            if log:
                print("needs", ctx.needs_input_grad)
            dx = dscale = None
            if ctx.needs_input_grad[0]:
                dx = grad_out * scale * (1 - torch.tanh(x) ** 2)
            if ctx.needs_input_grad[1]:
                dscale = (grad_out * torch.tanh(x)).sum().reshape(scale.shape)
            return dx, dscale

    class SortWithIndex(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, idx = torch.sort(x)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return values, idx

        @staticmethod
        def backward(ctx, grad_values, grad_idx):
            (idx,) = ctx.saved_tensors
            grad = torch.zeros_like(grad_values)
            grad.scatter_(0, idx, grad_values)
            return grad

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = torch.tensor([0.3, -1.2, 0.7], requires_grad=True)
    scale = torch.tensor([2.0], requires_grad=True)
    y = ScaledTanh.apply(x, scale)
    print(type(y.grad_fn).__name__.endswith("Backward"), y.requires_grad)
    y.sum().backward()

    fixed = torch.tensor([2.0])
    x2 = torch.tensor([0.5, 1.5], requires_grad=True)
    ScaledTanh.apply(x2, fixed).sum().backward()

    v = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, idx = SortWithIndex.apply(v)
    print(values.requires_grad, idx.requires_grad, idx.dtype)
    (values * torch.tensor([1.0, 10.0, 100.0])).sum().backward()

    c = torch.tensor([1.0, 2.0], requires_grad=True)
    out = Cube.apply(c).sum()
    (gc,) = torch.autograd.grad(out, c, create_graph=True)
    twice = err_head(lambda: gc.sum().backward(), 8)

    log = False  # gradcheck's number of backward calls is an implementation detail
    check = torch.autograd.gradcheck(
        ScaledTanh.apply,
        (torch.tensor([0.2, -0.4], dtype=torch.float64, requires_grad=True),
         torch.tensor([1.5], dtype=torch.float64, requires_grad=True)))
    return {"y": y, "x_grad": x.grad, "scale_grad": scale.grad, "x2_grad": x2.grad,
            "v_grad": v.grad, "idx": idx, "gc": gc.detach(), "twice": twice, "check": check}


@program
def hooks(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    seed_params(torch, model, 1)
    log = []

    def pre_hook(module, args):
        log.append(("pre", type(module).__name__, tuple(args[0].shape)))
        return (args[0] * 2,)

    def fwd_hook(module, args, output):
        log.append(("fwd", type(module).__name__))
        return output + 1

    def bwd_hook(module, grad_input, grad_output):
        log.append(("bwd", type(module).__name__, [None if g is None else tuple(g.shape)
                                                   for g in grad_input]))

    def tensor_hook(grad):
        log.append(("tensor", tuple(grad.shape)))
        return grad * 0.5

    post_acc = []
    h1 = model[0].register_forward_pre_hook(pre_hook)
    h2 = model[2].register_forward_hook(fwd_hook)
    h3 = model[2].register_full_backward_hook(bwd_hook)
    w = model[0].weight
    h4 = w.register_hook(tensor_hook)
    h5 = w.register_post_accumulate_grad_hook(lambda p: post_acc.append(p.grad.clone()))

    x = torch.from_numpy(data((5, 3), 2))
    out = model(x)
    out.pow(2).mean().backward()
    g1 = grads_of(model)
    for h in (h1, h2, h3, h4, h5):
        h.remove()
    model.zero_grad()
    out2 = model(x)
    out2.pow(2).mean().backward()
    return {"log": log, "out": out, "grads": g1, "post_acc": post_acc, "out2": out2,
            "grads_after_remove": grads_of(model)}


# ---------------------------------------------------------------------------------------------
# training loops


@program
def dataloader_training(torch):
    nn = torch.nn
    x = torch.from_numpy(data((20, 3), 3))
    true_w = torch.tensor([[1.5], [-2.0], [0.5]])
    y = x @ true_w + 0.3
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=6,
                                         shuffle=False)
    model = seed_params(torch, nn.Linear(3, 1), 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loss_fn = nn.MSELoss()
    losses, lrs, sizes = [], [], []
    for epoch in range(4):
        for xb, yb in loader:
            sizes.append(len(xb))
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
        lrs.append(sched.get_last_lr())
        print(f"epoch {epoch} loss {losses[-1]:.4f}")
    return {"losses": losses, "lrs": lrs, "sizes": sizes, "params": params_of(model),
            "batches": len(loader)}


@program
def cnn_classifier(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 6, 3)
            self.pool = nn.MaxPool2d(2)
            self.drop = nn.Dropout(0.5)
            self.fc = nn.Linear(6 * 3 * 3, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.bn1(self.conv1(x))))
            x = F.relu(self.conv2(x))
            x = torch.flatten(x, 1)
            return self.fc(self.drop(x))

    model = seed_params(torch, Net(), 5)
    images = torch.from_numpy(data((6, 1, 10, 10), 6))
    labels = torch.tensor([0, 1, 2, 1, 0, 2])
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5, weight_decay=1e-3)
    losses = []
    model.train()
    model.drop.eval()  # random masks differ across libraries; everything else trains for real
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(images)
    acc = (logits.argmax(dim=1) == labels).float().mean()
    return {"losses": losses, "params": params_of(model), "running_mean": model.bn1.running_mean,
            "running_var": model.bn1.running_var, "tracked": model.bn1.num_batches_tracked,
            "logits": logits, "acc": acc, "training": [m.training for m in model.modules()]}


@program
def lstm_packed(torch):
    nn = torch.nn
    rnn_utils = torch.nn.utils.rnn
    lstm = seed_params(torch, nn.LSTM(3, 4, num_layers=2, batch_first=True), 7)
    head = seed_params(torch, nn.Linear(4, 1), 8)
    lengths = torch.tensor([2, 5, 3])
    padded = torch.from_numpy(data((3, 5, 3), 9))
    for i, n in enumerate([2, 5, 3]):
        padded[i, n:] = 0
    packed = rnn_utils.pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
    print(packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    out_packed, (h_n, c_n) = lstm(packed)
    out, out_lengths = rnn_utils.pad_packed_sequence(out_packed, batch_first=True)
    pred = head(h_n[-1]).squeeze(1)
    loss = ((pred - torch.tensor([0.5, -0.5, 1.0])) ** 2).mean() + out.abs().mean()
    loss.backward()

    gru = seed_params(torch, nn.GRU(3, 2), 10)
    seqs = [torch.from_numpy(data((n, 3), 20 + n)) for n in (4, 2, 1)]
    packed_gru = rnn_utils.pack_sequence(seqs)
    gout, gh = gru(packed_gru)
    return {"packed_data": packed.data, "out": out, "out_lengths": out_lengths, "h_n": h_n,
            "c_n": c_n, "loss": loss, "lstm_grads": grads_of(lstm), "head_grads": grads_of(head),
            "gru_data": gout.data, "gru_h": gh}


class _GPTParts:
    """Builds a tiny GPT from a library; attention is chosen per program."""

    @staticmethod
    def build(torch, vocab, d, heads, block, layers, use_mha):
        nn = torch.nn
        F = torch.nn.functional

        class SelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                # no qkv bias: the key bias has an exactly zero gradient, and Adam would turn
                # its rounding noise into visible steps
                self.qkv = nn.Linear(d, 3 * d, bias=False)
                self.proj = nn.Linear(d, d)

            def forward(self, x):
                b, t, c = x.shape
                q, k, v = self.qkv(x).split(d, dim=2)
                q = q.view(b, t, heads, c // heads).transpose(1, 2)
                k = k.view(b, t, heads, c // heads).transpose(1, 2)
                v = v.view(b, t, heads, c // heads).transpose(1, 2)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

        class MHA(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(d, heads, bias=False, batch_first=True)

            def forward(self, x):
                t = x.shape[1]
                mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
                y, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
                return y

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1 = nn.LayerNorm(d)
                self.attn = MHA() if use_mha else SelfAttention()
                self.ln2 = nn.LayerNorm(d)
                self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

            def forward(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(vocab, d)
                self.pos = nn.Embedding(block, d)
                self.blocks = nn.ModuleList([Block() for _ in range(layers)])
                self.ln_f = nn.LayerNorm(d)
                self.head = nn.Linear(d, vocab, bias=False)

            def forward(self, idx, targets=None):
                t = idx.shape[1]
                x = self.tok(idx) + self.pos(torch.arange(t))
                for blk in self.blocks:
                    x = blk(x)
                logits = self.head(self.ln_f(x))
                loss = None
                if targets is not None:
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
                return logits, loss

        return GPT()


def _train_gpt(torch, use_mha):
    vocab, block = 11, 6
    model = _GPTParts.build(torch, vocab, d=8, heads=2, block=block, layers=2, use_mha=use_mha)
    seed_params(torch, model, 11)
    tokens = np.random.default_rng(12).integers(0, vocab, size=(4, block + 1))
    idx = torch.from_numpy(tokens[:, :-1].copy())
    targets = torch.from_numpy(tokens[:, 1:].copy())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95))
    losses, norms = [], []
    for _ in range(4):
        _, loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5).item())
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits, _ = model(idx[:1, :3])
        nxt = torch.argmax(logits[:, -1, :], dim=-1)
    return {"losses": losses, "norms": norms, "params": params_of(model), "next": nxt}


@program
def gpt_sdpa(torch):
    return _train_gpt(torch, use_mha=False)


@program
def gpt_multihead_attention(torch):
    return _train_gpt(torch, use_mha=True)


@program
def transformer_encoder_classifier(torch):
    nn = torch.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(9, 8, padding_idx=0)
            layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                               batch_first=True, bias=False)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.out = nn.Linear(8, 2)

        def forward(self, tokens):
            pad = tokens == 0
            h = self.encoder(self.embed(tokens), src_key_padding_mask=pad)
            keep = (~pad).unsqueeze(-1).float()
            pooled = (h * keep).sum(1) / keep.sum(1)
            return self.out(pooled)

    model = seed_params(torch, Classifier(), 13)
    tokens = torch.tensor([[3, 4, 5, 0], [1, 2, 0, 0], [6, 7, 8, 2]])
    labels = torch.tensor([1, 0, 1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        probs = model(tokens).softmax(-1)
    return {"losses": losses, "params": params_of(model), "probs": probs,
            "n_params": sum(p.numel() for p in model.parameters())}


@program
def gan_step(torch):
    nn = torch.nn
    gen = seed_params(torch, nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 3)), 14)
    disc = seed_params(torch, nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)), 15)
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    real = torch.from_numpy(data((6, 3), 16) + 1.0)
    ones, zeros = torch.ones(6, 1), torch.zeros(6, 1)
    d_losses, g_losses = [], []
    for step in range(3):
        z = torch.from_numpy(data((6, 2), 100 + step))
        fake = gen(z)
        opt_d.zero_grad()
        d_loss = bce(disc(real), ones) + bce(disc(fake.detach()), zeros)
        d_loss.backward()
        opt_d.step()
        gen_grad_after_d = [p.grad for p in gen.parameters()]
        opt_g.zero_grad()
        g_loss = bce(disc(fake), ones)
        g_loss.backward()
        opt_g.step()
        d_losses.append(d_loss.item())
        g_losses.append(g_loss.item())
    return {"d": d_losses, "g": g_losses, "gen": params_of(gen), "disc": params_of(disc),
            "gen_grad_after_d": gen_grad_after_d}


@program
def dqn_target_update(torch):
    nn = torch.nn
    F = torch.nn.functional

    def make():
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))

    policy = seed_params(torch, make(), 17)
    target = make()
    target.load_state_dict(policy.state_dict())
    target.eval()
    opt = torch.optim.RMSprop(policy.parameters(), lr=1e-3)
    gamma, tau = 0.9, 0.1
    rng = np.random.default_rng(18)
    losses = []
    for step in range(4):
        states = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
        actions = torch.from_numpy(rng.integers(0, 2, 8))
        rewards = torch.from_numpy(rng.standard_normal(8).astype(np.float32))
        next_states = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
        done = torch.from_numpy((rng.random(8) < 0.25).astype(np.float32))
        q = policy(states).gather(1, actions.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            best = target(next_states).max(1).values
            expected = rewards + gamma * best * (1 - done)
        loss = F.smooth_l1_loss(q, expected)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(policy.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        with torch.no_grad():
            if step % 2 == 0:
                for tp, p in zip(target.parameters(), policy.parameters()):
                    tp.mul_(1 - tau).add_(p, alpha=tau)
            else:
                for tp, p in zip(target.parameters(), policy.parameters()):
                    tp.copy_(torch.lerp(tp, p, tau))
    with torch.no_grad():
        for tp, p in zip(target.parameters(), policy.parameters()):
            tp.copy_(p)
    same = all(torch.equal(a, b) for a, b in zip(target.parameters(), policy.parameters()))
    return {"losses": losses, "policy": params_of(policy), "target_req": [
        p.requires_grad for p in target.parameters()], "same": same, "expected": expected}


@program
def gradient_accumulation(torch):
    nn = torch.nn
    x = torch.from_numpy(data((12, 5), 19))
    y = torch.from_numpy(data((12, 2), 20))

    def build():
        return seed_params(torch, nn.Sequential(nn.Linear(5, 6), nn.SiLU(), nn.Linear(6, 2)), 21)

    full = build()
    nn.functional.mse_loss(full(x), y).backward()
    full_grads = grads_of(full)

    model = build()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum = 4
    losses = []
    for i, (xb, yb) in enumerate(zip(x.chunk(accum), y.chunk(accum))):
        loss = nn.functional.mse_loss(model(xb), yb) / accum
        loss.backward()
        losses.append(loss.item())
        if (i + 1) % accum == 0:
            micro_grads = grads_of(model)
            opt.step()
            opt.zero_grad()
    match = all(torch.allclose(full_grads[k], micro_grads[k], atol=1e-6) for k in full_grads)
    return {"full": full_grads, "micro": micro_grads, "match": match, "losses": losses,
            "params": params_of(model), "grad_after_zero": [p.grad for p in model.parameters()]}


@program
def checkpoint_resume(torch):
    nn = torch.nn
    x = torch.from_numpy(data((10, 4), 22))
    y = torch.from_numpy(data((10, 1), 23))

    def make():
        model = seed_params(torch, nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 1)), 24)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        return model, opt, sched

    def train(model, opt, sched, steps):
        out = []
        for _ in range(steps):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            out.append(loss.item())
        return out

    model, opt, sched = make()
    straight = train(model, opt, sched, 6)

    model, opt, sched = make()
    first = train(model, opt, sched, 3)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(),
                    "sched": sched.state_dict(), "epoch": 3}, path)
        ckpt = torch.load(path)
    model2, opt2, sched2 = make()
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    resumed = first + train(model2, opt2, sched2, 3)
    matches = bool(np.allclose(straight, resumed, rtol=1e-6, atol=1e-7))
    return {"straight": straight, "resumed": resumed, "matches": matches, "epoch": ckpt["epoch"],
            "step": ckpt["optim"]["state"][0]["step"], "lr": sched2.get_last_lr(),
            "final": params_of(model2), "after_three": params_of(model)}


@program
def conv_autoencoder(torch):
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
        nn.Upsample(scale_factor=2, mode="nearest"),
        nn.Conv2d(4, 1, 3, padding=1), nn.Sigmoid())
    seed_params(torch, model, 25)
    up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    images = torch.from_numpy(np.abs(data((3, 1, 8, 8), 26)).clip(0, 1))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        recon = model(images)
        loss = nn.functional.binary_cross_entropy(recon, images)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    small = torch.from_numpy(data((1, 2, 3, 3), 27)).requires_grad_()
    big = up_bilinear(small)
    big.sum().backward()
    return {"losses": losses, "shape": tuple(recon.shape), "params": params_of(model),
            "big": big, "small_grad": small.grad}


def _rosenbrock_lbfgs(torch, search):
    xy = torch.tensor([-1.5, 2.0], requires_grad=True)
    opt = torch.optim.LBFGS([xy], lr=1, max_iter=20, history_size=5, line_search_fn=search)
    calls = []

    def closure():
        opt.zero_grad()
        a, b = xy[0], xy[1]
        loss = (1 - a) ** 2 + 10 * (b - a ** 2) ** 2
        loss.backward()
        calls.append(loss.item())
        return loss

    first = [opt.step(closure).item() for _ in range(3)]
    return {"xy": xy.detach().clone(), "first": first, "calls": len(calls),
            "n_iter": opt.state[xy]["n_iter"]}


@program
def lbfgs_closure(torch):
    results = {str(search): _rosenbrock_lbfgs(torch, search) for search in (None, "strong_wolfe")}

    # least squares fit of a linear layer
    layer = seed_params(torch, torch.nn.Linear(3, 1), 28)
    x = torch.from_numpy(data((16, 3), 29))
    y = x @ torch.tensor([[1.0], [2.0], [-1.0]]) + 0.5
    opt = torch.optim.LBFGS(layer.parameters(), lr=0.5, max_iter=10)

    def fit():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(layer(x), y)
        loss.backward()
        return loss

    opt.step(fit)
    results["fit"] = params_of(layer)
    return results


@program
def mixed_optimizers(torch):
    nn = torch.nn
    body = seed_params(torch, nn.Sequential(nn.Linear(4, 6), nn.Tanh()), 30)
    head = seed_params(torch, nn.Linear(6, 2), 31)
    opt_body = torch.optim.NAdam(body.parameters(), lr=1e-2, momentum_decay=4e-3)
    opt_head = torch.optim.RAdam([{"params": [head.weight], "weight_decay": 1e-2},
                                  {"params": [head.bias], "lr": 5e-3}], lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt_head, lr_lambda=lambda epoch: 0.9 ** epoch)
    x = torch.from_numpy(data((8, 4), 32))
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])
    losses, lrs = [], []
    for _ in range(8):  # RAdam switches to its rectified update after step 5
        opt_body.zero_grad()
        opt_head.zero_grad()
        loss = nn.functional.cross_entropy(head(body(x)), y)
        loss.backward()
        opt_body.step()
        opt_head.step()
        sched.step()
        losses.append(loss.item())
        lrs.append([g["lr"] for g in opt_head.param_groups])
    return {"losses": losses, "lrs": lrs, "body": params_of(body), "head": params_of(head),
            "mu_product": float(opt_body.state[body[0].weight]["mu_product"])}


@program
def gradient_penalty(torch):
    nn = torch.nn
    critic = seed_params(torch, nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)), 33)
    real = torch.from_numpy(data((5, 3), 34))
    fake = torch.from_numpy(data((5, 3), 35))
    alpha = torch.from_numpy(np.random.default_rng(36).random((5, 1)).astype(np.float32))
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(interp)
    (grads,) = torch.autograd.grad(outputs=scores, inputs=interp,
                                   grad_outputs=torch.ones_like(scores), create_graph=True)
    print(grads.requires_grad, grads.grad_fn is not None)
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    loss.backward()

    # second derivative of a scalar function, twice through autograd.grad
    t = torch.tensor([0.5, -1.0], requires_grad=True)
    f = (t.sin() * t ** 2).sum()
    (d1,) = torch.autograd.grad(f, t, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), t)
    return {"grads": grads.detach(), "penalty": penalty, "loss": loss,
            "critic_grads": grads_of(critic), "d1": d1.detach(), "d2": d2}


@program
def jacobian_hessian(torch):
    F = torch.autograd.functional

    def f(x):
        return torch.stack([x[0] * x[1], x[1].exp(), (x ** 2).sum()])

    def g(a, b):
        return a @ b

    def scalar(x):
        return (x ** 3).sum() + x[0] * x[1]

    x = torch.tensor([1.0, 2.0])
    a = torch.from_numpy(data((2, 3), 37))
    b = torch.from_numpy(data((3,), 38))
    jac = F.jacobian(f, x)
    jac_ab = F.jacobian(g, (a, b))
    hess = F.hessian(scalar, x)
    jac_graph = F.jacobian(f, x.clone().requires_grad_(), create_graph=True)
    out, vjp = F.vjp(f, x, torch.tensor([1.0, 0.0, 1.0]))
    _, jvp = F.jvp(f, x, torch.tensor([0.0, 1.0]))
    _, hvp = F.hvp(scalar, x, torch.tensor([1.0, 1.0]))
    return {"jac": jac, "jac_ab": list(jac_ab), "hess": hess, "jac_graph_req": jac_graph.requires_grad,
            "vjp": vjp, "out": out, "jvp": jvp, "hvp": hvp}


# ---------------------------------------------------------------------------------------------
# modules: init, modes, state dicts


@program
def nn_init(torch):
    nn = torch.nn
    init = nn.init
    w = torch.empty(6, 4)
    gains = [init.calculate_gain(n) for n in ("linear", "relu", "tanh", "sigmoid")]
    gains.append(init.calculate_gain("leaky_relu", 0.2))
    init.constant_(w, 0.3)
    const = w.clone()
    init.eye_(w)
    eye = w.clone()
    conv_w = torch.empty(3, 3, 3, 3)
    init.dirac_(conv_w)
    x = torch.from_numpy(data((1, 3, 5, 5), 39))
    dirac_identity = torch.allclose(nn.functional.conv2d(x, conv_w, padding=1), x)

    torch.manual_seed(0)
    fan_in, fan_out = 4, 6
    bound = gains[1] * (3.0 / fan_in) ** 0.5
    init.kaiming_uniform_(w, nonlinearity="relu")
    kaiming_ok = bool(w.abs().max() <= bound + 1e-6)
    init.xavier_uniform_(w, gain=2.0)
    xavier_ok = bool(w.abs().max() <= 2.0 * (6.0 / (fan_in + fan_out)) ** 0.5 + 1e-6)
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    trunc_ok = bool(w.abs().max() <= 0.5)
    init.orthogonal_(w)
    gram = w.t() @ w
    init.zeros_(w)
    layer = nn.Linear(4, 3)
    with torch.no_grad():
        init.normal_(layer.weight, mean=0.0, std=0.02)
        init.zeros_(layer.bias)

    def reinit(m):
        if isinstance(m, nn.Linear):
            init.ones_(m.weight)
            init.constant_(m.bias, -1.0)

    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)).apply(reinit)
    return {"gains": gains, "const": const, "eye": eye, "dirac": conv_w, "dirac_identity":
            dirac_identity, "kaiming_ok": kaiming_ok, "xavier_ok": xavier_ok, "trunc_ok": trunc_ok,
            "gram": gram, "zeros": w, "bias": layer.bias, "bias_leaf": layer.weight.is_leaf,
            "net": params_of(net), "net_out": net(torch.ones(1, 2))}


@program
def eval_train_modes(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.Linear(4, 2))
    seed_params(torch, model, 40)
    x = torch.from_numpy(data((6, 4), 41))
    print(model.training, [m.training for m in model])
    model.eval()
    print(model.training, [m.training for m in model])
    with torch.no_grad():
        e1 = model(x)
        e2 = model(x)
    model.train()
    _ = model(x)  # updates BatchNorm's running statistics
    stats = (model[1].running_mean.clone(), model[1].running_var.clone())
    model.train(False)
    e3 = model(x)

    drop = nn.Dropout(0.25)
    ones = torch.ones(400)
    dropped = drop(ones)
    kept_values = sorted(set(round(v, 4) for v in dropped.tolist()))
    drop.eval()
    identity = torch.equal(drop(ones), ones)

    for p in model[0].parameters():
        p.requires_grad_(False)
    model.train()
    model[2].p = 0.0
    model(x).sum().backward()
    with torch.inference_mode():
        inf = model(x)
    return {"e1": e1, "e2": e2, "same": torch.equal(e1, e2), "stats": list(stats), "e3": e3,
            "e3_req": e3.requires_grad, "kept_values": kept_values, "identity": identity,
            "frozen": [p.grad for p in model[0].parameters()], "head_grad": model[3].weight.grad,
            "inf_req": inf.requires_grad, "tracked": model[1].num_batches_tracked}


@program
def state_dict_round_trip(torch):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
            self.fc = nn.Linear(2, 2)
            self.register_buffer("scale", torch.tensor(2.0))
            self.register_buffer("cache", torch.zeros(2), persistent=False)

        def forward(self, x):
            return self.fc(self.features(x).mean((2, 3))) * self.scale

    src = seed_params(torch, Net(), 42)
    sd = src.state_dict()
    keys = list(sd.keys())
    shapes = {k: tuple(v.shape) for k, v in sd.items()}

    dst = Net()
    dst.load_state_dict(sd)
    x = torch.from_numpy(data((2, 1, 5, 5), 43))
    same_out = torch.allclose(src(x), dst(x))

    partial = {k: v for k, v in sd.items() if not k.startswith("fc.")}
    partial["extra.weight"] = torch.zeros(1)
    res = dst.load_state_dict(partial, strict=False)
    strict_err = err_head(lambda: dst.load_state_dict(partial), 6)
    shape_err = err_head(
        lambda: dst.load_state_dict({**sd, "fc.bias": torch.zeros(3)}), 5)

    buf = io.BytesIO()
    torch.save(src.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    fresh = Net()
    fresh.load_state_dict(loaded)

    opt = torch.optim.SGD(src.parameters(), lr=0.1, momentum=0.9)
    src(x).sum().backward()
    opt.step()
    osd = opt.state_dict()
    return {"keys": keys, "shapes": shapes, "same_out": same_out, "missing": list(res.missing_keys),
            "unexpected": list(res.unexpected_keys), "strict_err": strict_err,
            "shape_err": shape_err, "loaded": dict(loaded), "fresh_out": fresh(x),
            "detached": [v.requires_grad for v in sd.values()],
            "opt_keys": list(osd.keys()), "opt_group_keys": sorted(osd["param_groups"][0].keys()),
            "opt_params": osd["param_groups"][0]["params"], "opt_state_keys": list(osd["state"]),
            "momentum": [osd["state"][i]["momentum_buffer"] for i in sorted(osd["state"])]}


@program
def mlp_classifier_with_metrics(torch):
    nn = torch.nn
    rng = np.random.default_rng(44)
    x = torch.from_numpy(rng.standard_normal((30, 2)).astype(np.float32))
    y = ((x[:, 0] * x[:, 1]) > 0).long()
    dataset = torch.utils.data.TensorDataset(x, y)
    train_set = torch.utils.data.Subset(dataset, list(range(24)))
    loader = torch.utils.data.DataLoader(train_set, batch_size=8, shuffle=False, drop_last=True)
    model = seed_params(torch, nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2)), 45,
                        scale=0.7)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=9)
    history = []
    for _ in range(3):
        model.train()
        total, correct, running = 0, 0, 0.0
        for xb, yb in loader:
            opt.zero_grad()
            logits = model(xb)
            loss = nn.CrossEntropyLoss(label_smoothing=0.1)(logits, yb)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.item() * xb.size(0)
            correct += (logits.argmax(1) == yb).sum().item()
            total += yb.numel()
        model.eval()
        with torch.no_grad():
            val = model(x[24:]).argmax(1).eq(y[24:]).float().mean().item()
        history.append([running / total, correct, val, sched.get_last_lr()[0]])
    return {"history": history, "params": params_of(model)}


# ---------------------------------------------------------------------------------------------
# more programs: manual updates, fine-tuning, schedulers, sequence models, VAE, ResNet block


@program
def polynomial_fit_manual_sgd(torch):
    # the classic tutorial: fit sin(x) with a cubic, updating tensors by hand under no_grad
    x = torch.linspace(-3.14159, 3.14159, 200)
    y = torch.sin(x)
    rng = np.random.default_rng(46)
    a, b, c, d = (torch.tensor(float(v), requires_grad=True) for v in rng.standard_normal(4))
    lr = 1e-6
    losses = []
    for t in range(60):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if t % 20 == 19:
            print(t, round(loss.item(), 2))
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None
    return {"losses": losses, "coeffs": [a, b, c, d]}


@program
def autograd_grad_tour(torch):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    unused = torch.tensor([1.0], requires_grad=True)
    y = x ** 2
    gx, gu = torch.autograd.grad(y.sum(), (x, unused), allow_unused=True, retain_graph=True)
    # the wording differs between torch releases (2.15 names the index); the cause is what counts
    e = err(lambda: torch.autograd.grad(y.sum(), (x, unused), retain_graph=True))
    missing = (e[0], "appears to not have been used in the graph" in e[1])
    gm = torch.autograd.grad(y.sum(), (x, unused), retain_graph=True, materialize_grads=True)
    y.backward(torch.tensor([1.0, 0.1, 0.01]))
    nonscalar = err(lambda: (x * 2).backward())

    # writing into a view of a non-leaf records CopySlices on the base
    base = x * 1
    base[1] = base[1] * 10
    view_fn = base.grad_fn.name()
    x.grad = None
    base.sum().backward()

    @torch.no_grad()
    def evaluate(t):
        return t * 3

    frozen = evaluate(x)
    x.requires_grad_(False)
    off = (x * 2).requires_grad
    x.requires_grad_(True)
    with torch.inference_mode():
        inf = x * 2
    inf_err = err_head(lambda: (inf * x).sum().backward(), 6)
    nonleaf_err = err(lambda: (x * 2).requires_grad_(False))
    return {"gx": gx, "gu": gu, "missing": missing, "gm": list(gm), "x_grad": x.grad,
            "nonscalar": nonscalar, "view_fn": view_fn, "frozen": frozen, "off": off,
            "inf_is_inference": inf.is_inference(), "inf_err": inf_err, "nonleaf_err": nonleaf_err}


@program
def finetune_frozen_backbone(torch):
    nn = torch.nn
    backbone = seed_params(torch, nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU()), 47)
    for p in backbone.parameters():
        p.requires_grad = False
    model = nn.Sequential(backbone, nn.Linear(8, 3))
    seed_params(torch, model[1], 48)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(trainable, lr=0.1, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=0)
    x = torch.from_numpy(data((9, 4), 49))
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])
    losses, lrs = [], []
    for epoch in range(6):
        if epoch == 3:  # unfreeze the backbone with a smaller learning rate
            for p in backbone.parameters():
                p.requires_grad_(True)
            opt.add_param_group({"params": list(backbone.parameters()), "lr": 0.01})
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step(loss.item() if epoch % 2 else 10.0)
        losses.append(loss.item())
        lrs.append([g["lr"] for g in opt.param_groups])
    counts = [sum(p.numel() for p in m.parameters() if p.requires_grad) for m in (backbone, model)]
    return {"losses": losses, "lrs": lrs, "counts": counts, "params": params_of(model),
            "names": [n for n, _ in model.named_modules()]}


@program
def lr_scheduler_tour(torch):
    def lrs_of(make_sched, steps=8, lr=0.1):
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=lr)
        sched = make_sched(opt)
        out = []
        for _ in range(steps):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out

    S = torch.optim.lr_scheduler
    return {
        "cosine": lrs_of(lambda o: S.CosineAnnealingLR(o, T_max=6, eta_min=0.01)),
        "multistep": lrs_of(lambda o: S.MultiStepLR(o, milestones=[2, 5], gamma=0.3)),
        "warm_restarts": lrs_of(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)),
        "warmup_then_cosine": lrs_of(lambda o: S.SequentialLR(
            o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=5)],
            milestones=[3])),
        "onecycle": lrs_of(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10), steps=9),
        "exp": lrs_of(lambda o: S.ExponentialLR(o, gamma=0.8)),
    }


@program
def seq2seq_teacher_forcing(torch):
    nn = torch.nn
    F = torch.nn.functional
    vocab, hidden, pad = 7, 6, 0

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, 5, padding_idx=pad)
            self.encoder = nn.GRU(5, hidden, batch_first=True)
            self.cell = nn.LSTMCell(5, hidden)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, src, tgt_in):
            _, h = self.encoder(self.embed(src))
            h = h[0]
            c = torch.zeros_like(h)
            logits = []
            for t in range(tgt_in.shape[1]):
                h, c = self.cell(self.embed(tgt_in[:, t]), (h, c))
                logits.append(self.out(h))
            return torch.stack(logits, dim=1)

    model = seed_params(torch, Seq2Seq(), 50)
    src = torch.tensor([[1, 2, 3, 4], [5, 6, 2, 0]])
    tgt = torch.tensor([[1, 4, 3, 2, 0], [2, 6, 5, 0, 0]])
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        logits = model(src, tgt[:, :-1])
        loss = F.nll_loss(F.log_softmax(logits, -1).reshape(-1, vocab), tgt[:, 1:].reshape(-1),
                          ignore_index=pad)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=2.0)
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(model), "pad_row_grad": model.embed.weight.grad[pad]}


@program
def vae(torch):
    nn = torch.nn
    F = torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 8)
            self.mu = nn.Linear(8, 2)
            self.logvar = nn.Linear(8, 2)
            self.dec = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 6))

        def forward(self, x, eps):
            h = F.relu(self.enc(x))
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + eps * torch.exp(0.5 * logvar)
            return torch.sigmoid(self.dec(z)), mu, logvar

    model = seed_params(torch, VAE(), 51)
    x = torch.from_numpy((np.random.default_rng(52).random((5, 6)) > 0.5).astype(np.float32))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(4):
        eps = torch.from_numpy(data((5, 2), 60 + step))
        recon, mu, logvar = model(x, eps)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kld) / x.shape[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append([bce.item(), kld.item()])
    kl_div = F.kl_div(F.log_softmax(mu, -1), F.softmax(logvar, -1), reduction="batchmean")
    return {"losses": losses, "params": params_of(model), "kl_div": kl_div}


@program
def resnet_block(torch):
    nn = torch.nn
    F = torch.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.norm1 = nn.GroupNorm(2, cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.norm2 = nn.BatchNorm2d(cout, momentum=0.2)
            self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.norm1(self.conv1(x)))
            out = self.norm2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), BasicBlock(4, 4, 1), BasicBlock(4, 6, 2),
                        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(6, 2))
    seed_params(torch, net, 53)
    for m in net.modules():  # the usual ResNet init, then the NumPy weights for the convolutions
        if isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
    x = torch.from_numpy(data((4, 2, 8, 8), 54))
    y = torch.tensor([0, 1, 1, 0])
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    net.eval()
    with torch.no_grad():
        logits = net(x)
    buffers = {n: b for n, b in net.named_buffers()}
    return {"losses": losses, "params": params_of(net), "buffers": buffers, "logits": logits}


@program
def activation_checkpointing(torch):
    nn = torch.nn
    cp = torch.utils.checkpoint
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(5, 5), nn.Tanh()) for _ in range(3)])
    seed_params(torch, blocks, 55)
    x = torch.from_numpy(data((4, 5), 56)).requires_grad_()

    def forward(use_cp):
        h = x
        for blk in blocks:
            h = cp.checkpoint(blk, h, use_reentrant=False) if use_cp else blk(h)
        return h.pow(2).sum()

    plain_loss = forward(False)
    plain_loss.backward()
    plain = (grads_of(blocks), x.grad.clone())
    blocks.zero_grad()
    x.grad = None
    ck_loss = forward(True)
    ck_loss.backward()
    return {"plain_loss": plain_loss, "ck_loss": ck_loss, "plain": list(plain),
            "ck": [grads_of(blocks), x.grad]}


@program
def shared_and_tied_weights(torch):
    nn = torch.nn

    class TiedLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(6, 4)
            self.mix = nn.Linear(4, 4)
            self.head = nn.Linear(4, 6, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, idx):
            h = self.embed(idx)
            h = torch.tanh(self.mix(torch.tanh(self.mix(h))))  # one module used twice
            return self.head(h)

    model = seed_params(torch, TiedLM(), 57)
    names = [n for n, _ in model.named_parameters()]
    idx = torch.tensor([[1, 2, 3], [4, 5, 0]])
    target = torch.tensor([[2, 3, 4], [5, 0, 1]])
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(idx).flatten(0, 1), target.flatten())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"names": names, "tied": model.head.weight is model.embed.weight,
            "n_state": len(model.state_dict()), "losses": losses, "params": params_of(model),
            "grads": grads_of(model)}


# ---------------------------------------------------------------------------------------------
# idioms of older tutorials and course code: .data, printed models, hand-written losses


@program
def mnist_from_scratch(torch):
    # "What is torch.nn really?": raw tensors first, then the same model refactored onto nn
    import math

    F = torch.nn.functional
    x = torch.from_numpy(np.abs(data((16, 12), 61)))
    y = torch.from_numpy(np.random.default_rng(62).integers(0, 4, 16))
    weights = torch.from_numpy(data((12, 4), 63)) / math.sqrt(12)
    weights.requires_grad_()
    bias = torch.zeros(4, requires_grad=True)

    def log_softmax(t):
        return t - t.exp().sum(-1).log().unsqueeze(-1)

    def nll(inp, target):
        return -inp[range(target.shape[0]), target].mean()

    def accuracy(out, yb):
        return (torch.argmax(out, dim=1) == yb).float().mean()

    lr, bs = 0.5, 4
    losses = []
    for i in range((16 - 1) // bs + 1):
        xb, yb = x[i * bs:(i + 1) * bs], y[i * bs:(i + 1) * bs]
        loss = nll(log_softmax(xb @ weights + bias), yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
        losses.append(loss.item())
    by_hand = F.cross_entropy(x @ weights + bias, y)

    class MnistLogistic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = torch.nn.Parameter(torch.from_numpy(data((12, 4), 63)) / math.sqrt(12))
            self.bias = torch.nn.Parameter(torch.zeros(4))

        def forward(self, xb):
            return xb @ self.weights + self.bias

    model = MnistLogistic()
    for i in range(4):
        xb, yb = x[i * bs:(i + 1) * bs], y[i * bs:(i + 1) * bs]
        F.cross_entropy(model(xb), yb).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad * lr
            model.zero_grad()
    print(model)
    return {"losses": losses, "w": weights, "b": bias, "by_hand": by_hand,
            "acc": accuracy(x @ weights + bias, y), "module_w": model.weights,
            "module_b": model.bias, "module_grad": model.weights.grad}


@program
def cifar_tutorial_idioms(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(4, 6, 2)
            self.fc1 = nn.Linear(6 * 1 * 1, 10)
            self.fc2 = nn.Linear(10, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 6 * 1 * 1)
            return self.fc2(F.relu(self.fc1(x)))

    net = seed_params(torch, Net(), 64)
    print(net)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.from_numpy(data((8, 3, 8, 8), 65))
    labels = torch.from_numpy(np.random.default_rng(66).integers(0, 3, 8))
    running_loss = 0.0
    for i in range(4):
        optimizer.zero_grad()
        outputs = net(inputs[2 * i:2 * i + 2])
        loss = criterion(outputs, labels[2 * i:2 * i + 2])
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if i % 2 == 1:
            print(f"[{i + 1:5d}] loss: {running_loss / 2:.3f}")
            running_loss = 0.0
    correct, total = 0, 0
    with torch.no_grad():
        outputs = net(inputs)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
    # old-style parameter surgery through .data
    net.fc2.bias.data.fill_(0.25)
    net.fc2.weight.data *= 0.5
    data_is_leaf = net.fc2.weight.data.requires_grad
    print(f"Accuracy: {100 * correct // total} %")
    return {"predicted": predicted, "params": params_of(net), "data_req": data_is_leaf,
            "n_params": sum(p.numel() for p in net.parameters())}


@program
def printed_models(torch):
    nn = torch.nn
    models = [
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1), nn.Linear(4, 1, bias=False)),
        # (norm layers left out: rustgrad prints torch 2.15's `bias=True`, torch 2.9 does not)
        nn.Sequential(nn.Conv2d(1, 2, 3, stride=2, padding=1), nn.MaxPool2d(2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.GELU()),
        nn.LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.0),
        nn.ModuleDict({"enc": nn.Embedding(5, 2, padding_idx=0), "act": nn.LeakyReLU(0.1)}),
        nn.ConvTranspose2d(2, 1, 3, stride=2, output_padding=1),
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.MultiheadAttention(4, 2),
    ]
    for m in models:
        print(m)
    return {"counts": [sum(p.numel() for p in m.parameters()) for m in models]}


@program
def dataset_subclass_and_collate(torch):
    class Pairs(torch.utils.data.Dataset):
        def __init__(self, n):
            self.x = data((n, 3), 67)
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return {"x": torch.from_numpy(self.x[i]), "y": i % 2, "w": float(i) / 10,
                    "np": self.x[i, :2]}

    ds = Pairs(7)
    loader = torch.utils.data.DataLoader(ds, batch_size=3)
    batches = [{k: v for k, v in b.items()} for b in loader]

    def pad_collate(items):
        xs = [torch.ones(n) * n for n in items]
        return torch.nn.utils.rnn.pad_sequence(xs, batch_first=True, padding_value=-1.0)

    padded = list(torch.utils.data.DataLoader([1, 3, 2, 4], batch_size=2, collate_fn=pad_collate))
    sampler = torch.utils.data.SequentialSampler(ds)
    batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size=3, drop_last=False)
    concat = torch.utils.data.ConcatDataset([torch.utils.data.TensorDataset(torch.arange(3)),
                                             torch.utils.data.TensorDataset(torch.arange(10, 12))])
    concat_items = [concat[i][0] for i in range(len(concat))]
    return {"batches": batches, "len": len(loader), "padded": padded,
            "batch_sampler": list(batch_sampler), "concat": concat_items,
            "types": [type(v).__name__ for v in batches[0].values()]}


@program
def gradient_reversal_and_new_style_function(torch):
    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.neg() * ctx.alpha, None

    class Clamp(torch.autograd.Function):
        # the functorch-compatible style: forward without ctx, then setup_context
        @staticmethod
        def forward(x, lo, hi):
            return x.clamp(lo, hi)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, lo, hi = inputs
            ctx.save_for_backward((x >= lo) & (x <= hi))

        @staticmethod
        def backward(ctx, grad):
            (mask,) = ctx.saved_tensors
            return grad * mask, None, None

    nn = torch.nn
    feat = seed_params(torch, nn.Linear(3, 4), 68)
    label_head = seed_params(torch, nn.Linear(4, 2), 69)
    domain_head = seed_params(torch, nn.Linear(4, 1), 70)
    x = torch.from_numpy(data((5, 3), 71))
    h = feat(x)
    loss = label_head(h).pow(2).mean() + domain_head(GradReverse.apply(h, 0.5)).mean()
    loss.backward()

    v = torch.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    Clamp.apply(v, -1.0, 1.0).sum().backward()

    # backward(inputs=...) accumulates only into the listed leaves
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    return {"feat": grads_of(feat), "domain": grads_of(domain_head), "v_grad": v.grad,
            "a_grad": a.grad, "b_grad": b.grad}


@program
def double_precision_and_vectors(torch):
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 3), nn.Softplus(), nn.Linear(3, 1)), 72)
    model = model.double()
    x = torch.from_numpy(data((4, 3), 73).astype(np.float64))
    out = model(x)
    out.sum().backward()
    vec = nn.utils.parameters_to_vector(model.parameters())
    grad_vec = nn.utils.parameters_to_vector(p.grad for p in model.parameters())
    nn.utils.vector_to_parameters(vec * 2, model.parameters())
    emb = nn.Embedding.from_pretrained(torch.from_numpy(data((4, 2), 74)), freeze=True)
    looked = emb(torch.tensor([[0, 3], [2, 2]]))
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1, norm_type="inf")
    padded = nn.functional.pad(x[:1].reshape(1, 1, 3), (1, 2), mode="reflect")
    interp = nn.functional.interpolate(x.reshape(1, 1, 12), size=5, mode="linear",
                                       align_corners=True)
    return {"out": out, "vec": vec, "grad_vec": grad_vec, "params": params_of(model),
            "emb_req": emb.weight.requires_grad, "looked": looked, "norm": norm,
            "padded": padded, "interp": interp, "dtype": str(model[0].weight.dtype)}


@program
def ema_of_weights(torch):
    nn = torch.nn
    def make():
        # no bias before BatchNorm: its gradient is exactly zero, and Adamax would amplify the
        # rounding noise into steps
        return seed_params(torch, nn.Sequential(nn.Linear(3, 3, bias=False), nn.BatchNorm1d(3),
                                                nn.Linear(3, 1)), 75)

    model, ema = make(), make()
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adamax(model.parameters(), lr=0.05)
    decay = 0.8
    x = torch.from_numpy(data((6, 3), 76))
    for _ in range(4):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        with torch.no_grad():
            for e, p in zip(ema.state_dict().values(), model.state_dict().values()):
                if e.dtype.is_floating_point:
                    e.mul_(decay).add_((1 - decay) * p)
                else:
                    e.copy_(p)
    return {"ema": dict(ema.state_dict()), "model": dict(model.state_dict())}


# ---------------------------------------------------------------------------------------------
# research-code staples: a hand-written optimizer, contrastive loss, 1-d convolutions, nn.Transformer


@program
def custom_optimizer(torch):
    class SignMomentum(torch.optim.Optimizer):
        """Momentum on the gradient's sign (signSGD with momentum), written as users write one."""

        def __init__(self, params, lr=1e-2, beta=0.9, weight_decay=0.0):
            if lr < 0.0:
                raise ValueError(f"Invalid learning rate: {lr}")
            super().__init__(params, dict(lr=lr, beta=beta, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    if group["weight_decay"]:
                        grad = grad.add(p, alpha=group["weight_decay"])
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = torch.zeros_like(p)
                    state["step"] += 1
                    buf = state["buf"]
                    buf.mul_(group["beta"]).add_(grad, alpha=1 - group["beta"])
                    p.add_(buf.sign(), alpha=-group["lr"])
            return loss

    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)), 77)
    opt = SignMomentum([{"params": model[0].parameters(), "weight_decay": 0.1},
                        {"params": model[2].parameters()}], lr=0.01)
    bad_lr = err(lambda: SignMomentum(model.parameters(), lr=-1.0))
    x = torch.from_numpy(data((6, 3), 78))
    y = torch.from_numpy(data((6, 1), 79))

    def closure():
        opt.zero_grad()
        loss = nn.functional.l1_loss(model(x), y)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(5)]
    sd = opt.state_dict()
    fresh = SignMomentum(model.parameters(), lr=0.5)
    fresh_groups = len(fresh.param_groups)
    opt2 = SignMomentum([{"params": model[0].parameters(), "weight_decay": 0.1},
                         {"params": model[2].parameters()}], lr=0.01)
    opt2.load_state_dict(sd)
    return {"losses": losses, "params": params_of(model), "bad_lr": bad_lr,
            "groups": [{k: v for k, v in g.items() if k != "params"} for g in sd["param_groups"]],
            "steps": [st["step"] for st in sd["state"].values()], "fresh_groups": fresh_groups,
            "loaded_buf": opt2.state[model[2].bias]["buf"], "repr": repr(opt).splitlines()[0]}


@program
def contrastive_info_nce(torch):
    nn = torch.nn
    F = torch.nn.functional
    encoder = seed_params(torch, nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4)), 80)
    opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
    x = torch.from_numpy(data((6, 5), 81))
    losses = []
    for step in range(3):
        view1 = x + torch.from_numpy(data((6, 5), 90 + step, 0.1))
        view2 = x + torch.from_numpy(data((6, 5), 95 + step, 0.1))
        z = F.normalize(torch.cat([encoder(view1), encoder(view2)]), dim=1)
        sim = z @ z.T / 0.5
        sim = sim.masked_fill(torch.eye(12, dtype=torch.bool), float("-inf"))
        targets = torch.cat([torch.arange(6, 12), torch.arange(0, 6)])
        loss = F.cross_entropy(sim, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(encoder), "topk": sim.topk(2, dim=1).indices}


@program
def text_cnn_conv1d(torch):
    nn = torch.nn
    F = torch.nn.functional

    class TextCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, 6)
            self.convs = nn.ModuleList([nn.Conv1d(6, 4, k, padding=k // 2) for k in (2, 3)])
            self.pool = nn.AvgPool1d(2)
            self.dropout = nn.Dropout(0.3)
            self.fc = nn.Linear(8, 2)

        def forward(self, tokens):
            e = self.embed(tokens).transpose(1, 2)  # (batch, channels, time)
            feats = [F.max_pool1d(self.pool(F.relu(conv(e))), kernel_size=2).amax(dim=2)
                     for conv in self.convs]
            return self.fc(self.dropout(torch.cat(feats, dim=1)))

    model = seed_params(torch, TextCNN(), 82)
    tokens = torch.from_numpy(np.random.default_rng(83).integers(0, 12, (5, 9)))
    labels = torch.tensor([0, 1, 1, 0, 1])
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    model.eval()  # dropout off, the rest trains normally
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), labels, weight=torch.tensor([1.0, 2.0]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(model)}


@program
def transformer_seq2seq(torch):
    nn = torch.nn
    d, vocab = 8, 7

    class Translator(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = nn.Embedding(vocab, d)
            self.tgt_embed = nn.Embedding(vocab, d)
            self.core = nn.Transformer(d_model=d, nhead=2, num_encoder_layers=1,
                                       num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
                                       batch_first=True, norm_first=True, bias=False)
            self.generator = nn.Linear(d, vocab)

        def forward(self, src, tgt):
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
            h = self.core(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=mask,
                          src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
            return self.generator(h)

    model = seed_params(torch, Translator(), 84)
    src = torch.tensor([[1, 2, 3, 0], [4, 5, 6, 2]])
    tgt = torch.tensor([[1, 3, 2, 4], [2, 6, 5, 1]])
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for _ in range(3):
        logits = model(src, tgt[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    return {"losses": losses, "params": params_of(model), "mask": mask}


# ---------------------------------------------------------------------------------------------
# corners real programs reach: hook variants, loss options, RNN variants, attention weights


@program
def hooks_advanced(torch):
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)), 85)
    log = []
    features = {}

    def save_output(name):
        def hook(module, args, output):
            features[name] = output.detach()
        return hook

    def kw_hook(module, args, kwargs, output):
        log.append(("kw", sorted(kwargs)))

    def bwd_pre(module, grad_output):
        log.append(("bwd_pre", tuple(grad_output[0].shape)))
        return (grad_output[0] * 2,)

    def scale_grad_input(module, grad_input, grad_output):
        return tuple(None if g is None else g * 0 + 1 for g in grad_input)

    handles = [model[0].register_forward_hook(save_output("fc1")),
               model[1].register_forward_hook(save_output("relu")),
               model[2].register_forward_hook(kw_hook, with_kwargs=True),
               model[2].register_full_backward_pre_hook(bwd_pre),
               model[1].register_full_backward_hook(scale_grad_input),
               model[0].register_forward_pre_hook(lambda m, a: log.append("first"), prepend=True)]
    x = torch.from_numpy(data((4, 3), 86))
    out = model(x)
    out.sum().backward()
    grads = grads_of(model)

    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t * 1

    def unpack(t):
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = (a * a).sin().sum()
    b.backward()
    for h in handles:
        h.remove()
    return {"features": features, "log": log, "grads": grads, "out": out, "a_grad": a.grad,
            "packed": len(packed) > 0}


@program
def losses_tour(torch):
    F = torch.nn.functional
    logits = torch.from_numpy(data((4, 3), 87)).requires_grad_()
    target = torch.tensor([0, 2, 1, 2])
    soft = torch.softmax(torch.from_numpy(data((4, 3), 88)), dim=1)
    probs_target = (torch.from_numpy(np.random.default_rng(89).random((4, 3))) > 0.5).float()
    reg = torch.from_numpy(data((4, 3), 90))
    losses = {
        "ce_none": F.cross_entropy(logits, target, reduction="none"),
        "ce_smooth": F.cross_entropy(logits, target, label_smoothing=0.2),
        "ce_probs": F.cross_entropy(logits, soft),
        "ce_weight_ignore": F.cross_entropy(logits, torch.tensor([0, -100, 1, 2]),
                                            weight=torch.tensor([1.0, 0.5, 2.0])),
        "bce_logits_pos": F.binary_cross_entropy_with_logits(logits, probs_target,
                                                             pos_weight=torch.tensor([1.0, 2.0, 3.0])),
        "mse_sum": F.mse_loss(logits, reg, reduction="sum"),
        "l1": F.l1_loss(logits, reg),
        "huber": F.huber_loss(logits, reg, delta=0.5),
        "smooth_l1": F.smooth_l1_loss(logits, reg, beta=0.3),
        "kl": F.kl_div(F.log_softmax(logits, 1), soft, reduction="batchmean"),
        "nll": F.nll_loss(F.log_softmax(logits, 1), target),
        "margin": F.margin_ranking_loss(logits[:, 0], logits[:, 1], torch.tensor([1.0, -1.0, 1.0, -1.0])),
        "cos_embed": F.cosine_embedding_loss(logits, reg, torch.tensor([1.0, -1.0, 1.0, -1.0])),
        "gauss": F.gaussian_nll_loss(logits, reg, torch.ones(4, 3) * 0.5),
        "poisson": F.poisson_nll_loss(logits, reg.abs()),
    }
    total = sum(v.sum() for v in losses.values())
    total.backward()
    return {"losses": losses, "grad": logits.grad}


@program
def rnn_variants(torch):
    nn = torch.nn
    rnn_utils = nn.utils.rnn
    bi = seed_params(torch, nn.LSTM(3, 4, batch_first=True, bidirectional=True, proj_size=2), 91)
    x = torch.from_numpy(data((3, 4, 3), 92))
    lengths = torch.tensor([4, 2, 3])
    packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, (h, c) = bi(packed)
    padded, lens = rnn_utils.pad_packed_sequence(out, batch_first=True, total_length=5,
                                                padding_value=-1.0)
    gru = seed_params(torch, nn.GRU(3, 4, num_layers=2), 93)
    h0 = torch.from_numpy(data((2, 4, 4), 94))
    gout, gh = gru(x, h0)  # seq-first: x read as (seq=3, batch=4, feature=3)
    plain = seed_params(torch, nn.RNN(3, 2, nonlinearity="relu", batch_first=True), 95)
    rout, rh = plain(x)
    loss = padded.clamp(min=0).sum() + gout.mean() + rout.pow(2).mean()
    loss.backward()
    return {"padded": padded, "lens": lens, "h": h, "c": c, "gout": gout, "gh": gh, "rout": rout,
            "grads": [grads_of(bi), grads_of(gru), grads_of(plain)]}


@program
def attention_weights(torch):
    nn = torch.nn
    F = torch.nn.functional
    mha = seed_params(torch, nn.MultiheadAttention(6, 2, batch_first=True, kdim=4, vdim=5), 96)
    q = torch.from_numpy(data((2, 3, 6), 97))
    k = torch.from_numpy(data((2, 4, 4), 98))
    v = torch.from_numpy(data((2, 4, 5), 99))
    pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
    out, avg = mha(q, k, v, key_padding_mask=pad)
    _, per_head = mha(q, k, v, key_padding_mask=pad, average_attn_weights=False)
    out.sum().backward()
    qs = torch.from_numpy(data((1, 2, 3, 4), 100)).requires_grad_()
    additive = torch.from_numpy(data((3, 3), 101))
    sdpa = F.scaled_dot_product_attention(qs, qs, qs, attn_mask=additive, scale=0.3)
    sdpa.sum().backward()
    return {"out": out, "avg": avg, "per_head": per_head, "grads": grads_of(mha),
            "sdpa": sdpa, "qs_grad": qs.grad}


@program
def batchnorm_options(torch):
    nn = torch.nn
    x = torch.from_numpy(data((5, 3), 102))
    cumulative = nn.BatchNorm1d(3, momentum=None)
    for i in range(3):
        cumulative(x * (i + 1))
    no_stats = nn.BatchNorm1d(3, track_running_stats=False, affine=False)
    no_stats.eval()
    y = no_stats(x)  # still normalizes with batch statistics
    bn2 = seed_params(torch, nn.BatchNorm2d(2), 103)
    img = torch.from_numpy(data((2, 2, 3, 3), 104)).requires_grad_()
    bn2(img).pow(2).sum().backward()
    gn = seed_params(torch, nn.GroupNorm(2, 4), 105)
    ln = seed_params(torch, nn.LayerNorm([3, 3]), 106)
    feats = torch.from_numpy(data((2, 4, 3, 3), 107))
    return {"cum_mean": cumulative.running_mean, "cum_var": cumulative.running_var,
            "tracked": cumulative.num_batches_tracked, "y": y, "buffers": dict(no_stats.named_buffers()),
            "img_grad": img.grad, "bn_grads": grads_of(bn2), "gn": gn(feats), "ln": ln(feats)}


# ---------------------------------------------------------------------------------------------
# logs, introspection and the mistakes users make on the way


@program
def training_log_prints(torch):
    nn = torch.nn
    F = torch.nn.functional
    x = torch.tensor([[0.5, -1.0], [2.0, 0.25]])
    w = torch.tensor([[1.0, 0.5], [-0.5, 1.0]], requires_grad=True)
    h = x @ w
    print(h)
    print(F.mse_loss(h, torch.zeros(2, 2)))
    print(F.cross_entropy(h, torch.tensor([0, 1])))
    print(F.binary_cross_entropy_with_logits(h, torch.ones(2, 2)))
    print(F.nll_loss(F.log_softmax(h, 1), torch.tensor([1, 0])))
    print(F.l1_loss(h, torch.ones(2, 2)), F.smooth_l1_loss(h, torch.ones(2, 2)))
    print(h.relu().mean(), h.sigmoid().sum(1), h.tanh().max(), h.softmax(-1).std())
    print(F.gelu(h), F.silu(h).t(), F.dropout(h, 0.5, training=False))
    print(nn.Linear(2, 1)(x).shape, h.norm(), h.abs().amax(dim=0).values if False else h.abs().amax(0))
    print(h.view(-1)[1:], h.reshape(4).unsqueeze(0), h.permute(1, 0).contiguous(), h[:, None].squeeze())
    print(torch.cat([h, h]).sum(0), torch.stack([h, h]).mean(), torch.where(h > 0, h, 0 * h))
    print(f"loss={F.mse_loss(h, x).item():.6f} lr={1e-3:.0e}")
    return {}


@program
def module_introspection(torch):
    nn = torch.nn

    class Expert(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(2))
            self.table = nn.ParameterDict({"a": nn.Parameter(torch.zeros(2)),
                                           "b": nn.Parameter(torch.ones(2))})
            self.layers = nn.ParameterList([nn.Parameter(torch.full((2,), float(i))) for i in range(2)])
            self.register_parameter("unused", None)

        def forward(self, x):
            return x * self.scale + self.table["a"] + sum(self.layers)

    model = nn.Sequential()
    model.add_module("expert", Expert())
    model.append(nn.Linear(2, 2))
    model.extend([nn.ReLU()])
    model.insert(1, nn.Identity())
    info = {
        "named": [n for n, _ in model.named_parameters()],
        "norecurse": [n for n, _ in model.expert.named_parameters(recurse=False)],
        "prefixed": [n for n, _ in model.named_parameters(prefix="net")],
        "children": [type(m).__name__ for m in model.children()],
        "modules": [n for n, _ in model.named_modules()],
        "sub": type(model.get_submodule("expert")).__name__,
        "param": tuple(model.get_parameter("expert.table.b").shape),
        "len": len(model), "slice": [type(m).__name__ for m in model[1:]],
        "missing_attr": err(lambda: model.expert.nope),
        "unused": model.expert.unused,
        "state": list(model.state_dict()),
    }
    del model[1]
    info["after_del"] = [type(m).__name__ for m in model]
    out = model(torch.tensor([[1.0, 2.0]]))
    out.sum().backward()
    model.zero_grad(set_to_none=False)
    info["zeroed"] = [p.grad for p in model.parameters()]
    model.requires_grad_(False)
    info["frozen"] = [p.requires_grad for p in model.parameters()]
    info["double_dtype"] = [str(p.dtype) for p in model.double().parameters()]
    return info


@program
def common_user_errors(torch):
    nn = torch.nn
    F = torch.nn.functional
    lin = nn.Linear(4, 2)
    def has(fn, phrase):
        # torch's kernels prefix some messages with their name on some builds; the phrase counts
        e = err(fn)
        return None if e is None else (e[0], phrase in e[1])

    errors = {
        "linear_shape": has(lambda: lin(torch.ones(3, 3)),
                            "mat1 and mat2 shapes cannot be multiplied (3x3 and 4x2)"),
        "ce_batch": err(lambda: F.cross_entropy(torch.ones(4, 3), torch.tensor([0, 1, 2]))),
        "ce_float_target_shape": err_head(lambda: F.cross_entropy(torch.ones(4, 3), torch.ones(4)), 0),
        "item_many": err(lambda: torch.ones(2).item()),
        "numpy_requires_grad": err(lambda: torch.ones(2, requires_grad=True).numpy()),
        "view_noncontig": err(lambda: torch.ones(2, 3).t().view(6)),
        "matmul": has(lambda: torch.ones(2, 3) @ torch.ones(2, 3),
                      "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
        "cat_dims": err(lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)])),
        "mse_broadcast_warns": F.mse_loss(torch.ones(3, 1), torch.ones(3)).item(),
        "bce_range": err_head(lambda: F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0])), 8),
        "conv_channels": err(lambda: nn.Conv2d(3, 4, 3)(torch.ones(1, 1, 5, 5))),
        "embedding_index": err_head(lambda: nn.Embedding(3, 2)(torch.tensor([3])), 4),
        "long_grad": err(lambda: torch.tensor([1, 2], requires_grad=True)),
        "optimizer_empty": err(lambda: torch.optim.SGD([], lr=0.1)),
        "load_missing": err_head(lambda: lin.load_state_dict({"weight": torch.ones(2, 4)}), 9),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.mse_loss(torch.ones(3, 1), torch.ones(3))
    errors["warning"] = [str(w.message).split(".")[0] for w in caught]
    return errors


@program
def anomaly_detection(torch):
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        y = x.sqrt() * 0
        e = err(lambda: y.sum().backward())
    ok = torch.tensor([1.0, 4.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        ok.sqrt().sum().backward()
    return {"e": e, "ok": ok.grad, "enabled": torch.is_anomaly_enabled()}


@program
def save_load_mixed_objects(torch):
    nn = torch.nn
    # (whole modules are left out: rustgrad.save never pickles, so torch.save(model) has no twin)
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 2), nn.Tanh()), 108)
    x = torch.from_numpy(data((2, 3), 109))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.pt")
        torch.save({"w": model[0].weight, "step": 3, "name": "run1", "lst": [1.5, torch.ones(2)],
                    "nested": {"sd": model.state_dict(), "shape": (2, 3)}}, path)
        blob = torch.load(path)
    fresh = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    fresh.load_state_dict(blob["nested"]["sd"])
    return {"blob": blob, "blob_req": blob["w"].requires_grad, "out": fresh(x),
            "same": torch.equal(fresh(x), model(x))}


# ---------------------------------------------------------------------------------------------
# second-order research code: MAML, physics-informed nets; policy gradients, distillation


@program
def maml_fast_weights(torch):
    F = torch.nn.functional
    rng = np.random.default_rng(110)
    w1 = torch.from_numpy(rng.uniform(-0.5, 0.5, (8, 1)).astype(np.float32)).requires_grad_()
    b1 = torch.zeros(8, requires_grad=True)
    w2 = torch.from_numpy(rng.uniform(-0.5, 0.5, (1, 8)).astype(np.float32)).requires_grad_()
    b2 = torch.zeros(1, requires_grad=True)
    meta = [w1, b1, w2, b2]
    meta_opt = torch.optim.Adam(meta, lr=0.01)

    def net(x, params):
        a, b, c, d = params
        return F.linear(torch.tanh(F.linear(x, a, b)), c, d)

    meta_losses = []
    for it in range(3):
        meta_opt.zero_grad()
        total = 0.0
        for task in range(2):
            amp, phase = 1.0 + task, 0.5 * it
            xs = torch.from_numpy(rng.uniform(-2, 2, (5, 1)).astype(np.float32))
            xq = torch.from_numpy(rng.uniform(-2, 2, (5, 1)).astype(np.float32))
            ys, yq = amp * torch.sin(xs + phase), amp * torch.sin(xq + phase)
            grads = torch.autograd.grad(F.mse_loss(net(xs, meta), ys), meta, create_graph=True)
            fast = [p - 0.1 * g for p, g in zip(meta, grads)]
            query = F.mse_loss(net(xq, fast), yq)
            query.backward()
            total += query.item()
        meta_opt.step()
        meta_losses.append(total)
    return {"losses": meta_losses, "meta": [p.detach() for p in meta]}


@program
def physics_informed_net(torch):
    nn = torch.nn
    model = seed_params(torch, nn.Sequential(nn.Linear(1, 10), nn.Tanh(), nn.Linear(10, 10),
                                             nn.Tanh(), nn.Linear(10, 1)), 111, scale=0.8)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    t = torch.linspace(0, 1, 12).reshape(-1, 1).requires_grad_(True)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        u = model(t)
        du = torch.autograd.grad(u, t, torch.ones_like(u), create_graph=True)[0]
        d2u = torch.autograd.grad(du, t, torch.ones_like(du), create_graph=True)[0]
        residual = d2u + (2 * 3.14159) ** 2 * u  # harmonic oscillator u'' = -w^2 u
        t0 = torch.zeros(1, 1, requires_grad=True)
        u0 = model(t0)
        du0 = torch.autograd.grad(u0, t0, torch.ones_like(u0), create_graph=True)[0]
        loss = residual.pow(2).mean() * 1e-3 + (u0 - 1).pow(2).sum() + du0.pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(model), "d2u": d2u.detach()}


@program
def reinforce_policy_gradient(torch):
    nn = torch.nn
    F = torch.nn.functional
    policy = seed_params(torch, nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), 112)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    rng = np.random.default_rng(113)
    gamma = 0.9
    returns_log = []
    for _ in range(3):
        states = torch.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
        logits = policy(states)
        log_probs = F.log_softmax(logits, dim=-1)
        actions = torch.from_numpy(rng.integers(0, 3, 5))  # sampled outside, as a replay would be
        rewards = rng.standard_normal(5).tolist()
        g, returns = 0.0, []
        for r in reversed(rewards):
            g = r + gamma * g
            returns.insert(0, g)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        chosen = log_probs.gather(1, actions.unsqueeze(-1)).squeeze(-1)
        entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
        loss = -(chosen * returns).sum() - 0.01 * entropy
        opt.zero_grad()
        loss.backward()
        opt.step()
        returns_log.append([loss.item(), entropy.item()])
    return {"log": returns_log, "params": params_of(policy)}


@program
def knowledge_distillation(torch):
    nn = torch.nn
    F = torch.nn.functional
    teacher = seed_params(torch, nn.Sequential(nn.Linear(4, 12), nn.ReLU(), nn.Linear(12, 3)), 114)
    student = seed_params(torch, nn.Sequential(nn.Linear(4, 3)), 115)
    teacher.eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9, dampening=0.1)
    x = torch.from_numpy(data((8, 4), 116))
    y = torch.from_numpy(np.random.default_rng(117).integers(0, 3, 8))
    temp, alpha = 3.0, 0.7
    losses = []
    for step in range(4):
        lam = 0.6 if step % 2 else 1.0  # mixup on every other step
        perm = torch.arange(7, -1, -1)
        mixed = lam * x + (1 - lam) * x[perm]
        with torch.no_grad():
            soft_targets = F.softmax(teacher(mixed) / temp, dim=-1)
        logits = student(mixed)
        distill = F.kl_div(F.log_softmax(logits / temp, -1), soft_targets,
                           reduction="batchmean") * temp ** 2
        hard = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
        loss = alpha * distill + (1 - alpha) * hard
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append([distill.item(), hard.item()])
    return {"losses": losses, "student": params_of(student),
            "teacher_grads": [p.grad for p in teacher.parameters()]}


# ---------------------------------------------------------------------------------------------
# optimizer options and mobile-style convolutions


@program
def optimizer_options_tour(torch):
    nn = torch.nn
    x = torch.from_numpy(data((6, 3), 118))
    y = torch.from_numpy(data((6, 2), 119))
    configs = {
        "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True, weight_decay=0.01),
        "adamw_amsgrad": lambda p: torch.optim.AdamW(p, lr=0.05, amsgrad=True),
        "adam_maximize": lambda p: torch.optim.Adam(p, lr=0.01, maximize=True),
        "sgd_nesterov_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True,
                                                     weight_decay=0.1),
        "adagrad_decay": lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.1,
                                                       initial_accumulator_value=0.1),
        "rmsprop_centered": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
        "adadelta": lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.8, weight_decay=0.01),
        "adamax": lambda p: torch.optim.Adamax(p, lr=0.05),
        "nadam_decoupled": lambda p: torch.optim.NAdam(p, lr=0.05, weight_decay=0.1,
                                                       decoupled_weight_decay=True),
        "radam_decoupled": lambda p: torch.optim.RAdam(p, lr=0.05, weight_decay=0.1,
                                                       decoupled_weight_decay=True),
    }
    results = {}
    for name, make in configs.items():
        model = seed_params(torch, nn.Linear(3, 2), 120)
        opt = make(model.parameters())
        losses = []
        for _ in range(7):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results[name] = {"losses": losses, "params": params_of(model)}
    return results


@program
def mobile_convolutions(torch):
    nn = torch.nn

    class DepthwiseSeparable(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.depthwise = nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False)
            self.pointwise = nn.Conv2d(cin, cout, 1)
            self.act = nn.Hardswish()

        def forward(self, x):
            return self.act(self.pointwise(self.depthwise(x)))

    net = nn.Sequential(
        nn.Conv2d(2, 4, 3, stride=2, padding="valid", dilation=1),
        nn.ReLU6(),
        DepthwiseSeparable(4, 6),
        # (padding="same" with padding_mode="reflect" raises NotImplementedError in rustgrad)
        nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=2, padding_mode="reflect"),
        nn.Conv2d(6, 6, 3, padding="same", dilation=2),
        nn.Conv2d(6, 4, 3, padding=1, padding_mode="circular"),
        nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False),
        nn.Mish(),
        nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2, dilation=1),
        nn.Hardsigmoid(),
    )
    seed_params(torch, net, 121)
    x = torch.from_numpy(data((2, 2, 11, 11), 122)).requires_grad_()
    out = net(x)
    out.pow(2).mean().backward()
    pooled, idx = nn.functional.max_pool2d(x.detach(), 3, stride=2, padding=1, return_indices=True)
    return {"out": out, "x_grad": x.grad, "grads": grads_of(net), "pooled": pooled, "idx": idx,
            "avg": nn.functional.avg_pool2d(x.detach(), 3, stride=2, padding=1, ceil_mode=True)}


@program
def resize_and_lookup_layers(torch):
    nn = torch.nn
    F = torch.nn.functional
    # (scale_grad_by_freq=True raises NotImplementedError in rustgrad)
    emb = seed_params(torch, nn.Embedding(5, 3, max_norm=0.4), 123, 1.0)
    idx = torch.tensor([[0, 2, 2], [4, 0, 1]])
    e = emb(idx)  # renormalizes the looked-up rows in place
    e.sum().backward()
    img = torch.from_numpy(data((1, 2, 5, 7), 124)).requires_grad_()
    outs = {
        "bicubic": F.interpolate(img, size=(8, 9), mode="bicubic", align_corners=False),
        "area": F.interpolate(img, size=(3, 4), mode="area"),
        "nearest_exact": F.interpolate(img, scale_factor=1.5, mode="nearest-exact"),
        "bilinear_ac": F.interpolate(img, scale_factor=(2, 0.5), mode="bilinear", align_corners=True),
        "adaptive": F.adaptive_avg_pool2d(img, (3, 4)),
    }
    sum(o.sum() for o in outs.values()).backward()
    lstm = seed_params(torch, nn.LSTM(3, 3, num_layers=2, dropout=0.5), 125)
    lstm.eval()
    seq, _ = lstm(torch.from_numpy(data((4, 2, 3), 126)))
    return {"emb_weight": emb.weight, "emb_grad": emb.weight.grad, "e": e, "outs": outs,
            "img_grad": img.grad, "seq": seq}


# ---------------------------------------------------------------------------------------------
# runner


@pytest.mark.parametrize("fn", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    expected, expected_out = run_program(fn, real_torch)
    got, got_out = run_program(fn, rustgrad)
    assert got_out == expected_out
    assert_same(expected, got, fn.__name__, rtol=2e-4, atol=2e-5)


def test_suite_is_large_enough() -> None:
    assert len(PROGRAMS) >= 20
