"""Train an MLP and a small CNN on scikit-learn's 8x8 digits with rustgrad, written exactly as
a torch program (`import rustgrad as torch` would run it unchanged).

    python examples/train_digits.py            # rustgrad, and torch beside it if installed
    python examples/train_digits.py --no-torch

The digits ship inside scikit-learn (no download). When torch is installed the same models
are built in torch with rustgrad's initial weights copied in, trained on the same batches, and
the two runs are printed side by side.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Dict, Tuple

# The matrices here are small: one BLAS thread per process avoids oversubscribing the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import rustgrad  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from tqdm import tqdm  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # pragma: no cover - torch is optional here
    torch = None


def mlp(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 128), nn.ReLU(),
        nn.Linear(128, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )


def cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 32 x 2 x 2
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )


def data(seed: int = 0) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8) in [0, 1]
    y = digits.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    mean, std = xtr.mean(), xtr.std()
    return (xtr - mean) / std, (xte - mean) / std, ytr, yte


def train(lib: Any, model: Any, xtr: np.ndarray, ytr: np.ndarray, xte: np.ndarray,
          yte: np.ndarray, epochs: int, batch: int, lr: float, seed: int,
          desc: str) -> Dict[str, float]:
    """A plain torch training loop: AdamW, cosine schedule, cross entropy, label smoothing."""
    F = lib.nn.functional
    opt = lib.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    steps_per_epoch = (len(xtr) + batch - 1) // batch
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * steps_per_epoch)
    order = np.random.default_rng(seed)  # the same batches for both libraries
    xt, yt = lib.tensor(xtr), lib.tensor(ytr)
    start = time.perf_counter()
    bar = tqdm(range(epochs), desc=desc, leave=False, ncols=90)
    loss_value = float("nan")
    for _ in bar:
        model.train()
        perm = order.permutation(len(xtr))
        for i in range(steps_per_epoch):
            idx = lib.tensor(perm[i * batch:(i + 1) * batch])
            logits = model(xt[idx])
            loss = F.cross_entropy(logits, yt[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_value = loss.item()
        bar.set_postfix(loss=f"{loss_value:.4f}")
    elapsed = time.perf_counter() - start
    model.eval()
    with lib.no_grad():
        pred = model(lib.tensor(xte)).argmax(1).numpy()
    return {"acc": float((pred == yte).mean()), "loss": loss_value, "time": elapsed}


def run(name: str, build: Callable[[Any], Any], epochs: int, lr: float, with_torch: bool,
        data_: Tuple[np.ndarray, ...]) -> Tuple[Dict[str, Dict[str, float]], Any]:
    xtr, xte, ytr, yte = data_
    if build is mlp:
        xtr, xte = xtr.reshape(len(xtr), 64), xte.reshape(len(xte), 64)
    rustgrad.manual_seed(0)
    model = build(rustgrad)
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    results = {"rustgrad": train(rustgrad, model, xtr, ytr, xte, yte, epochs, 64, lr, 1,
                                 f"{name} rustgrad")}
    if with_torch:
        tmodel = build(torch)
        tmodel.load_state_dict({k: torch.tensor(v) for k, v in init.items()})
        results["torch"] = train(torch, tmodel, xtr, ytr, xte, yte, epochs, 64, lr, 1,
                                 f"{name} torch")
    return results, model


def main_with(epochs: int, with_torch: bool) -> Tuple[Any, Tuple[np.ndarray, np.ndarray]]:
    """Trains both models (and torch's twins), prints the table; returns the rustgrad CNN and
    the test split."""
    if with_torch:
        torch.set_num_threads(1)
    d = data()
    print(f"digits: {len(d[0])} train / {len(d[1])} test images of 8x8, 10 classes")
    rows = []
    model = None
    for name, build, lr in (("MLP", mlp, 3e-3), ("CNN", cnn, 3e-3)):
        res, model = run(name, build, epochs, lr, with_torch, d)
        for lib_name, r in res.items():
            rows.append((name, lib_name, r))
    print(f"{'model':6s} {'library':9s} {'test acc':>9s} {'last loss':>10s} {'train time':>11s}")
    for name, lib_name, r in rows:
        print(f"{name:6s} {lib_name:9s} {r['acc'] * 100:8.2f}% {r['loss']:10.4f} "
              f"{r['time']:10.2f}s")
    return model, (d[1], d[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--no-torch", action="store_true", help="skip the torch comparison")
    args = parser.parse_args()
    main_with(args.epochs, torch is not None and not args.no_torch)


if __name__ == "__main__":
    main()
