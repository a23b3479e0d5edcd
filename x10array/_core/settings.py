"""Every `X10ARRAY_*` setting, declared once: its type, default, allowed values and meaning.

A setting's value comes from the environment variable of the same name, read the first time
the setting is used (and again after `reload()`); a bad value raises ValueError naming the
variable and what it allows (numbers must be finite: NaN and infinity are refused). Code
reads settings with `get(name)` (a dict lookup), never `os.environ`. `override(...)` changes
settings inside a `with` block, for tests and experiments; `set(...)` changes one for the
rest of the process. Both are process-wide, not per thread. `override` may be used from any
thread: while blocks of several threads overlap, each setting has the value of the most
recently entered block still open that changes it, and once every block has exited, the
value from before the first (blocks may exit in any order). The README's table of variables
is `table()`'s output (a test checks it).

Why hand-written, not pydantic-settings or environs: a setting here is one declaration that
also writes the README's table and the API reference, is read lazily at first use (so an
import sets nothing), and is changed by `override` blocks across threads with the rule above;
`get` is a dict lookup on hot paths. A settings library would parse the variables but bring a
dependency and none of the rest.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Setting", "SETTINGS", "get", "set", "override", "reload", "table"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")
_BAD = object()  # what a parser's failure becomes


@dataclass(frozen=True)
class Setting:
    """One setting. `kind` is "str", "choice", "int", "float" (finite), "bool", "path",
    "dir_or_off" (a path; unset: the default, None; empty or `0`: off, "") or "address"
    (`host:port`; empty: unset, "")."""

    name: str
    kind: str
    default: Any
    meaning: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def allowed(self) -> str:
        """What the setting accepts, in words (for errors and the README table)."""
        if self.kind == "choice":
            return " or ".join(repr(c) for c in self.choices)
        if self.kind == "bool":
            return "1/0 (also true/false, yes/no, on/off)"
        if self.kind in ("int", "float"):
            number = "an integer" if self.kind == "int" else "a finite number"
            if self.maximum is not None:
                return f"a number from {self.minimum:g} to {self.maximum:.0f}"
            return number if self.minimum is None else f"{number} >= {self.minimum:g}"
        if self.kind == "address":
            return "host:port, the port 1-65535 (empty: unset)"
        if self.kind == "dir_or_off":
            return "a path (empty or `0`: off)"
        return "a path" if self.kind == "path" else "a string"

    def parse(self, value: Any) -> Any:
        """The setting's value from environment text or a Python value; ValueError if bad."""
        try:
            parsed = _PARSERS[self.kind](self, value)
        except (TypeError, ValueError):
            parsed = _BAD
        if parsed is None and self.kind in ("path", "dir_or_off"):
            return None  # unset
        if (
            parsed is None
            or parsed is _BAD
            or (self.minimum is not None and not parsed >= self.minimum)  # (`not >=`: NaN fails)
            or (self.maximum is not None and not parsed <= self.maximum)
        ):
            raise ValueError(f"{self.name}={value!r}: expected {self.allowed()}")
        return parsed


def _parse_bool(setting: Setting, value: Any) -> bool | None:
    if type(value) is bool:
        return value
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _parse_choice(setting: Setting, value: Any) -> str | None:
    text = str(value).strip().lower()
    return text if text in setting.choices else None


def _parse_number(setting: Setting, value: Any) -> float | None:
    if type(value) is bool:
        return None
    if setting.kind == "int":
        return int(value) if isinstance(value, int) else int(str(value).strip())
    number = float(value)
    return number if math.isfinite(number) else None


