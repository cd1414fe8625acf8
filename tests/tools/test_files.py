"""files(root): read, list and write under one root; nothing outside it is reachable."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

import pytest

from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import ToolDefinitionError
from thinkgraph.state import ObservationStep, ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry, execute_call
from thinkgraph.tools.builtin import files

CTX = ToolContext.for_call("t", 1, "c1")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root with a file, a folder, and a secret next to (outside) it."""
    (tmp_path / "secret.txt").write_text("top secret")
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "readme.txt").write_text("hello")
    (work / "notes" / "todo.txt").write_text("buy milk")
    return work


def run(root: Path, name: str, writable: bool = False, **args: object) -> ToolResultStep:
    registry = ToolRegistry(files(root, writable=writable))
    return execute_call(registry, ToolCall(name=name, args=dict(args), id="c1"), CTX)


def refused(result: ToolResultStep) -> str:
    assert (result.ok, result.error_kind) == (False, "exception")
    assert result.error is not None
    return result.error


# -- what works -------------------------------------------------------------------------------


def test_read_returns_the_text(root: Path) -> None:
    assert run(root, "read_file", path="notes/todo.txt").output == "buy milk"


def test_a_path_that_goes_up_and_comes_back_inside_is_fine(root: Path) -> None:
    assert run(root, "read_file", path="notes/../readme.txt").output == "hello"


def test_list_shows_names_with_folders_marked(root: Path) -> None:
    assert run(root, "list_files").output == {
        "path": ".",
        "entries": ["notes/", "readme.txt"],
        "truncated": False,
    }
    assert run(root, "list_files", path="notes").output["entries"] == ["todo.txt"]


def test_a_long_file_is_read_in_parts_with_directions(root: Path) -> None:
    (root / "long.txt").write_text("abcdefghij")
    registry = ToolRegistry(files(root, max_bytes=4))
    first = execute_call(registry, ToolCall(name="read_file", args={"path": "long.txt"}), CTX)
    assert first.output == "abcd\n… [bytes 0-4 of 10; read on with offset=4]"
    rest = ToolCall(name="read_file", args={"path": "long.txt", "offset": 8})
    assert execute_call(registry, rest, CTX).output == "ij"


def test_list_is_cut_at_max_entries(root: Path) -> None:
    registry = ToolRegistry(files(root, max_entries=1))
    result = execute_call(registry, ToolCall(name="list_files", args={}), CTX)
    assert result.output == {"path": ".", "entries": ["notes/"], "truncated": True}


def test_write_creates_folders_and_replaces_the_file(root: Path) -> None:
    result = run(root, "write_file", writable=True, path="out/report.md", content="v1")
    assert (result.ok, result.output) == (True, "wrote 2 bytes to 'out/report.md'")
    run(root, "write_file", writable=True, path="out/report.md", content="v2")
    assert (root / "out" / "report.md").read_text() == "v2"


def test_the_tools_describe_themselves(root: Path) -> None:
    read, listing, write = files(root, writable=True, prefix="ws_")
    assert [t.name for t in (read, listing, write)] == [
        "ws_read_file",
        "ws_list_files",
        "ws_write_file",
    ]
    assert {t.kind for t in (read, listing, write)} == {"file_system"}
    assert (read.side_effects, listing.side_effects, write.side_effects) == (False, False, True)


# -- what is refused --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../secret.txt", "notes/../../secret.txt", ".."])
def test_dot_dot_out_of_the_root_is_refused(root: Path, path: str) -> None:
    tool_name = "list_files" if path == ".." else "read_file"
    error = refused(run(root, tool_name, path=path))
    assert error == (
        f"PermissionError: {path!r} leads outside the files root (through '..' or a "
        "symlink) and was refused; use a path inside the root"
    )


def test_an_absolute_path_is_refused_even_inside_the_root(root: Path) -> None:
    error = refused(run(root, "read_file", path=str(root / "readme.txt")))
    assert "is an absolute path; give a path relative to the files root" in error


