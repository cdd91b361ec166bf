"""Run every benchmark script in turn (``make bench``); pass ``--quick`` for short versions.

``bench_revisions.py`` is left out: it compares two git revisions, so it needs ``--before REV``.

Each script measures nashzoo and its peer (OpenSpiel, PettingZoo) in the same run and prints a
table of ratios; ``--markdown BENCHMARKS.md`` makes each rewrite its own section.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOT_STANDALONE = {"bench_revisions.py": "compares two git revisions: run it with --before REV"}


def main(argv: list[str]) -> int:
    scripts = sorted(p for p in HERE.glob("bench_*.py"))
    parser = argparse.ArgumentParser(
        description="Run every benchmark script in turn: "
        + ", ".join(s.name for s in scripts if s.name not in NOT_STANDALONE)
        + ". Each prints its table; run one with --help for its own options."
    )
    parser.add_argument("--quick", action="store_true", help="each script's short version")
    parser.add_argument(
        "--markdown", metavar="FILE", help="each script rewrites its own section of FILE"
    )
    args = parser.parse_args(argv)
    passed = ["--quick"] * args.quick + (["--markdown", args.markdown] if args.markdown else [])
    failed = []
    for script in scripts:
        print(f"\n===== {script.name} =====", flush=True)
        if script.name in NOT_STANDALONE:
            print(f"skipped: {NOT_STANDALONE[script.name]}", flush=True)
            continue
        if subprocess.run([sys.executable, str(script), *passed], check=False).returncode:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