def _parse_address(setting: Setting, value: Any) -> str | None:
    text = str(value).strip()
    if not text:
        return ""
    host, colon, port = text.rpartition(":")
    if not (colon and host and port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        return None
    return text


_PARSERS: dict[str, Callable[[Setting, Any], Any]] = {
    "bool": _parse_bool,
    "choice": _parse_choice,
    "int": _parse_number,
    "float": _parse_number,
    "str": lambda setting, value: str(value),
    "address": _parse_address,
    "path": lambda setting, value: None if value is None else os.fspath(value) or None,  # None: unset
    "dir_or_off": lambda setting, value: (
        None if value is None else "" if str(os.fspath(value)).strip() in ("", "0") else os.fspath(value)
    ),
}


def _declare(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


SETTINGS: dict[str, Setting] = _declare(
    Setting(
        "X10ARRAY_DEFAULT_DEVICE", "str", "",
        "the default device: `eager`, `xla`, or `kind:ordinal:backend` such as `cpu:0:xla`"
        " (empty: the first accelerator, else the CPU, eager)",
    ),
    Setting(
        "X10ARRAY_EAGER_CPU_KERNELS", "choice", "numpy", "the eager CPU's kernels (also `set_cpu_kernels`)",
        choices=("numpy", "xla"),
    ),
    Setting(
        "X10ARRAY_STRICT_PROMOTION", "bool", False,
        "refuse type promotion between kinds (int with float, bool with int), which the standard leaves"
        " undefined, as array-api-strict does (default: the floating operand's dtype wins, as in JAX)",
    ),
    Setting(
        "X10ARRAY_COMPILE_THRESHOLD", "int", 2,
        "a lazy graph structure runs cold (interpreted on a CPU, op by op on an accelerator) until seen this"
        " many times (1 compiles at once)", minimum=1,
    ),
    Setting(
        "X10ARRAY_COMPILE_PAYBACK", "float", 0.5,
        "...and then until the estimated cost of interpreting it has reached this many times the estimated"
        " cost of its compile (a fixed cost model, no clock; 0 compiles at the threshold)", minimum=0,
    ),
    Setting(
        "X10ARRAY_COMPILE_LIMIT", "int", 10_000,
        "a lazy graph of more operations than this is always interpreted on a single device, never compiled"
        " (XLA's compile memory grows with the graph: 2.9 GB for 14,437 operations)", minimum=1,
    ),
    Setting(
        "X10ARRAY_TIER_FEEDBACK", "bool", False,
        "a compiled lazy program whose first runs are slower than its interpreted runs goes back to"
        " interpreting (a clock decides, so the last bits of transcendental functions may vary between runs)",
    ),
    Setting("X10ARRAY_CACHE_SIZE", "int", 256, "compiled lazy programs kept (LRU)", minimum=1),
    Setting(
        "X10ARRAY_SHAPE_CACHE_SIZE", "int", 8192,
        "shape/dtype rules of recorded operations kept, by (primitive, parameters, input shapes) (LRU)",
        minimum=1,
    ),
    Setting(
        "X10ARRAY_DTYPE_CACHE_SIZE", "int", 1024,
        "result dtypes of elementwise operations kept, by (primitive, parameters, input dtypes) (LRU)",
        minimum=1,
    ),
    Setting(
        "X10ARRAY_EAGER_CACHE_SIZE", "int", 1024,
        "jitted programs of the eager XLA kernels kept, one per (primitive, parameters), shared with an"
        " accelerator's cold lazy graphs (LRU)", minimum=1,
    ),
    Setting(
        "X10ARRAY_GRAPH_LIMIT", "int", 20_000,
        "pending operations before a lazy graph is run with a warning", minimum=1,
    ),
    Setting(
        "X10ARRAY_REPEAT_CUT", "bool", True,
        "a lazy recording without a barrier that repeats (a loop's step of 4+ operations, recorded twice) is cut at a"
        " fixed phase of its period and run there as lazy_barrier() would, so every step reuses one program",
    ),
    Setting("X10ARRAY_DONATE", "bool", True, "donate overwritten buffers to the compiled program at the barrier"),
    Setting(
        "X10ARRAY_INTERPRETER_THREADS", "int", 0,
        "threads the lazy interpreter shares a large elementwise run with an exp among (0: the cores this"
        " process may use, at most 4; 1: the calling thread alone); the values do not depend on it", minimum=0,
    ),
    Setting(
        "X10ARRAY_LOG_COMPILES", "bool", False,
        "log each XLA compile of a lazy graph and its reason, or its load from the disk cache",
    ),
    Setting(
        "X10ARRAY_CAPTURE_CHECK_EVERY", "int", 0,
        "debug: `x10array.compile` records its function again every this many calls of a signature and raises"
        " if the graph differs from the captured one (0: never)", minimum=0,
    ),
    Setting(
        "X10ARRAY_PLAN_CHECK", "bool", False,
        "debug: a lazy barrier that reuses the plan of a graph structure seen before also walks the graph and"
        " raises if the plan's key, outputs, leaves or scalars differ from the walk's",
    ),
    Setting(
        "X10ARRAY_COMPILE_CACHE_DIR", "dir_or_off", None,
        "where compiled programs are kept across processes (unset: `$XDG_CACHE_HOME/x10array/xla`, else"
        " `~/.cache/x10array/xla`)",
    ),
    Setting(
        "X10ARRAY_COMPILE_CACHE_MB", "int", 2048,
        "size bound of the compile cache directory in MiB (least recently used entries are removed)", minimum=1,
    ),
    Setting(
        "X10ARRAY_TRANSFER_GUARD", "choice", "allow",
        "implicit reads of lazy arrays' values (`float(x)`, printing, `numpy.asarray`, graph breaks) outside any"
        " `transfer_guard(...)` block: allowed, logged once per call site, or refused",
        choices=("allow", "log", "disallow"),
    ),
    Setting(
        "X10ARRAY_RECORD_SOURCE", "bool", False,
        "record the line of your code behind each lazy operation, for `x10array.debug`'s graph text and DOT"
        " (costs about 1 us per operation)",
    ),
    Setting(
        "X10ARRAY_DISTRIBUTED_TIMEOUT", "float", 60.0,
        "seconds a process waits for the others to reach the same new mesh program before it raises; also jax's"
        " heartbeat timeout (at least 10 s): a process silent that long is declared dead and the run ends",
        minimum=0, maximum=10**9,  # (jax takes it in milliseconds, an int64: infinity, or 1e300, would overflow)
    ),
    Setting(
        "X10ARRAY_DISTRIBUTED_CHECK_EVERY", "int", 0,
        "multi-process meshes: also compare every Nth run's program across processes, cached ones included"
        " (a key-value store round trip each time; 0: only each new program, at its compile)", minimum=0,
    ),
    Setting(
        "X10ARRAY_COORDINATOR", "address", "",
        "`distributed.initialize()`: the coordinator's host:port (set by `python -m x10array.distributed.launch`)",
    ),
    Setting(
        "X10ARRAY_NUM_PROCESSES", "int", 0,
        "`distributed.initialize()`: how many processes (0: from the cluster's environment, as jax finds it)",
        minimum=0,
    ),
    Setting("X10ARRAY_PROCESS_ID", "int", 0, "`distributed.initialize()`: this process's index", minimum=0),
    Setting(
        "X10ARRAY_LAUNCHER_PID", "int", 0,
        "set by `python -m x10array.distributed.launch`: its process id; a process it started ends itself when"
        " the launcher is gone (0: not started by it)", minimum=0,
    ),
    Setting(
        "X10ARRAY_MATMUL_PRECISION", "choice", "highest",
        "precision of float32 (and complex64) matmul, tensordot and vecdot under XLA: `highest` (float32 products,"
        " IEEE-like), `high` or `default` (the device's fastest: on a TPU one bfloat16 pass, about 3 correct"
        " digits); on a CPU all three give the same results",
        choices=("highest", "high", "default"),
    ),
    Setting(
        "X10ARRAY_CPU_PROFILE", "choice", "cpu",
        "the capabilities CPU devices declare: a CPU's, or a TPU's (default dtypes float32/int32, no float64 or"
        " complex128, DLPack exports as host copies), so a TPU's rules run on a machine without one (tests)",
        choices=("cpu", "tpu"),
    ),
    Setting(
        "X10ARRAY_CONV_LOWERING", "choice", "conv",
        "how `nn.functional.conv2d` lowers to XLA: XLA's convolution (compiles 2.6x faster; benchmarks/README.md)"
        " or patches + matmul",
        choices=("conv", "im2col"),
    ),
    Setting(
        "X10ARRAY_DATA_DIR", "path", None,
        "where `datasets.MNIST` looks for (and downloads) the IDX files (unset: ~/.cache/x10array/mnist)",
    ),
)  # fmt: skip

_values: dict[str, Any] = {}
# The values read so far, by name (`get` fills it; `set`, `override` and `reload` change it):
# a hot path may look a setting up here and call `get` on a KeyError.
cached = _values


def _setting(name: str) -> Setting:
    setting = SETTINGS.get(name)
    if setting is None:
        raise ValueError(f"x10array has no setting {name!r}; the settings are: {', '.join(SETTINGS)}")
    return setting


def get(name: str) -> Any:
    """The current value of setting `name`."""
    try:
        return _values[name]
    except KeyError:
        pass
    setting = _setting(name)
    text = os.environ.get(name)
    empty_is_default = text == "" and setting.kind not in ("bool", "dir_or_off")
    value = setting.default if text is None or empty_is_default else setting.parse(text)
    _values[name] = value
    return value


def set(name: str, value: Any) -> None:  # noqa: A001  (settings.set, as in a mapping)
    """Give setting `name` the value `value` (a Python value or environment-style text)."""
    _values[name] = _setting(name).parse(value)


# The open `override` blocks, oldest first (each a dict of the values it sets), and the value
# each overridden setting had before the oldest open block that changes it.
_layers: list[dict[str, Any]] = []
_outside: dict[str, Any] = {}
_override_lock = threading.Lock()


@contextlib.contextmanager
def override(**values: Any) -> Iterator[None]:
    """Settings changed inside the block, restored on exit: `override(X10ARRAY_DONATE=False)`.

    From any thread, nested or overlapping: a setting has the value of the most recently
    entered open block that changes it; when none is left, the value from before the first."""
    parsed = {name: _setting(name).parse(value) for name, value in values.items()}
    layer = dict(parsed)
    with _override_lock:
        for name in parsed:
            if not any(name in open_layer for open_layer in _layers):
                _outside[name] = get(name)
        _layers.append(layer)
        _values.update(parsed)
    try:
        yield
    finally:
        with _override_lock:
            del _layers[next(i for i, open_layer in enumerate(_layers) if open_layer is layer)]
            for name in parsed:
                newest = next((open_layer for open_layer in reversed(_layers) if name in open_layer), None)
                _values[name] = newest[name] if newest is not None else _outside.pop(name)


def reload() -> None:
    """Forget the values read so far: the next use reads the environment again."""
    _values.clear()


def table() -> str:
    """The settings as the README's Markdown table."""
    lines = ["| variable | default | allowed | meaning |", "|---|---|---|---|"]
    for s in SETTINGS.values():
        default = "(unset)" if s.default in (None, "") else f"`{s.default}`"
        if s.kind == "bool":
            default = f"`{int(s.default)}`"
        lines.append(f"| `{s.name}` | {default} | {s.allowed()} | {s.meaning} |")
    return "\n".join(lines)
