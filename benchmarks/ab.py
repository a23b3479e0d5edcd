"""One benchmark, two checkouts, one run: A/B with the checkouts alternating.

Runs a benchmark script of checkout A and of checkout B alternately (A B B A A B B A ...: a
drift of the machine's load over the run moves both sides alike), `--runs` times each, each
run a fresh process with `PYTHONPATH` set to its checkout, the working directory in it, and a
fresh, empty x10array compile cache (`X10ARRAY_COMPILE_CACHE_DIR`), so that neither side loads
programs the other compiled. The figures each benchmark prints are parsed from its text (the
benchmarks print no machine-readable form; their text is the same in both checkouts), and
reported per figure (and the whole run's CPU seconds, all threads: the load moves it less
than wall times): the median over A's runs, over B's runs, and the median of the paired
ratios B_i / A_i (the i-th run of each side, run next to each other), with their range.

Prefer the figures that are ratios measured inside one benchmark process (x10array against
`jax.jit` or NumPy in the same run, marked `(ratio)`): the other jobs on a loaded machine move
both sides of such a ratio, so it moves much less than a time in ms. Every figure is "lower is
better" (a time, or x10array over a reference), so a paired B/A above 1 means B is slower.

Run: python benchmarks/ab.py --a /tmp/base26 --b . [--runs 5] [--json out.json] \\
         -- benchmarks/bench_lenet.py --steps 10

The script path after `--` is relative to each checkout's root. Parsers exist for
bench_lenet, bench_mnist, bench_distributed and bench_sklearn; for any other script each line
of the form `label  number ...` gives figures `label [i]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"

Figures = dict[str, float]


def _ratio(name: str) -> str:
    return name + " (ratio)"


def parse_lenet(text: str) -> Figures:
    """bench_lenet.py: ms per step (waited for, in a loop) per form, the printed ratios, the
    host ms per step; derived: eager and host CPU over jax.jit (XLA conv) of the same run."""
    out: Figures = {}
    for line in text.splitlines():
        m = re.match(rf"^(x10array \w+|jax\.jit \([^)]*\)|torch eager)\s+({NUM})\s+({NUM}|-)\s*$", line)
        if m:
            out[f"{m[1]} ms per step"] = float(m[2])
            if m[3] != "-":
                out[f"{m[1]} ms in a loop"] = float(m[3])
            continue
        m = re.match(rf"^(\w+)\s+/ (jax\.jit \([^)]*\))\s+({NUM})x per step, ({NUM})x in a loop", line)
        if m:
            out[_ratio(f"{m[1]} / {m[2]} per step")] = float(m[3])
            out[_ratio(f"{m[1]} / {m[2]} in a loop")] = float(m[4])
            continue
        m = re.match(rf"^host ms per step \(not waited for\), (.+?)\s+({NUM}) wall,\s+({NUM}) thread CPU", line)
        if m:
            out[f"host {m[1]} ms wall"] = float(m[2])
            out[f"host {m[1]} ms thread CPU"] = float(m[3])
            continue
        m = re.match(r"^lazy compiles: (\d+)", line)
        if m:
            out["lazy compiles"] = float(m[1])
    ref = "jax.jit (XLA conv)"
    if "x10array eager ms per step" in out and f"{ref} ms per step" in out:
        out[_ratio(f"eager / {ref} per step")] = out["x10array eager ms per step"] / out[f"{ref} ms per step"]
    for form in ("x10array lazy", "x10array captured"):
        # (a reference whose host thread did no measurable work, 0.00 ms, gives no ratio)
        if f"host {form} ms thread CPU" in out and out.get(f"host {ref} ms thread CPU", 0.0) > 0:
            out[_ratio(f"host CPU {form[9:]} / {ref}")] = (
                out[f"host {form} ms thread CPU"] / out[f"host {ref} ms thread CPU"]
            )
    return out


def parse_mnist(text: str) -> Figures:
    """bench_mnist.py: per round the epoch seconds of both sides, the host ms per captured
    step and the compile seconds; the first-epoch and best-of ratios (2 decimals: the round
    lines' seconds have only one)."""
    out: Figures = {}
    for line in text.splitlines():
        m = re.match(
            rf"^round (\d+): jax\.jit ({NUM}) s .*?x10array lazy ({NUM}) s \(.*?({NUM}) host ms per step, "
            rf"(\d+) compiles in ({NUM}) s",
            line,
        )
        if m:
            r = m[1]
            out[f"round {r} jax.jit s"] = float(m[2])
            out[f"round {r} x10array lazy s"] = float(m[3])
            out[f"round {r} host ms per step"] = float(m[4])
            out[f"round {r} compile s"] = float(m[6])
            continue
        m = re.match(rf"^first epoch of the process: x10array lazy / jax\.jit ({NUM})x", line)
        if m:
            out[_ratio("first epoch lazy / jax.jit")] = float(m[1])
            continue
        m = re.match(rf"^best of \d+: jax\.jit ({NUM}) s, x10array lazy ({NUM}) s: ({NUM})x", line)
        if m:
            out["best jax.jit s"] = float(m[1])
            out["best x10array lazy s"] = float(m[2])
            out[_ratio("best epoch lazy / jax.jit")] = float(m[3])
    return out


DIST_COLUMNS = ("recorded ms", "captured ms", "in place ms", "jax ms")
DIST_RATIOS = ("recorded / jax", "captured / jax", "in place / jax")


def parse_distributed(text: str) -> Figures:
    """bench_distributed.py: per row (batch, devices, processes) each form's ms, the paired
    ratios over the jax step, and the 1-device lazy step (derived: over the row's jax ms)."""
    out: Figures = {}
    row = r"^\s*(\d+)\s+(\d+)\s+(\d+)" + rf"\s+({NUM})" * 7 + r"\s+(\d+)/(\d+)/(\d+)\s+(" + NUM + r"|-)\s*$"
    for line in text.splitlines():
        m = re.match(row, line)
        if not m:
            continue
        key = f"b{m[1]} d{m[2]} p{m[3]}"
        values = [float(v) for v in m.groups()[3:10]]
        for name, v in zip(DIST_COLUMNS, values[:4]):
            out[f"{key} {name}"] = v
        for name, v in zip(DIST_RATIOS, values[4:]):
            out[_ratio(f"{key} {name}")] = v
        out[f"{key} steady compiles"] = float(m[11]) + float(m[12]) + float(m[13])
        if m[14] != "-":
            out[f"{key} 1-dev lazy ms"] = float(m[14])
            out[_ratio(f"{key} 1-dev lazy / jax")] = float(m[14]) / values[3]
    return out


def parse_sklearn(text: str) -> Figures:
    """bench_sklearn.py: per estimator and run (first, repeat) the NumPy, eager and lazy
    seconds and lazy/eager; derived: eager and lazy over the NumPy fit of the same run (NumPy's
    fit does not depend on the checkout: the machine's yardstick)."""
    out: Figures = {}
    for line in text.splitlines():
        m = re.match(rf"^(\w+)\s+(first|repeat)\s+({NUM})\s+({NUM})\s+({NUM})\s+({NUM})x", line)
        if not m:
            continue
        key = f"{m[1]} {m[2]}"
        n, e, lz = float(m[3]), float(m[4]), float(m[5])
        out[f"{key} numpy s"] = n
        out[f"{key} eager s"] = e
        out[f"{key} lazy s"] = lz
        out[_ratio(f"{key} lazy / eager")] = float(m[6])
        if n > 0:
            out[_ratio(f"{key} eager / numpy")] = e / n
            out[_ratio(f"{key} lazy / numpy")] = lz / n
    return out


def parse_generic(text: str) -> Figures:
    out: Figures = {}
    for line in text.splitlines():
        m = re.match(rf"^([A-Za-z][^\d]*?)\s+({NUM}(?:\s+{NUM})*)\s*\S*$", line.strip())
        if m:
            for i, v in enumerate(m[2].split()):
                out[f"{m[1]} [{i}]"] = float(v)
    return out


PARSERS: dict[str, Callable[[str], Figures]] = {
    "bench_lenet": parse_lenet,
    "bench_mnist": parse_mnist,
    "bench_distributed": parse_distributed,
    "bench_sklearn": parse_sklearn,
}


def parser_for(script: str) -> Callable[[str], Figures]:
    return PARSERS.get(Path(script).stem, parse_generic)


def order(runs: int) -> list[str]:
    """A B B A A B B A ...: `runs` of each side, each pair (A_i, B_i) run next to each other,
    and the side that goes first turning at every pair."""
    sides: list[str] = []
    for i in range(runs):
        sides += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    return sides


def paired(a: list[Figures], b: list[Figures]) -> dict[str, dict[str, float]]:
    """Per figure present in every run: the medians of A and B, and the median, min and max
    of the paired B_i / A_i."""
    names = [k for k in a[0] if all(k in r for r in a + b)] if a else []
    table: dict[str, dict[str, float]] = {}
    for k in names:
        ratios = [y[k] / x[k] for x, y in zip(a, b) if x[k] != 0]
        table[k] = {
            "a": statistics.median(r[k] for r in a),
            "b": statistics.median(r[k] for r in b),
            "b_over_a": statistics.median(ratios) if ratios else float("nan"),
            "min": min(ratios) if ratios else float("nan"),
            "max": max(ratios) if ratios else float("nan"),
        }
    return table


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(checkout: Path, script: str, args: list[str], timeout: float) -> tuple[str, float, float, float]:
    """One run: its stdout, wall seconds, the load average at its start, and the CPU seconds
    (user + system, all threads, and the subprocesses it waited for) of the whole run."""
    cache = tempfile.mkdtemp(prefix="x10-ab-cache-")
    env = dict(os.environ, PYTHONPATH=str(checkout), X10ARRAY_COMPILE_CACHE_DIR=cache)
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(checkout / script), *args],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(
            f"ab: {checkout / script} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        )
    return proc.stdout, time.perf_counter() - start, load, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="checkout A (the 'before')")
    parser.add_argument("--b", required=True, help="checkout B (the 'after')")
    parser.add_argument("--runs", type=int, default=5, help="runs of each side, alternating")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", help="write every run's figures and the table here")
    parser.add_argument("--all", action="store_true", help="show every figure (default: ratios and ms)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...], SCRIPT relative to each root")
    ns = parser.parse_args()
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("no benchmark given (-- benchmarks/bench_x.py ...)")
    script, args = command[0], command[1:]
    roots = {"A": Path(ns.a).resolve(), "B": Path(ns.b).resolve()}
    parse = parser_for(script)
    runs: dict[str, list[Figures]] = {"A": [], "B": []}
    loads: list[float] = []
    print(
        f"A = {roots['A']}\nB = {roots['B']}\n{script} {' '.join(args)}; {ns.runs} runs each, A B B A ...", flush=True
    )
    for i, side in enumerate(order(ns.runs)):
        text, seconds, load, cpu = run_once(roots[side], script, args, ns.timeout)
        figures = parse(text)
        if not figures:
            raise SystemExit(f"ab: no figures parsed from {side}'s output:\n{text[-3000:]}")
        # The whole run's CPU seconds: the same work on both sides (the jax and NumPy parts are
        # the same code), and moved less by other jobs than any wall time.
        figures["whole run CPU s"] = cpu
        runs[side].append(figures)
        loads.append(load)
        print(
            f"run {i + 1:>2} {side}: {seconds:6.1f} s, load average {load:.1f} at the start, {len(figures)} figures",
            flush=True,
        )
    loads.append(os.getloadavg()[0])
    table = paired(runs["A"], runs["B"])
    width = max([len(k) for k in table] + [6])
    print(
        f"\nload average (1 min) at the runs' starts: {min(loads):.1f}-{max(loads):.1f},"
        f" median {statistics.median(loads):.1f}"
    )
    print(f"{'figure':<{width}} {'A median':>10} {'B median':>10} {'B/A paired':>11} {'range':>13}")
    for k, row in table.items():
        if not ns.all and not (k.endswith("(ratio)") or " ms" in k or k.endswith(" s")):
            continue
        flag = "  <-- B slower >5%" if row["b_over_a"] > 1.05 else ""
        print(
            f"{k:<{width}} {row['a']:>10.4g} {row['b']:>10.4g} {row['b_over_a']:>11.3f}"
            f"  {row['min']:.2f}-{row['max']:.2f}{flag}"
        )
    if ns.json:
        Path(ns.json).write_text(
            json.dumps(
                {
                    "a": str(roots["A"]),
                    "b": str(roots["B"]),
                    "command": command,
                    "loads": loads,
                    "runs": runs,
                    "table": table,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
