"""Run every measurement in one process, interleaving the systems so load hits all alike."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bench import bare_loop, masking, parse_formats, prebuilt_run, thinkgraph_run
from bench import prune as prune_bench
from bench.concurrency import ConcurrencyConfig, ConcurrencyResults, run_scenarios
from bench.masking import MaskingSample
from bench.parse_formats import ParseSample
from bench.prune import PruneSample
from bench.samples import ResumeSample, RunSample

__all__ = ["SuiteConfig", "SuiteResults", "run_suite"]

WARM_UP_CYCLES = 3


@dataclass(frozen=True, slots=True)
class SuiteConfig:
    """What to measure, and how often."""

    cycles: tuple[int, ...] = (10, 100, 200, 1000)
    """Run lengths for time per cycle and per node."""
    storage_cycles: tuple[int, ...] = (100, 1000)
    """Run lengths whose storage is reported (each must also be in `cycles`)."""
    resume_cycles: tuple[int, ...] = (1000, 300)
    """Run lengths whose resume is measured."""
    repeat: int = 3
    """Timed runs per system and length; the table shows the median."""
    resume_repeat: int = 5
    """Resumes per system and length (cheap, so more than `repeat`)."""
    prebuilt_max_cycles: int = 1000
    """The prebuilt agent is not run above this length (its cost is quadratic)."""
    paused_cycles: int | None = 300
    """Length of the runs paused for approval whose resume is timed; None skips them."""
    paused_repeat: int = 9
    """Paused runs resumed (each is one sample; the median is judged against the goal)."""
    prebuilt_once_from: int = 1000
    """From this length the prebuilt agent is timed once, not `repeat` times."""
    concurrency: ConcurrencyConfig | None = field(default_factory=ConcurrencyConfig)
    """The latency-bound scenarios (`bench.concurrency`); None skips them."""
    masking_keys: int | None = masking.KEYS
    """Secret keys in the reply whose masking is timed in every view (`bench.masking`);
    None skips it."""
    prune_runs: int | None = prune_bench.RUNS
    """Finished runs whose prune is timed (`bench.prune`); None skips it."""
    parse_sizes_kb: tuple[int, ...] | None = parse_formats.SIZES_KB
    """Reply sizes whose parse by the text policy is timed in every format
    (`bench.parse_formats`); None skips it."""


@dataclass(slots=True)
class SuiteResults:
    """Every sample taken, plus notes for the report."""

    config: SuiteConfig
    runs: list[RunSample] = field(default_factory=list)
    resumes: list[ResumeSample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    paused_resume_s: list[float] = field(default_factory=list)
    """thinkgraph only: resuming a run paused for approval after 300 cycles, to done."""
    concurrency: ConcurrencyResults | None = None
    """The latency-bound scenarios, when they were run."""
    masking: MaskingSample | None = None
    """Each view's time to mask and show a reply with many secret keys, when measured."""
    prune: PruneSample | None = None
    """The time to prune many finished runs, when measured."""
    parse: ParseSample | None = None
    """The text policy's parse time per reply, by format and size, when measured."""
    seconds: float = 0.0


