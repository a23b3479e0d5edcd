"""Where SciPy's array-API-aware functions leave their results for arrays placed on the lazy device.

For every function of `scipy.special`, `scipy.stats`, `scipy.fft`, `scipy.signal` and
`scipy.ndimage` in SciPy's own table of array-API capabilities (`xp_capabilities_table`), this
finds arguments that work with NumPy inputs (each required parameter an array, or the first
an array and the rest the number 2 or 0.5), calls the function again with the arrays placed
explicitly on the lazy device (`Device("cpu", 0, "xla")`), and reports where each x10array
result lands, whether the values match NumPy's, or the error and why:

    SCIPY_ARRAY_API=1 python tools/scipy_devices.py > docs/scipy-devices.md

(the table of docs/scipy-devices.md; docs/devices.md summarizes it). It takes a few minutes;
names as arguments (`stats.ttest_1samp special.erf`) survey only those.
tests/test_scipy.py checks a representative set of rows.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SCIPY_ARRAY_API", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's x10array

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.fft  # noqa: E402, F401
import scipy.ndimage  # noqa: E402, F401
import scipy.signal  # noqa: E402, F401
import scipy.special  # noqa: E402, F401
import scipy.stats  # noqa: E402, F401
from scipy._lib._array_api import xp_capabilities_table  # noqa: E402

import x10array as xp  # noqa: E402

MODULES = ("special", "stats", "fft", "signal", "ndimage")
LAZY = xp.Device("cpu", 0, "xla")
SECONDS = 30  # per call


def functions() -> Iterator[tuple[str, str, Callable[..., Any], dict[str, Any]]]:
    """(module, name, function, SciPy's capabilities) of the five modules, sorted."""
    rows = []
    for fn, caps in xp_capabilities_table.items():
        parts = getattr(fn, "__module__", "").split(".")
        if len(parts) > 1 and parts[0] == "scipy" and parts[1] in MODULES:
            name = getattr(fn, "__name__", repr(fn))
            if getattr(getattr(scipy, parts[1]), name, None) is fn:  # public under that name
                rows.append((parts[1], name, fn, caps))
    return iter(sorted(rows, key=lambda r: (MODULES.index(r[0]), r[1])))


def required(fn: Callable[..., Any]) -> int:
    """The number of positional parameters without a default."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in kinds and p.default is inspect.Parameter.empty)


SAMPLE = np.linspace(0.15, 0.85, 16) ** 1.5  # positive, distinct, within every probability's range


def patterns(n: int) -> Iterator[list[Any]]:
    """Argument lists to try: "A" is an array, other entries are passed as they are."""
    yield ["A"] * max(n, 1)
    for scalar in (2, 0.5):
        yield ["A"] + [scalar] * (n - 1)


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def leaves(out: Any) -> list[Any]:
    """The arrays and numbers in a result (tuples, named tuples, result objects)."""
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in leaves(o)]
    if type(out) is xp.Array or isinstance(out, (np.ndarray, np.generic, float, int, complex, bool)):
        return [out]
    fields = getattr(out, "__dict__", None) or {}
    return [leaf for name, o in fields.items() if not name.startswith("_") for leaf in leaves(o)]


def call(fn: Callable[..., Any], args: list[Any]) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"), time_limit(SECONDS):
        warnings.simplefilter("ignore")
        return fn(*args)


def short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = f"{type(e).__name__}: {text}"
    return (text[:140] + "...") if len(text) > 143 else text


def values_match(got: list[Any], want: list[Any]) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        g = np.asarray(g)
        w = np.asarray(w)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-6, atol=1e-9, equal_nan=True):
            return False
    return True


def placement(arrays: list[Any]) -> str:
    return " + ".join(sorted({
        "lazy" if a.device == LAZY else a.device.backend.value + ("" if a._committed else " (uncommitted)")
        for a in arrays
    }))  # fmt: skip


def survey(fn: Callable[..., Any], caps: dict[str, Any]) -> tuple[str, str, str]:
    """(where the results land, where they land inside `device_scope(LAZY)`, a note)."""
    if caps.get("np_only") or caps.get("out_of_scope"):
        why = "SciPy: NumPy only" + (f" ({caps['reason']})" if caps.get("reason") else "")
        return "not tried", "", why
    n = required(fn)
    for pattern in patterns(n):
        host_args = [SAMPLE.copy() if a == "A" else a for a in pattern]
        try:
            want = leaves(call(fn, host_args))
        except Exception:  # noqa: BLE001 - this pattern does not suit the function; try the next
            continue
        results = []
        reads = 0
        for scope in (contextlib.nullcontext(), xp.device_scope(LAZY)):
            lazy_args = [xp.asarray(SAMPLE, device=LAZY) if a == "A" else a for a in pattern]
            before = xp.metrics()
            try:
                with scope:
                    results.append(leaves(call(fn, lazy_args)))
            except Exception as e:  # noqa: BLE001 - reported in the table
                return "error", "", short(e)
            finally:
                with contextlib.suppress(Exception):
                    xp.lazy_barrier()
            reads = reads or (xp.metrics() - before).transfers_to_host
        got, scoped = results
        arrays = [g for g in got if type(g) is xp.Array]
        if not arrays:
            kind = sorted({type(g).__name__ for g in got}) or ["nothing"]
            return "no array", "", f"returns {', '.join(kind)}" + ("" if values_match(got, want) else "; values differ")
        where = placement(arrays)
        note = "values match NumPy" if values_match(got, want) else "values differ from NumPy's"
        if where != "lazy":
            why = "SciPy's NumPy fallback returns xp.asarray(out) without device=" if reads else (
                "SciPy creates the result without device=")  # fmt: skip
            note = f"{why}; {note}"
        elif reads:
            note += f"; reads lazy values on the host {reads} time(s)"
        return where, placement([g for g in scoped if type(g) is xp.Array]), note
    return "not tried", "", f"no argument pattern of this survey suits it with NumPy inputs ({n} required parameters)"


SUITES_HEADING = "## SciPy's and array-api-extra's own test suites"


def main(only: list[str]) -> None:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    rows = []
    for module, name, fn, caps in functions():
        if only and f"{module}.{name}" not in only:
            continue
        where, scoped, note = survey(fn, caps)
        counts[module][where] += 1
        rows.append(f"| `{module}.{name}` | {where} | {scoped} | {note.replace('|', '/')} |")
        print(f"{module}.{name}: {where}", file=sys.stderr, flush=True)
    print("# SciPy's array-API functions on the lazy device\n")
    print(f"Generated by `tools/scipy_devices.py` with SciPy {scipy.__version__} and {len(rows)} functions")
    print("(see docs/devices.md for the rule and for what the columns mean).\n")
    print("| module | " + " | ".join(sorted({w for c in counts.values() for w in c})) + " |")
    keys = sorted({w for c in counts.values() for w in c})
    print("|---|" + "---|" * len(keys))
    for module in MODULES:
        print(f"| `{module}` | " + " | ".join(str(counts[module][k]) for k in keys) + " |")
    print("\n| function | result on | in `device_scope(lazy)` | note |\n|---|---|---|---|")
    print("\n".join(rows))
    # The page's hand-written part (SciPy's own test suites, conformance/downstream.py) follows
    # the generated table: kept as it is.
    page = Path(__file__).resolve().parent.parent / "docs" / "scipy-devices.md"
    text = page.read_text() if page.exists() else ""
    if SUITES_HEADING in text:
        print("\n" + text[text.index(SUITES_HEADING) :].rstrip())


if __name__ == "__main__":
    main(sys.argv[1:])  # optional: `stats.ttest_1samp special.erf ...`, a subset
