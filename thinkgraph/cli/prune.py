"""`thinkgraph prune`: delete old checkpoints of finished runs and finished worker jobs, and
say what went."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Any

import typer

from thinkgraph.cli._app import app, existing_store, fail, guarded
from thinkgraph.cli._options import StoreOpt

__all__ = ["human_size", "prune", "report_table"]


@app.command(rich_help_panel="Inspect")
def prune(
    store: StoreOpt = "",
    keep_last: Annotated[
        int | None,
        typer.Option(
            "--keep-last",
            min=1,
            help="Keep each finished run's N newest checkpoints; they still read, resume, "
            "fork and replay.",
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            help="Only runs last updated longer ago than this (30d, 12h, 90m). Without "
            "--keep-last, such runs are deleted whole.",
        ),
    ] = None,
    thread: Annotated[
        str | None,
        typer.Option("--thread", help="Delete this one finished run, every row of it."),
    ] = None,
    jobs_older_than: Annotated[
        str | None,
        typer.Option(
            "--jobs-older-than",
            metavar="DURATION",
            help="Also delete the worker queue's finished jobs last touched longer ago than "
            "this (7d, 12h); never a job that waits or runs, nor one of a paused or running run.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask before deleting (at a terminal).")
    ] = False,
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum/--no-vacuum", help="After a real prune of a SQLite store, shrink its file."
        ),
    ] = True,
) -> None:
    """Delete old checkpoints, writes and blobs of finished (done or failed) runs, and the
    worker queue's finished jobs.

    Paused, running and interrupted runs are never touched, nor a run another process
    holds. A run deleted whole takes its finished jobs along. Pass --keep-last,
    --older-than, --thread or --jobs-older-than.
    """
    from thinkgraph.storage.prune import PruneError, parse_duration

    if keep_last is None and older_than is None and thread is None and jobs_older_than is None:
        fail(
            "nothing to prune: pass --keep-last N, --older-than 30d, --thread ID or "
            "--jobs-older-than 7d"
        )
    age = jobs_age = None
    try:
        if older_than is not None:
            age = parse_duration(older_than, name="--older-than")
        if jobs_older_than is not None:
            jobs_age = parse_duration(jobs_older_than, name="--jobs-older-than")
    except PruneError as exc:
        fail(str(exc))
    url = existing_store(store)

    def go() -> None:
        from thinkgraph.agent import Agent
        from thinkgraph.llm import ScriptedModel
        from thinkgraph.storage import Store, sqlite_path

        with Agent(ScriptedModel([]), store=url) as agent:
            store_ = Store(agent.graph.checkpointer)  # type: ignore[arg-type]
            options: dict[str, Any] = {
                "status": agent.reader.status,  # read for the runs prune looks at, only
                "keep_last": keep_last,
                "older_than": age,
                "thread": thread,
                "jobs_older_than": jobs_age,
            }
            if not dry_run and not yes and sys.stdin.isatty():
                planned = store_.prune(**options, dry_run=True)
                report_table(planned, jobs_older_than)
                if not (planned.touched or planned.jobs) or not typer.confirm(
                    "delete these?", default=False
                ):
                    raise typer.Exit(0)
            path = sqlite_path(url)
            before = _file_size(path)
            report = store_.prune(**options, dry_run=dry_run)
            report_table(report, jobs_older_than)
            if thread is not None and report.skipped:
                raise typer.Exit(1)  # the one run asked for is still there
            if dry_run or not (report.touched or report.jobs):
                return
            if path is not None and vacuum:
                from thinkgraph.storage.prune import vacuum as reclaim

                if reclaim(store_.saver):
                    after = _file_size(path)
                    typer.echo(f"{path}: {human_size(before)} -> {human_size(after)} after VACUUM")
                else:
                    typer.echo(
                        f"{path} is in use by another process: run `sqlite3 {path} VACUUM` "
                        "later to shrink the file"
                    )
            elif path is not None:
                typer.echo(f"run `sqlite3 {path} VACUUM` to give the space back to the disk")
            else:
                typer.echo(
                    "PostgreSQL reuses the freed space; run VACUUM FULL on its tables "
                    "to shrink the files"
                )

    guarded(go)


def report_table(report: Any, jobs_older_than: str | None = None) -> None:
    """Print a prune report: one line per run, then the totals, then the jobs deleted for
    their age (when `jobs_older_than` was asked)."""
    if report.runs:
        _runs_table(report)
    elif jobs_older_than is None:
        typer.echo("nothing to prune")
    if jobs_older_than is None:
        return
    if report.old_jobs is None:
        typer.echo("no worker jobs in this store: the job queue lives in PostgreSQL")
        return
    count = report.old_jobs
    verb = "would delete" if report.dry_run else "deleted"
    line = f"{verb} {count} finished job{'s' * (count != 1)} older than {jobs_older_than}"
    line += " (those of paused or running runs are kept)"
    if report.dry_run:
        line += "; dry run: nothing was deleted"
    typer.echo(line)


def _runs_table(report: Any) -> None:
    typer.echo(
        f"{'thread':<20} {'action':<14} {'checkpoints':>11} {'writes':>7} {'blobs':>6} "
        f"{'size':>9} {'kept':>5}"
    )
    for run in report.runs:
        if run.action == "skip":
            typer.echo(f"{run.thread_id:<20} skip: {run.reason}")
            continue
        action = f"would {run.action}" if report.dry_run else run.action
        typer.echo(
            f"{run.thread_id:<20} {action:<14} {run.checkpoints:>11} {run.writes:>7} "
            f"{run.blobs:>6} {human_size(run.size):>9} {run.kept:>5}"
        )
    runs = len(report.touched)
    verb = "would delete" if report.dry_run else "deleted"
    line = (
        f"{verb}: {report.checkpoints} checkpoints, {report.writes} writes, "
        f"{report.blobs} blobs ({human_size(report.size)}) of {runs} run{'s' * (runs != 1)}"
    )
    jobs = sum(run.jobs for run in report.runs)
    if jobs:
        line += f", and {'its' if runs == 1 else 'their'} {jobs} job{'s' * (jobs != 1)}"
    if report.skipped:
        line += f"; skipped {len(report.skipped)}"
    if report.dry_run:
        line += " (dry run: nothing was deleted)"
    typer.echo(line)


def human_size(size: int) -> str:
    """Bytes as a short figure: 812 B, 14.2 kB, 3.1 MB."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"  # pragma: no cover - the loop returns


def _file_size(path: Any) -> int:
    """A SQLite store's size on disk: the database and its write-ahead log."""
    if path is None:
        return 0
    total = 0
    for part in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):  # no log file: nothing to add
            total += part.stat().st_size
    return total
