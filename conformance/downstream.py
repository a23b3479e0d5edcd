"""Run SciPy's and array-api-extra's own tests on x10array (or the baseline), module by module.

    python conformance/downstream.py                          # x10array, eager, every module
    python conformance/downstream.py --device lazy signal     # one module on the lazy device
    python conformance/downstream.py --device compiled        # lazy, every graph compiled
    python conformance/downstream.py --backend array_api_strict
    python conformance/downstream.py --jobs 2 ndimage optimize  # two modules at a time

Each module is one pytest process (conformance/scipy_plugin.py for `scipy.MODULE`,
conformance/xpx_plugin.py for `xpx`, array-api-extra's tests), with `-m array_api_backends`
for SciPy as SciPy's docs say. Prints a Markdown table of the counts and the tests that failed
without being listed in conformance/downstream-xfails.txt; exits 1 if there is any (or if a
listed test passed, with --strict), then a closing line of the counts
("downstream: N passed, N failed, N skipped"; errors count as failures). `--jobs N` runs N
modules at a time (the table keeps the modules' order). Extra pytest arguments go after `--`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIPY_MODULES = ("signal", "ndimage", "optimize", "integrate", "interpolate", "stats", "special", "fft",
                 "spatial", "cluster", "linalg")  # fmt: skip
DEVICES = {
    "eager": {"X10ARRAY_DEFAULT_DEVICE": "cpu:0:eager"},
    "lazy": {"X10ARRAY_DEFAULT_DEVICE": "xla"},
    "compiled": {"X10ARRAY_DEFAULT_DEVICE": "xla", "X10ARRAY_COMPILE_THRESHOLD": "1"},
}
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
RESULT = re.compile(r"^(FAILED|ERROR|XPASS) (\S+)", re.M)


def command(module: str, backend: str) -> list[str]:
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=line", "-rfEX"]
    if module == "xpx":
        select = "x10array" if backend == "x10array" else f"{backend} and not strictest"
        return [*base, "-c", "conformance/xpx-pytest.ini", "-p", "conformance.xpx_plugin",
                "--pyargs", "array_api_extra.tests.main", "-k", select]  # fmt: skip
    return [*base, "-c", "conformance/scipy-pytest.ini", "-p", "conformance.scipy_plugin",
            "--pyargs", f"scipy.{module}", "-m", "array_api_backends"]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", default=[*SCIPY_MODULES, "xpx"])
    parser.add_argument("--device", choices=DEVICES, default="eager")
    parser.add_argument("--backend", choices=("x10array", "array_api_strict"), default="x10array")
    parser.add_argument("--strict", action="store_true", help="a listed test that passes fails the run")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per module")
    parser.add_argument("--log", type=Path, help="a folder for each module's whole pytest output")
    parser.add_argument("--jobs", type=int, default=1, help="modules run at a time (one process each)")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    env = {
        **os.environ,
        "XP_BACKEND": args.backend,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    if args.backend == "x10array":
        env.update(DEVICES[args.device])
    bad = 0
    print(f"| module ({args.backend}, {args.device if args.backend == 'x10array' else 'numpy'}) "
          "| passed | failed | errors | xfailed | xpassed | skipped | seconds |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    unexpected = []
    totals = {"passed": 0, "failed": 0, "skipped": 0}

    def run(module: str) -> tuple[str, int, float]:
        start = time.monotonic()
        try:
            done = subprocess.run([*command(module, args.backend), *extra], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=args.timeout)  # fmt: skip
            out, rc = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = f"{e.stdout or ''}\ntimed out after {args.timeout} s", -1
        return out, rc, time.monotonic() - start

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for module, (out, rc, seconds) in zip(args.modules, pool.map(run, args.modules)):
            if args.log:
                args.log.mkdir(parents=True, exist_ok=True)
                (args.log / f"{module}-{args.backend}-{args.device}.txt").write_text(out)
            tail = out.strip().splitlines()[-1] if out.strip() else ""
            counts = {k.rstrip("s"): int(n) for n, k in COUNT.findall(tail)}
            cells = [counts.get(k, 0) for k in ("passed", "failed", "error", "xfailed", "xpassed", "skipped")]
            print(f"| {module} | " + " | ".join(map(str, cells)) + f" | {seconds:.0f} |", flush=True)
            totals["passed"] += counts.get("passed", 0)
            totals["skipped"] += counts.get("skipped", 0)
            for kind, test in RESULT.findall(out):
                if kind != "XPASS" or args.strict:
                    unexpected.append(f"{module}: {kind} {test}")
            if rc not in (0, 1, 5) or (rc == 1 and not RESULT.search(out)):
                unexpected.append(f"{module}: pytest exited {rc}: {tail}")
    totals["failed"] = len(unexpected)
    for line in unexpected:
        print(line)
        bad = 1
    # (failed: the failures not listed as expected, which are what fail the run)
    print(f"downstream: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    return bad


if __name__ == "__main__":
    sys.exit(main())
