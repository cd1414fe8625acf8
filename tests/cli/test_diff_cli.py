"""`thinkgraph diff RUN_A RUN_B` and `thinkgraph draw --diff RUN_A RUN_B` on a SQLite store."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.views._diff_runs import OTHER_PASSWORD, PASSWORD, record
from thinkgraph.cli import app

runner = CliRunner()

needs_graphviz = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


@pytest.fixture
def store(sqlite_url: str) -> str:
    record(sqlite_url, "base", "again", "other-args", "other-password", "at-once", "other-words")
    return sqlite_url


def test_the_same_runs_exit_zero(store: str) -> None:
    result = runner.invoke(app, ["diff", "base", "again", "--store", store])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("diff base again: same\nsame: the runs took the same steps\n")


def test_diverging_runs_exit_one_and_name_the_first_divergence(store: str) -> None:
    result = runner.invoke(app, ["diff", "base", "other-args", "--store", store])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[:3] == [
        "diff base other-args: diverged",
        "first divergence: args at think#2: add is called with other arguments (args.b) (step #8)",
        "  args.b: 40 → 41",
    ]


def test_runs_that_differ_in_content_only_exit_one_too(store: str) -> None:
    result = runner.invoke(app, ["diff", "base", "other-words", "--store", store])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[:2] == [
        "diff base other-words: changed",
        "changed: same route, tools, arguments and answer; 2 steps differ in content",
    ]


def test_a_route_divergence_in_json(store: str) -> None:
    result = runner.invoke(app, ["diff", "base", "at-once", "--store", store, "-f", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.output)
    assert doc["divergence"]["kind"] == "route" and doc["divergence"]["where"] == "think#1"
    assert (doc["divergence"]["a"], doc["divergence"]["b"]) == ("act", "finalize")


@pytest.mark.parametrize("fmt", ["text", "md", "markdown", "json", "html"])
def test_every_format_masks_a_sensitive_argument(store: str, fmt: str) -> None:
    result = runner.invoke(app, ["diff", "base", "other-password", "--store", store, "-f", fmt])
    assert result.exit_code == 1, result.output
    assert PASSWORD not in result.output and OTHER_PASSWORD not in result.output
    assert "args.password" in result.output and "***" in result.output


def test_html_holds_the_diagram_of_both_paths(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no Graphviz: Mermaid text
    out = tmp_path / "diff.html"
    args = ["diff", "base", "at-once", "--store", store, "-f", "html", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and result.output == f"wrote {out} (html, diverged)\n"
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "first divergence: route" in page
    assert "classDef diverge" in page and "class think diverge;" in page


def test_an_unknown_run_is_one_line_naming_how_to_list_runs(store: str) -> None:
    result = runner.invoke(app, ["diff", "base", "x", "--store", store])
    assert result.exit_code == 2
    assert result.output == (
        f"error: no run 'x' in {store}; list runs with: thinkgraph runs --store {store}\n"
    )


def test_a_bad_format_is_one_line(store: str) -> None:
    result = runner.invoke(app, ["diff", "base", "again", "--store", store, "-f", "pdf"])
    assert result.exit_code == 2
    assert result.output == "error: --format 'pdf' is not supported; use one of text, md, " \
        "json, html\n"  # fmt: skip


def test_draw_diff_marks_both_paths_in_mermaid_and_ascii(store: str) -> None:
    mermaid = runner.invoke(app, ["draw", "--diff", "base", "at-once", "--store", store])
    assert mermaid.exit_code == 0, mermaid.output
    assert mermaid.output.startswith("graph TD;\n\t%% A: base · B: at-once\n")
    assert '\tthink["think<br/>A×3 B×1<br/>first divergence: route"]' in mermaid.output
    assert "\tclass act,observe a;" in mermaid.output.replace("observe,act", "act,observe")
    args = ["draw", "--diff", "base", "at-once", "--store", store, "-f", "ascii"]
    ascii_ = runner.invoke(app, args)
    assert ascii_.exit_code == 0, ascii_.output
    assert "think  [Ax3 Bx1]  << FIRST DIVERGENCE: route" in ascii_.output
    assert "act  [A only]  [Ax2]" in ascii_.output


def test_draw_diff_of_an_unknown_run_or_format_is_one_line(store: str) -> None:
    unknown = runner.invoke(app, ["draw", "--diff", "nope", "base", "--store", store])
    assert unknown.exit_code == 2 and unknown.output.startswith("error: no run 'nope' in ")
    bad = runner.invoke(app, ["draw", "--diff", "base", "again", "--store", store, "-f", "gif"])
    assert bad.exit_code == 2
    assert bad.output == "error: --format 'gif' is not supported; use one of mermaid, " \
        "ascii, dot, svg, png\n"  # fmt: skip


def test_draw_diff_in_dot_styles_each_branch(store: str) -> None:
    result = runner.invoke(
        app, ["draw", "--diff", "base", "at-once", "--store", store, "-f", "dot"]
    )
    assert result.exit_code == 0, result.output
    assert 'label="A: base · B: at-once"' in result.output
    assert '"think" [label="think\\nA×3 B×1\\nfirst divergence: route", fillcolor="#f8d7da"' in (
        result.output
    )
    assert '"act" -> "observe" [label="A", color="#0d6efd", penwidth="2.5"];' in result.output


@needs_graphviz
def test_draw_diff_in_svg_and_the_html_page_embeds_it(store: str, tmp_path: Path) -> None:
    svg = runner.invoke(app, ["draw", "--diff", "base", "at-once", "--store", store, "-f", "svg"])
    assert svg.exit_code == 0 and "<svg" in svg.output and "first divergence: route" in svg.output
    page = runner.invoke(app, ["diff", "base", "at-once", "--store", store, "-f", "html"]).output
    assert "<svg" in page and '<pre class="mermaid">' not in page


def test_diff_reads_both_runs_from_each_durable_store(store_url: str) -> None:
    suffix = f"-{uuid.uuid4().hex[:8]}"  # the PostgreSQL store is shared between tests
    record(store_url, "base", "at-once", suffix=suffix)
    args = ["diff", f"base{suffix}", f"at-once{suffix}", "--store", store_url]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[1] == (
        f"first divergence: route at think#1: base{suffix} goes to act (step #4), "
        f"at-once{suffix} goes to finalize (step #3)"
    )
