#!/usr/bin/env bash
# Run the Array API conformance suite (data-apis/array-api-tests) against x10array and write
# a summary to conformance/results-<label>.md.
#
#   conformance/run.sh SUITE [pytest args...]
#
# SUITE is a working copy of https://github.com/data-apis/array-api-tests with its `array-api`
# submodule checked out (see conformance/README.md). Extra arguments go to pytest, e.g.
# `--max-examples=200`, `-k test_sum`, `--hypothesis-seed=0`, `-x`.
#
# Environment:
#   CONFORMANCE_LABEL        names the run and the results file (default: eager)
#   X10ARRAY_DEFAULT_DEVICE  passed through: e.g. `xla` runs the suite on the lazy XLA device
#   X10ARRAY_EAGER_CPU_KERNELS  passed through: `xla` runs the eager CPU with XLA kernels
#   X10ARRAY_CPU_PROFILE     `tpu`: the CPU declares a TPU's capabilities (with
#                            ARRAY_API_TESTS_SKIP_DTYPES=float64,complex128); xfails-tpu.txt
set -euo pipefail

if [[ $# -lt 1 || ! -d "$1/array_api_tests" ]]; then
    echo "usage: $0 SUITE [pytest args...]   (SUITE: a checkout of data-apis/array-api-tests)" >&2
    exit 2
fi
suite="$(cd "$1" && pwd)"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
label="${CONFORMANCE_LABEL:-eager}"
report="$(mktemp -t x10array-conformance-XXXXXX.json)"
summary="$here/results-$label.md"
trap 'rm -f "$report"' EXIT

if [[ ! -d "$suite/array-api/src" ]]; then
    echo "$suite/array-api is empty: run 'git submodule update --init' in the suite" >&2
    exit 2
fi

# a CPU declaring a TPU's capabilities runs under the TPU's per-device rules (xfails-tpu.txt)
xfails="$here/xfails.txt"
if [[ "${X10ARRAY_CPU_PROFILE:-}" == "tpu" ]]; then
    xfails="$here/xfails-tpu.txt"
fi

status=0
(
    cd "$suite"
    ARRAY_API_TESTS_MODULE=x10array python -m pytest array_api_tests \
        --xfails-file "$xfails" \
        --json-report --json-report-file="$report" \
        -p no:cacheprovider -q "$@"
) || status=$?

commit="$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
python - "$report" "$summary" "$label" "$status" "$*" "$commit" <<'PY'
import collections
import datetime
import json
import os
import platform
import sys

report_path, summary_path, label, status, args, commit = sys.argv[1:]
try:
    with open(report_path) as f:
        report = json.load(f)
except (OSError, ValueError):
    report = {"summary": {}, "tests": []}

tests = report.get("tests", [])
counts = collections.Counter(t["outcome"] for t in tests)
per_file = collections.defaultdict(collections.Counter)
for t in tests:
    per_file[t["nodeid"].split("::")[0]][t["outcome"]] += 1
outcomes = ["passed", "failed", "error", "skipped", "xfailed", "xpassed"]

try:
    from importlib.metadata import version as _version
    version = _version("x10array")
except Exception as e:  # noqa: BLE001
    version = f"unknown ({e})"

lines = [
    f"# Conformance results: {label}",
    "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
    f"- x10array: {version} at commit {commit}; Python {platform.python_version()}",
    "- environment: "
    + (" ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("X10ARRAY_")) or "(no X10ARRAY_ variable set)"),
    f"- pytest arguments: `{args or '(none)'}`; exit status {status}",
    "",
    "| " + " | ".join(["total"] + outcomes) + " |",
    "|" + "---:|" * (len(outcomes) + 1),
    "| " + " | ".join([str(len(tests))] + [str(counts.get(o, 0)) for o in outcomes]) + " |",
    "",
    "## Per file",
    "",
    "| file | " + " | ".join(outcomes) + " |",
    "|---|" + "---:|" * len(outcomes),
]
for path in sorted(per_file):
    lines.append(f"| {path} | " + " | ".join(str(per_file[path].get(o, 0)) for o in outcomes) + " |")

bad = [t for t in tests if t["outcome"] in ("failed", "error")]
lines += ["", f"## Failures ({len(bad)})", ""]
for t in bad:
    phase = t.get("call") or t.get("setup") or {}
    message = (phase.get("crash") or {}).get("message", "").strip().splitlines()
    first = message[0][:200] if message else ""
    lines.append(f"- `{t['nodeid']}`: {first}")
if not tests:
    lines += ["", "No test results: pytest did not produce a report (see its output)."]

with open(summary_path, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"summary written to {summary_path}")
PY

exit "$status"
