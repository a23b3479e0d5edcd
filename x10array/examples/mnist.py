"""Train LeNet-5 on MNIST, eagerly and on the lazy XLA device: the X10 tutorial's demo.

    python -m x10array.examples.mnist --quick        # one short epoch on each device: a minute or two
    python -m x10array.examples.mnist --device both --epochs 5 [--data-dir DIR] [--plot out.png]
    python -m x10array.examples.mnist --device xla --epochs 5 --save run.safetensors   # after each epoch
    python -m x10array.examples.mnist --device xla --epochs 8 --resume run.safetensors # epochs 5 to 7

The training code is written only against the Array API standard; the device decides whether
it runs op by op (eager) or as one compiled XLA program per step (lazy, with a barrier after
each optimizer update and after each evaluation batch).

The full demo (5 epochs on each device) takes about 15 minutes on a small CPU: an eager epoch
takes one to a few minutes there, a lazy one under a minute when idle. On a terminal a progress bar
shows each epoch's batches; elsewhere (a log, a pipe) a line goes to stderr every tenth of an
epoch, so a long run is never silent. (The bar and the lines are a dozen lines of this file:
tqdm would do both, but would be a dependency of the library for its one demo.)
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import x10array
from x10array import checkpoint, nn
from x10array.autodiff import value_and_grad
from x10array.datasets import MNIST, DownloadError
from x10array.optim import SGD


@dataclass
class Statistics:
    """Running counters that stay arrays on the device; read only when printed."""

    correct: Any
    loss_sum: Any
    batches: int = 0
    total: int = 0

    @classmethod
    def on(cls, device: Any) -> Statistics:
        xp = x10array  # counters start as transfers (leaves), not as graph nodes
        return cls(xp.asarray(0, device=device), xp.asarray(0.0, dtype=xp.float32, device=device))

    def update(self, logits: Any, labels: Any, loss: Any) -> None:
        self.correct, self.loss_sum = tally(logits, labels, loss, self.correct, self.loss_sum)
        self.count(labels)

    def count(self, labels: Any) -> None:
        """Count a batch whose sums `tally` added (inside a captured step: Python counters are
        not part of the replayed program, so they are kept outside it)."""
        self.batches += 1
        self.total += labels.shape[0]

    def read(self) -> tuple[float, int]:
        return float(self.loss_sum) / max(self.batches, 1), int(self.correct)


def tally(logits: Any, labels: Any, loss: Any, correct: Any, loss_sum: Any) -> tuple[Any, Any]:
    """The running sums with one more batch: correct guesses and losses (arrays on the device)."""
    xp = logits.__array_namespace__()
    guesses = xp.argmax(logits, axis=1)
    return correct + xp.sum(xp.astype(guesses == labels, xp.int64)), loss_sum + loss


def loss_and_logits(model: nn.Module, images: Any, labels: Any) -> tuple[Any, Any]:
    logits = model(images)
    return nn.softmax_cross_entropy(logits, labels), logits


# how many progress lines an epoch prints when stderr is not a terminal
PROGRESS_LINES = 10


def _progress(epoch: int, done: int, total: int, mode: bool | str, started: float = 0.0) -> None:
    """Show that epoch `epoch` has trained `done` of its `total` batches: `mode` "bar" (or True)
    redraws a bar on stderr (a terminal), "lines" writes a line there every tenth of the epoch
    (a log or a pipe, where a bar would be one endless line), False shows nothing."""
    if not mode:
        return
    if mode == "lines":
        step = max(1, total // PROGRESS_LINES)
        if done % step == 0 and done < total:
            seconds = time.perf_counter() - started
            sys.stderr.write(f"[Epoch {epoch}] {done}/{total} batches, {seconds:.0f} s\n")
            sys.stderr.flush()
        return
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[Epoch {epoch}] [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\r" + " " * (width + 30) + "\r")
    sys.stderr.flush()


def train(
    device: x10array.Device, *, epochs: int, batch_size: int, data_dir: str | None, learning_rate: float,
    momentum: float, seed: int = 0, progress: bool | str = False, log: Any = print, data: MNIST | None = None,
    save: str | None = None, resume: str | None = None, max_batches: int | None = None,
) -> list[dict[str, float]]:  # fmt: skip
    """Train and evaluate for epochs 0 to `epochs - 1`; returns one record per epoch trained.

    `data`: already loaded MNIST batches. `resume`: a checkpoint written by `save` (the model,
    the optimizer state and the number of epochs done): training continues from there, with the
    data of the following epoch, so that 2 epochs then 3 more give the same weights as 5 at once.
    `save`: the checkpoint is written there after each epoch (atomically). `max_batches`: stop
    each epoch's training and evaluation after that many batches (a quick try). `progress`: how
    each epoch's batches are shown while it trains (`_progress`: "bar", "lines" or False)."""
    host = x10array.Device("cpu", 0, "eager")
    if data is None:
        data = MNIST(batch_size, data_dir, device=host, seed=seed)
    model = nn.LeNet(seed=seed, device=host).move(to=device)
    optimizer = SGD(learning_rate=learning_rate, momentum=momentum)
    state = nn.to_device(optimizer.init(model), device)
    first = 0
    if resume is not None:
        restored = checkpoint.load(resume, like={"model": model, "optimizer": state, "epoch": 0}, device=device)
        model, state, first = restored["model"], restored["optimizer"], restored["epoch"]
        log(f"Resumed from {resume} after {first} epochs")
    grad_step = value_and_grad(loss_and_logits, has_aux=True)

    # One training step and one evaluation step, each captured once and replayed as one compiled
    # program on the lazy device (x10array.compile; on the eager device they simply run).
    @x10array.compile
    def train_step(model: nn.Module, state: Any, images: Any, labels: Any, sums: Any) -> tuple[Any, Any, Any]:
        with nn.phase("training"):
            (loss, logits), grads = grad_step(model, images, labels)
            model, state = optimizer.update(model, grads, state)
        return model, state, tally(logits, labels, loss, *sums)

    @x10array.compile
    def eval_step(model: nn.Module, images: Any, labels: Any, sums: Any) -> Any:
        with nn.phase("inference"):
            loss, logits = loss_and_logits(model, images, labels)
        return tally(logits, labels, loss, *sums)

    lazy = device.is_lazy
    history = []
    n_train = data.training_size // batch_size
    if max_batches is not None:
        n_train = min(n_train, max_batches)
    for epoch, batches in zip(range(first, epochs), itertools.islice(data.training, first, epochs)):
        start = time.perf_counter()
        # CPU seconds the host's thread spends per step (recording or replaying): not the time it
        # waits (on the CPU, a transfer waits for the step before it, which XLA runs meanwhile)
        host_seconds = 0.0
        train_stats = Statistics.on(device)
        for i, (images, labels) in enumerate(itertools.islice(batches, max_batches)):
            images, labels = images.to_device(device), labels.to_device(device)
            began = time.thread_time()
            model, state, sums = train_step(model, state, images, labels, (train_stats.correct, train_stats.loss_sum))
            train_stats.correct, train_stats.loss_sum = sums
            train_stats.count(labels)
            if lazy:
                x10array.lazy_barrier()
            host_seconds += time.thread_time() - began
            _progress(epoch, i + 1, n_train, progress, start)
        test_stats = Statistics.on(device)
        for images, labels in itertools.islice(data.validation, max_batches):
            images, labels = images.to_device(device), labels.to_device(device)
            test_stats.correct, test_stats.loss_sum = eval_step(
                model, images, labels, (test_stats.correct, test_stats.loss_sum)
            )
            test_stats.count(labels)
            if lazy:
                x10array.lazy_barrier()
        train_loss, train_correct = train_stats.read()
        test_loss, test_correct = test_stats.read()
        seconds = time.perf_counter() - start
        log(
            f"[Epoch {epoch}] Training Loss: {train_loss:.3f}, "
            f"Training Accuracy: {train_correct}/{train_stats.total} ({100 * train_correct / train_stats.total:.1f}%), "
            f"Test Loss: {test_loss:.3f}, "
            f"Test Accuracy: {test_correct}/{test_stats.total} ({100 * test_correct / test_stats.total:.1f}%) "
            f"seconds per epoch: {seconds:.1f}, "
            f"host CPU ms per training step: {1e3 * host_seconds / max(train_stats.batches, 1):.2f}"
        )
        history.append(
            {"epoch": epoch, "seconds": seconds, "train_loss": train_loss, "test_loss": test_loss,
             "train_accuracy": train_correct / train_stats.total, "test_accuracy": test_correct / test_stats.total,
             "host_ms_per_step": 1e3 * host_seconds / max(train_stats.batches, 1)}
        )  # fmt: skip
        if save is not None:
            checkpoint.save(save, {"model": model, "optimizer": state, "epoch": epoch + 1})
            log(f"Saved the model and the optimizer state after epoch {epoch} to {save}")
    return history


