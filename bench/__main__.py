"""``python -m bench``: run the benchmark, print the table, write bench/results/latest.json."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.concurrency import ConcurrencyConfig
from bench.report import build_goals, build_rows, to_json, to_markdown, write_json
from bench.suite import SuiteConfig, log, run_suite

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
QUICK_MASKING_KEYS = 20_000
"""The secret keys of the reply masked with --quick (200,000 otherwise)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="thinkgraph against LangGraph's prebuilt ReAct agent and a bare loop.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10 and 100 cycles only (resume and storage at 100), 50 runs at once at "
        "L = 0.2 s, a reply with 20,000 secret keys masked: a smoke run",
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
    scenario = parser.add_mutually_exclusive_group()
    scenario.add_argument(
        "--concurrency",
        action="store_true",
        help="only the latency-bound scenarios (N runs at once against a slow loopback model, "
        "the worker, start-up); they also run by default after the rest",
    )
    scenario.add_argument(
        "--skip-concurrency",
        action="store_true",
        help="leave out the latency-bound scenarios",
    )
    parser.add_argument(
        "--concurrency-runs",
        type=int,
        nargs="+",
        metavar="N",
        help="runs started together (default 200 1000; 50 with --quick)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        metavar="L",
        help="the loopback model's seconds per call (default 0.5; 0.2 with --quick)",
    )
    parser.add_argument(
        "--concurrency-rounds",
        type=int,
        metavar="K",
        help="rounds of each count up to 200 runs, the median shown (default 3; 1 with --quick)",
    )
    parser.add_argument(
        "--worker-runs",
        type=int,
        metavar="N",
        help="runs queued for one worker at concurrency 1 and N; 0 skips it "
        "(default 50; 10 with --quick)",
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
    if args.concurrency_runs and min(args.concurrency_runs) < 1:
        parser.error("--concurrency-runs must be at least 1")
    if args.concurrency_rounds is not None and args.concurrency_rounds < 1:
        parser.error("--concurrency-rounds must be at least 1")
    if args.latency is not None and args.latency < 0:
        parser.error("--latency cannot be negative")
    if args.worker_runs is not None and args.worker_runs < 0:
        parser.error("--worker-runs cannot be negative")
    return args


def concurrency_from(args: argparse.Namespace) -> ConcurrencyConfig | None:
    """The latency-bound scenarios the options ask for, or None to skip them."""
    if args.skip_concurrency:
        return None
    quick = args.quick
    runs = tuple(args.concurrency_runs or ((50,) if quick else (200, 1000)))
    worker_runs = args.worker_runs if args.worker_runs is not None else (10 if quick else 50)
    return ConcurrencyConfig(
        runs=runs,
        latency_s=args.latency if args.latency is not None else (0.2 if quick else 0.5),
        rounds=args.concurrency_rounds or (1 if quick else 3),
        worker_runs=worker_runs,
        worker_concurrency=(1, worker_runs),
        startup_repeat=1 if quick else 3,
    )


def config_from(args: argparse.Namespace) -> SuiteConfig:
    """The suite configuration the options ask for."""
    concurrency = concurrency_from(args)
    if args.concurrency:
        return SuiteConfig(
            cycles=(),
            storage_cycles=(),
            resume_cycles=(),
            paused_cycles=None,
            repeat=args.repeat,
            concurrency=concurrency,
            masking_keys=None,
            prune_runs=None,
            parse_sizes_kb=None,
        )
    if args.quick:
        return SuiteConfig(
            cycles=(10, 100),
            storage_cycles=(100,),
            resume_cycles=(100,),
            paused_cycles=None,
            repeat=args.repeat,
            prebuilt_max_cycles=args.prebuilt_max_cycles,
            concurrency=concurrency,
            masking_keys=QUICK_MASKING_KEYS,
        )
    return SuiteConfig(
        repeat=args.repeat,
        prebuilt_max_cycles=args.prebuilt_max_cycles,
        concurrency=concurrency,
    )


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
