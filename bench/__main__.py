"""``python -m bench``: run the benchmark, print the table, write bench/results/latest.json."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.report import build_goals, build_rows, to_json, to_markdown, write_json
from bench.suite import SuiteConfig, log, run_suite

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="thinkgraph against LangGraph's prebuilt ReAct agent and a bare loop.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10 and 100 cycles only (resume and storage at 100): a smoke run",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="K",
        help="timed runs per cell; the table shows the median (default 3)",
    )
    parser.add_argument(
        "--prebuilt-max-cycles",
        type=int,
        default=1000,
        metavar="N",
        help="do not run the prebuilt agent above N cycles (default 1000)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=RESULTS,
        help=f"where to write the JSON results (default {RESULTS})",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def config_from(args: argparse.Namespace) -> SuiteConfig:
    """The suite configuration the options ask for."""
    if args.quick:
        return SuiteConfig(
            cycles=(10, 100),
            storage_cycles=(100,),
            resume_cycles=(100,),
            paused_cycles=None,
            repeat=args.repeat,
            prebuilt_max_cycles=args.prebuilt_max_cycles,
        )
    return SuiteConfig(repeat=args.repeat, prebuilt_max_cycles=args.prebuilt_max_cycles)


def main(argv: list[str] | None = None) -> None:
    """Run, print, save."""
    args = parse_args(argv)
    results = run_suite(config_from(args))
    rows = build_rows(results)
    goals = build_goals(results, rows)
    print(to_markdown(results, rows, goals))
    write_json(to_json(results, rows, goals), args.output)
    log(f"results written to {args.output}")


if __name__ == "__main__":
    main()