def test_a_symlink_leading_out_of_the_root_is_refused(root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    (root / "up").symlink_to(root.parent, target_is_directory=True)
    assert "leads outside the files root" in refused(run(root, "read_file", path="link.txt"))
    assert "leads outside the files root" in refused(run(root, "list_files", path="up"))
    assert "leads outside" in refused(
        run(root, "write_file", writable=True, path="up/secret.txt", content="pwned")
    )
    assert (root.parent / "secret.txt").read_text() == "top secret"


def test_list_does_not_show_symlinks_that_lead_out_of_the_root(root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    (root / "up").symlink_to(root.parent, target_is_directory=True)
    (root / "notes" / "escape").symlink_to("../../", target_is_directory=True)
    (root / "dangling").symlink_to(root.parent / "nowhere")
    (root / "alias.txt").symlink_to(root / "readme.txt")
    (root / "inside").symlink_to(root / "notes", target_is_directory=True)
    assert run(root, "list_files").output["entries"] == [
        "alias.txt",
        "inside/",
        "notes/",
        "readme.txt",
    ]
    assert run(root, "list_files", path="notes").output["entries"] == ["todo.txt"]


def test_a_loop_of_symlinks_is_left_out_of_a_listing_and_refused_by_name(root: Path) -> None:
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    assert run(root, "list_files").output["entries"] == ["notes/", "readme.txt"]
    error = refused(run(root, "read_file", path="a"))
    assert "'a' is a loop of symlinks and leads nowhere; use another path" in error
    assert str(root) not in error


def test_a_symlink_that_stays_inside_the_root_is_followed(root: Path) -> None:
    (root / "alias.txt").symlink_to(root / "readme.txt")
    assert run(root, "read_file", path="alias.txt").output == "hello"


def test_a_hard_link_to_a_file_outside_the_root_is_neither_read_nor_overwritten(
    root: Path,
) -> None:
    # A hard link resolves inside the root yet is the very file outside it.
    os.link(root.parent / "secret.txt", root / "linked.txt")
    error = refused(run(root, "read_file", path="linked.txt"))
    assert error == (
        "PermissionError: 'linked.txt' has 2 hard links, so it may be a file outside the "
        "files root; only files with one link are read or written"
    )
    error = refused(run(root, "write_file", writable=True, path="linked.txt", content="pwned"))
    assert "'linked.txt' has 2 hard links" in error
    assert (root.parent / "secret.txt").read_text() == "top secret"


def test_a_named_pipe_is_refused_at_once_instead_of_blocking_a_thread(root: Path) -> None:
    pipe = root / "pipe"
    os.mkfifo(pipe)
    read_file, _, write_file = files(root, writable=True)
    outcomes: list[BaseException | object] = []

    def read_and_write() -> None:
        for tool, args in (
            (read_file, {"path": "pipe"}),
            (write_file, {"path": "pipe", "content": "x"}),
        ):
            try:
                outcomes.append(tool.run(tool.args_model(**args), CTX))
            except Exception as exc:
                outcomes.append(exc)

    worker = threading.Thread(target=read_and_write, daemon=True)
    worker.start()
    worker.join(timeout=2)
    try:
        assert not worker.is_alive(), "a tool blocked on the named pipe"
    finally:
        _unblock(pipe, worker)
    expected = "'pipe' is a named pipe, not a regular file; only regular files are read or written"
    assert [f"{type(o).__name__}: {o}" for o in outcomes] == [f"PermissionError: {expected}"] * 2


def _unblock(pipe: Path, worker: threading.Thread) -> None:
    """Open the other end of a pipe a stuck thread waits on, so the thread can end."""
    for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
        if not worker.is_alive():
            return
        with contextlib.suppress(OSError):
            os.close(os.open(pipe, flags))
        worker.join(timeout=1)


def test_other_special_files_are_refused(root: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "sock"))
        error = refused(run(root, "read_file", path="sock"))
    finally:
        server.close()
    assert error.startswith("PermissionError: 'sock' is a socket, not a regular file")


def test_a_refused_write_leaves_the_file_as_it_was(root: Path) -> None:
    # The check comes before any change: the old code truncated first, then wrote.
    os.link(root / "readme.txt", root / "second-name.txt")
    refused(run(root, "write_file", writable=True, path="readme.txt", content="new"))
    assert (root / "readme.txt").read_text() == "hello"


def test_the_opened_file_is_checked_not_just_the_path(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the file were swapped for a hard link between the path check and the open:
    # the path looks like a plain file, the descriptor tells the truth.
    os.link(root.parent / "secret.txt", root / "linked.txt")
    real_stat = os.stat
    plain = real_stat(root / "readme.txt")

    def stat_before_the_swap(path: object, *args: object, **kwargs: object) -> os.stat_result:
        return plain if str(path).endswith("linked.txt") else real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat_before_the_swap)
    assert "has 2 hard links" in refused(run(root, "read_file", path="linked.txt"))
    write = run(root, "write_file", writable=True, path="linked.txt", content="pwned")
    assert "has 2 hard links" in refused(write)
    monkeypatch.undo()
    assert (root.parent / "secret.txt").read_text() == "top secret"


def test_a_read_only_set_has_no_write_tool(root: Path) -> None:
    assert [t.name for t in files(root)] == ["read_file", "list_files"]
    result = run(root, "write_file", path="x.txt", content="no")
    assert result.error_kind == "unknown_tool"
    assert result.error == (
        "unknown tool 'write_file'. Did you mean 'read_file'? "
        "Available tools: read_file, list_files."
    )
    assert not (root / "x.txt").exists()


def test_system_errors_name_the_relative_path_only(root: Path) -> None:
    error = refused(run(root, "write_file", writable=True, path="readme.txt/x", content="x"))
    assert error == "FileExistsError: 'readme.txt/x': File exists"
    assert str(root) not in error


@pytest.mark.parametrize(
    ("tool_name", "path", "expected"),
    [
        ("read_file", "nope.txt", "FileNotFoundError: 'nope.txt' does not exist"),
        ("read_file", "notes", "IsADirectoryError: 'notes' is a directory"),
        ("list_files", "readme.txt", "NotADirectoryError: 'readme.txt' is a file"),
    ],
)
def test_wrong_kinds_of_paths_say_what_they_are(
    root: Path, tool_name: str, path: str, expected: str
) -> None:
    assert refused(run(root, tool_name, path=path)).startswith(expected)


def test_binary_files_are_not_read(root: Path) -> None:
    (root / "image.png").write_bytes(b"\x89PNG\0\0")
    assert "binary file (6 bytes)" in refused(run(root, "read_file", path="image.png"))


def test_a_missing_root_is_a_definition_error(tmp_path: Path) -> None:
    with pytest.raises(ToolDefinitionError, match="is not a directory; create it"):
        files(tmp_path / "missing")


# -- in a run ---------------------------------------------------------------------------------


def test_an_agent_reads_a_file_and_an_escape_becomes_an_observation(root: Path) -> None:
    model = ScriptedModel(
        [
            'Thought: peek\nAction: read_file\nAction Input: {"path": "../secret.txt"}',
            'Thought: read it\nAction: read_file\nAction Input: {"path": "readme.txt"}',
            "Thought: done\nFinal Answer: hello",
        ]
    )
    with Agent(model, files(root), store="memory://") as agent:
        result = agent.run("what does the readme say?")
    observations = [s for s in result.chain if isinstance(s, ObservationStep)]
    assert [o.is_error for o in observations] == [True, False]
    assert "leads outside the files root" in observations[0].text
    assert (observations[1].text, result.answer) == ("hello", "hello")
    assert os.fspath(root.parent) not in observations[0].text