def _table(results: dict[str, list[dict[str, float]]]) -> str:
    names = list(results)
    lines = ["epoch | " + " | ".join(f"{n:>8} s   {n:>8} acc" for n in names)]
    for i in range(max(len(h) for h in results.values())):
        cells = []
        for n in names:
            r = results[n][i]
            cells.append(f"{r['seconds']:>10.1f}   {100 * r['test_accuracy']:>11.2f}%")
        lines.append(f"{i:>5} | " + " | ".join(cells))
    return "\n".join(lines)


def _pyplot() -> Any:
    """matplotlib's pyplot (non-interactive), or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _plot(plt: Any, results: dict[str, list[dict[str, float]]], path: str) -> Any:
    """Seconds and test accuracy per epoch, one line per device; with one epoch per device, one
    bar per device (a line through one point is a dot on an empty axis). Seconds start at 0.
    Returns the figure, saved to `path`."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    names = list(results)
    if all(len(history) == 1 for history in results.values()):
        epoch = int(next(iter(results.values()))[0]["epoch"])
        seconds = [results[n][0]["seconds"] for n in names]
        accuracy = [100 * results[n][0]["test_accuracy"] for n in names]
        colors = [f"C{i}" for i in range(len(names))]
        bars = ax1.bar(names, seconds, color=colors)
        ax1.bar_label(bars, fmt="%.1f s")
        bars = ax2.bar(names, accuracy, color=colors)
        ax2.bar_label(bars, fmt="%.2f%%")
        low = min(accuracy)
        ax2.set_ylim(max(0.0, low - max(2.0, (100 - low) / 2)), 100)  # the differences, not 0 to 100
        ax1.set_ylim(0, 1.15 * max(seconds))  # room for the labels
        ax1.set(xlabel=f"device (epoch {epoch})", ylabel="seconds per epoch", title="Time")
        ax2.set(xlabel=f"device (epoch {epoch})", ylabel="test accuracy (%)", title="Accuracy")
    else:
        for name, history in results.items():
            epochs = [r["epoch"] for r in history]
            ax1.plot(epochs, [r["seconds"] for r in history], marker="o", label=name)
            ax2.plot(epochs, [100 * r["test_accuracy"] for r in history], marker="o", label=name)
        for ax in (ax1, ax2):
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax1.set(xlabel="epoch", ylabel="seconds per epoch", title="Time")
        ax2.set(xlabel="epoch", ylabel="test accuracy (%)", title="Accuracy")
        ax1.legend()
    ax1.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


