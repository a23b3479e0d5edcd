"""array-api-tests on one device, file by file, surviving process aborts (XLA's TPU compiler can
abort the process): a test that kills the process is recorded and deselected, and its file goes
on from there; stops at the deadline and writes a JSON summary. The suite is AAT_SUITE (a
working copy of data-apis/array-api-tests with its `array-api/` folder, see README.md).

    AAT_SUITE=... python conformance/tpu_driver.py DEVICE SECONDS OUT.json [pytest args...]

DEVICE is X10ARRAY_DEFAULT_DEVICE's value (`eager`, `xla`); float64 and complex128 are skipped
(a TPU holds neither). Used for the TPU rows of README.md: one process per file, since one
process at a time holds the chip and an abort ends only its own file's run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

LINE = re.compile(r"^(array_api_tests/\S+::\S+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)")


def main(device: str, seconds: float, outfile: str, extra: list[str]) -> None:
    end = time.time() + seconds
    suite = os.environ["AAT_SUITE"]
    xfails = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xfails-tpu.txt")
    folder = os.path.join(suite, "array_api_tests")
    files = sorted(f for f in os.listdir(folder) if f.startswith("test_") and f.endswith(".py"))
    env = dict(
        os.environ,
        ARRAY_API_TESTS_SKIP_DTYPES="float64,complex128",
        X10ARRAY_DEFAULT_DEVICE=device,
        ARRAY_API_TESTS_MODULE="x10array",
    )
    result: dict = {
        "passed": [],
        "failed": [],
        "crashed": [],
        "skipped": 0,
        "xfailed": 0,
        "unfinished": [],
        "seconds": {},
    }
    for f in files:
        done: set[str] = set()
        start = time.time()
        while time.time() < end - 5:
            args = [sys.executable, "-m", "pytest", f"array_api_tests/{f}", "-v", "-p", "no:cacheprovider"]
            args += ["--disable-deadline", "--timeout", "60", "--xfails-file", xfails, *extra]
            for name in sorted(done):
                args += ["--deselect", name]
            try:
                p = subprocess.run(args, cwd=suite, env=env, capture_output=True, text=True, timeout=end - time.time())
                out, rc = p.stdout, p.returncode
            except subprocess.TimeoutExpired as e:
                out, rc = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), None
            started = None
            for line in out.splitlines():
                m = LINE.match(line)
                if m is None:
                    if line.startswith("array_api_tests/") and "::" in line:
                        started = line.split()[0]  # (a test that began and never reported)
                    continue
                name, status = m.groups()
                if name in done:
                    continue
                done.add(name)
                if status == "PASSED":
                    result["passed"].append(name)
                elif status in ("FAILED", "ERROR", "XPASS"):
                    result["failed"].append(name)
                elif status == "SKIPPED":
                    result["skipped"] += 1
                else:
                    result["xfailed"] += 1
            if rc is None:
                result["unfinished"].append(f)
                break
            if rc < 0 or "Fatal Python error" in out:  # an abort: deselect the test it ran, go on
                if started and started not in done:
                    result["crashed"].append(started)
                    done.add(started)
                    time.sleep(3)  # (the chip is freed when the process is gone)
                    continue
                result["crashed"].append(f"{f} (unknown test)")
            break
        result["seconds"][f] = round(time.time() - start, 1)
        if time.time() >= end - 5:
            break
    with open(outfile, "w") as fh:
        json.dump(result, fh, indent=1)
    print(
        f"{device}: {len(result['passed'])} passed, {len(result['failed'])} failed, {len(result['crashed'])} crashed,"
        f" {result['skipped']} skipped, {result['xfailed']} xfailed; files {len(result['seconds'])}/{len(files)}"
    )
    for kind in ("failed", "crashed"):
        for name in result[kind]:
            print(f"  {kind}: {name}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4:])