def log(message: str) -> None:
    """Progress on stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def run_suite(config: SuiteConfig) -> SuiteResults:
    """Warm up, time the runs, then time resumes of the kept long runs; then the masking
    of a huge reply and the latency-bound scenarios, each in a process of its own, and the
    parse cost of long replies in this one."""
    started = time.perf_counter()
    results = SuiteResults(config)
    if config.cycles:
        _orchestration(config, results)
    if config.masking_keys:
        log("masking:")
        results.masking = masking.measure(config.masking_keys, log)
    if config.parse_sizes_kb:
        log("parse cost per reply:")
        results.parse = parse_formats.measure(config.parse_sizes_kb, log=log)
    if config.prune_runs:
        log("prune:")
        results.prune = prune_bench.measure(config.prune_runs, log)
    if config.concurrency is not None:
        log("latency-bound scenarios:")
        results.concurrency = run_scenarios(config.concurrency, log)
    results.seconds = time.perf_counter() - started
    return results


def _orchestration(config: SuiteConfig, results: SuiteResults) -> None:
    """Orchestration cost with a zero-latency model, all systems in this process."""
    root = Path(tempfile.mkdtemp(prefix="thinkgraph-bench-"))
    try:
        _warm_up(root)
        kept = _timed_runs(config, root, results)
        kept.update(_untimed_runs(config, root, kept))
        _resumes(config, kept, results)
        if config.paused_cycles is not None:
            paused = thinkgraph_run.paused_resumes(
                _fresh_dir(root, "tg-paused"), config.paused_repeat, config.paused_cycles
            )
            results.paused_resume_s = paused
            log(f"  thinkgraph paused resume: {[round(s * 1000, 1) for s in paused]} ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _fresh_dir(root: Path, name: str) -> Path:
    path = root / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _warm_up(root: Path) -> None:
    """One short run each, so imports and lazy set-up are not charged to the first sample."""
    thinkgraph_run.run(WARM_UP_CYCLES, _fresh_dir(root, "warm-tg"))
    prebuilt_run.run(WARM_UP_CYCLES, _fresh_dir(root, "warm-pb"))
    bare_loop.run(WARM_UP_CYCLES)


def _prebuilt_repeats(config: SuiteConfig, cycles: int) -> int:
    if cycles > config.prebuilt_max_cycles:
        return 0
    return 1 if cycles >= config.prebuilt_once_from else config.repeat


def _timed_runs(
    config: SuiteConfig, root: Path, results: SuiteResults
) -> dict[tuple[str, int], Path]:
    """Time each length `repeat` times; keep the last database of each resume length."""
    kept: dict[tuple[str, int], Path] = {}
    for cycles in config.cycles:
        for rep in range(config.repeat):
            tg_dir = _fresh_dir(root, f"tg-{cycles}-{rep}")
            results.runs.append(_logged(partial(thinkgraph_run.run, cycles, tg_dir)))
            _keep_or_drop(config, kept, "thinkgraph", cycles, tg_dir / thinkgraph_run.DB_NAME)
            if rep < _prebuilt_repeats(config, cycles):
                pb_dir = _fresh_dir(root, f"pb-{cycles}-{rep}")
                results.runs.append(_logged(partial(prebuilt_run.run, cycles, pb_dir)))
                _keep_or_drop(config, kept, "prebuilt", cycles, pb_dir / prebuilt_run.DB_NAME)
            results.runs.append(_logged(partial(bare_loop.run, cycles)))
        _note_caps(config, cycles, results)
    return kept


def _logged(run: Callable[[], RunSample]) -> RunSample:
    sample = run()
    log(f"  {sample.system:10} {sample.cycles:5} cycles  {sample.ms_per_cycle:9.3f} ms/cycle")
    return sample


def _keep_or_drop(
    config: SuiteConfig,
    kept: dict[tuple[str, int], Path],
    system: str,
    cycles: int,
    db: Path,
) -> None:
    """Keep the newest database of a resume length; delete every other one at once.

    The prebuilt agent's file at 1,000 cycles is about 1 GB, so nothing is left lying
    around longer than needed.
    """
    if cycles not in config.resume_cycles:
        shutil.rmtree(db.parent, ignore_errors=True)
        return
    previous = kept.get((system, cycles))
    if previous is not None:
        shutil.rmtree(previous.parent, ignore_errors=True)
    kept[(system, cycles)] = db


def _note_caps(config: SuiteConfig, cycles: int, results: SuiteResults) -> None:
    repeats = _prebuilt_repeats(config, cycles)
    if repeats == 0:
        results.notes.append(
            f"prebuilt agent not run at {cycles} cycles (above --prebuilt-max-cycles "
            f"{config.prebuilt_max_cycles}); its cells say 'not run'."
        )
    elif repeats < config.repeat:
        results.notes.append(
            f"prebuilt agent timed {repeats}× (not {config.repeat}×) at {cycles} cycles: "
            "its checkpoints grow quadratically, so one run takes about a minute."
        )


def _untimed_runs(
    config: SuiteConfig, root: Path, kept: dict[tuple[str, int], Path]
) -> dict[tuple[str, int], Path]:
    """Runs for resume lengths that are not timed lengths (e.g. 300); their time is unused."""
    made: dict[tuple[str, int], Path] = {}
    for cycles in config.resume_cycles:
        if ("thinkgraph", cycles) not in kept:
            tg_dir = _fresh_dir(root, f"tg-resume-{cycles}")
            thinkgraph_run.run(cycles, tg_dir)
            made[("thinkgraph", cycles)] = tg_dir / thinkgraph_run.DB_NAME
        if ("prebuilt", cycles) not in kept and cycles <= config.prebuilt_max_cycles:
            pb_dir = _fresh_dir(root, f"pb-resume-{cycles}")
            prebuilt_run.run(cycles, pb_dir)
            made[("prebuilt", cycles)] = pb_dir / prebuilt_run.DB_NAME
    return made


def _resumes(config: SuiteConfig, kept: dict[tuple[str, int], Path], results: SuiteResults) -> None:
    modules = {"thinkgraph": thinkgraph_run, "prebuilt": prebuilt_run}
    for (system, cycles), db in sorted(kept.items()):
        module = modules[system]
        checkpoint_id = module.find_fork_point(db, cycles)
        for _ in range(config.resume_repeat):
            sample = module.resume(db, cycles, checkpoint_id)
            results.resumes.append(sample)
            log(
                f"  {system:10} resume {cycles:5} cycles  load {sample.load_s * 1000:8.2f} ms"
                f"  load+first node {sample.load_first_node_s * 1000:8.2f} ms"
            )