# --quick's batches per epoch: enough to see the loss fall and both devices run
QUICK_BATCHES = 100


def make_parser() -> argparse.ArgumentParser:
    """The command line, with each option's default in its help."""
    p = argparse.ArgumentParser(
        prog="python -m x10array.examples.mnist",
        description="Train LeNet-5 on MNIST with x10array (the X10 tutorial's demo).",
    )
    p.add_argument(
        "--device", choices=("eager", "xla", "both"), default="both",
        help="eager: op by op; xla: the lazy device, compiled steps; both: one then the other (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--epochs", type=int, default=5, help="epochs to train, counting resumed ones (default: %(default)s)"
    )
    p.add_argument("--batch-size", type=int, default=128, help="images per training batch (default: %(default)s)")
    p.add_argument(
        "--data-dir", default=None, metavar="DIR",
        help="a directory holding the four MNIST IDX files, gzipped or not (default: $X10ARRAY_DATA_DIR, else"
        " ~/.cache/x10array/mnist, downloaded there once)",
    )  # fmt: skip
    p.add_argument("--learning-rate", type=float, default=0.1, help="SGD's learning rate (default: %(default)s)")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD's momentum, 0 for plain SGD (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seeds the weights and the shuffling (default: %(default)s)")
    p.add_argument(
        "--plot", default=None, metavar="FILE.png",
        help='draw seconds and test accuracy per epoch there; needs matplotlib, pip install -e ".[plot]"'
        " (default: no plot)",
    )  # fmt: skip
    p.add_argument(
        "--save", default=None, metavar="PATH", help="write a checkpoint there after each epoch (default: none)"
    )
    p.add_argument(
        "--resume", default=None, metavar="PATH", help="continue from a checkpoint of --save (default: start afresh)"
    )
    p.add_argument(
        "--max-batches", type=int, default=None, metavar="N",
        help="at most N batches per epoch, for a quick try (default: every batch)",
    )  # fmt: skip
    p.add_argument(
        "--quick", action="store_true",
        help=f"one epoch of at most {QUICK_BATCHES} batches on each device, a minute or two instead of the full"
        " demo's quarter of an hour on a small CPU; sets --epochs 1 and --max-batches (default: %(default)s)",
    )  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs = 1
        args.max_batches = min(args.max_batches or QUICK_BATCHES, QUICK_BATCHES)
    if args.epochs <= 0 or args.batch_size <= 0:
        parser.error("--epochs and --batch-size must be positive")
    if args.max_batches is not None and args.max_batches <= 0:
        parser.error("--max-batches must be positive")
    if (args.save or args.resume) and args.device == "both":
        parser.error("--save and --resume need one device: add --device eager or --device xla")
    if args.resume and not os.path.isfile(args.resume):
        parser.error(f"--resume: no file {args.resume!r}")
    if args.save and not os.path.isdir(os.path.dirname(os.path.abspath(args.save))):
        parser.error(f"--save: the directory of {args.save!r} does not exist")
    plt = _pyplot() if args.plot else None
    if args.plot and plt is None:  # checked before minutes of training, not after
        parser.error('--plot needs matplotlib: pip install -e ".[plot]" in a checkout (or pip install matplotlib)')
    devices = {"eager": [x10array.Device.default], "xla": [x10array.Device.default_xla]}.get(
        args.device, [x10array.Device.default, x10array.Device.default_xla]
    )
    host = x10array.Device("cpu", 0, "eager")
    try:
        # a directory given is read, never a download target: a wrong path says what it lacks
        data = MNIST(args.batch_size, args.data_dir, device=host, seed=args.seed, download=args.data_dir is None)
    except (DownloadError, FileNotFoundError, ValueError) as e:
        # one message: what was tried, why it failed, and the ways out; no traceback
        given = "--data-dir: " if isinstance(e, FileNotFoundError) else ""
        parser.exit(1, f"mnist: error: {given}{e}\n")
    if not args.quick and args.max_batches is None and args.epochs >= 2 and not devices[0].is_lazy:
        sys.stderr.write(
            f"{args.epochs} epochs on {len(devices)} device(s): an eager epoch takes minutes on a small CPU"
            " (--quick: one short epoch of each)\n"
        )
    results = {}
    for device in devices:
        name = device.backend.name.lower()
        print(f"Training LeNet-5 on {device}")
        before = x10array.metrics()
        try:
            results[name] = train(
                device, epochs=args.epochs, batch_size=args.batch_size, data_dir=args.data_dir,
                learning_rate=args.learning_rate, momentum=args.momentum, seed=args.seed,
                progress="bar" if sys.stderr.isatty() else "lines", data=data, save=args.save, resume=args.resume,
                max_batches=args.max_batches,
            )  # fmt: skip
        except ValueError as e:
            if args.resume is None or not str(e).startswith("checkpoint.load"):
                raise
            # a file of another model, another optimizer (--momentum 0 keeps no velocity) or not a checkpoint
            parser.exit(1, f"mnist: error: --resume {args.resume}: {e}\n")
        if device.is_lazy:
            d = x10array.metrics() - before
            print(
                f"lazy metrics: {d.compile_count} compiles, {d.disk_cache_loads} loaded from the disk cache "
                f"({d.compile_seconds:.1f} s), {d.cache_hits} cache hits ({d.captured_replays} captured replays), "
                f"{d.interpreted_graphs} interpreted graphs, {d.graph_breaks} graph breaks"
            )
    if len(results) > 1:
        print(_table(results))
    if args.plot and plt is not None:
        plt.close(_plot(plt, results, args.plot))
        print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
