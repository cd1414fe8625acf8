"""`files`: read, list and (optionally) write files under one root directory.

Every path the model gives is taken relative to the root and resolved with
`Path.resolve()`, which follows symlinks and collapses `..`; the result must still lie
inside the root. So `../secret`, `/etc/passwd` and a symlink pointing out of the root are
all refused with an observation that says why, while `notes/../todo.txt` (which stays
inside) is fine. A listing leaves out the symlinks that lead out of the root.

Only regular files with exactly one link are read or written. A hard link resolves inside
the root yet *is* the file it links to, wherever that is, so a file with more than one
link is refused; so are named pipes (reading one would block its thread for good),
sockets and devices. The check is made on the file actually opened (`fstat` of the
descriptor, opened with `O_NOFOLLOW` and `O_NONBLOCK`), so a file swapped for a symlink,
a pipe or a link between a check and the open is refused too, and a write checks before
it changes anything (it truncates only after the check). A directory swapped for a
symlink in that instant is not caught: keep other writers out of the root.

Example:
    >>> from thinkgraph import Agent
    >>> agent = Agent("openai/gpt-4o-mini", files("workspace", writable=True))  # doctest: +SKIP
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools.base import Tool, ToolContext, ToolKind

__all__ = ["FileRoot", "ListFilesTool", "ReadFileTool", "WriteFileTool", "files"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a named pipe must not wait for a writer
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


class FileRoot:
    """The directory the file tools are confined to, and the check that keeps them there."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(root).expanduser().resolve()
        if not path.is_dir():
            raise ToolDefinitionError(
                f"files root {str(path)!r} is not a directory; create it before files(...)"
            )
        self.path = path

    def resolve(self, relative: str) -> Path:
        """The real path of `relative` under the root.

        Raises:
            PermissionError: the path is absolute or leads outside the root.
        """
        if not relative.strip():
            relative = "."
        if Path(relative).is_absolute():
            raise PermissionError(
                f"{relative!r} is an absolute path; give a path relative to the files root, "
                "e.g. 'notes/todo.txt'"
            )
        try:
            target = (self.path / relative).resolve()
        except RuntimeError:  # a symlink loop; its message names the host's path
            raise PermissionError(
                f"{relative!r} is a loop of symlinks and leads nowhere; use another path"
            ) from None
        if not self.holds(target):
            raise PermissionError(
                f"{relative!r} leads outside the files root (through '..' or a symlink) and "
                "was refused; use a path inside the root"
            )
        return target

    def holds(self, path: str | os.PathLike[str]) -> bool:
        """Whether `path`, with every symlink in it followed, lies inside the root.

        A loop of symlinks leads nowhere, so nothing inside the root either.
        """
        try:
            return Path(path).resolve().is_relative_to(self.path)
        except (RuntimeError, OSError):
            return False

    def show(self, target: Path) -> str:
        """`target` as the model should write it: relative to the root, '/'-separated."""
        relative = target.relative_to(self.path).as_posix()
        return relative if relative != "." else "."

    def open_file(self, target: Path, flags: int) -> int:
        """Open `target` (a path from `resolve`) and return the descriptor, if it is safe.

        The descriptor is checked, not the path: it must be a regular file with one link
        (see the module docstring). A write must not pass `O_TRUNC`: truncate after this.

        Raises:
            PermissionError: a special file or a file with more than one link.
            FileNotFoundError: (reading) there is no such file.
        """
        shown = self.show(target)
        try:
            # Refuse what is visibly wrong before opening: opening a device may do something.
            _check_file(os.stat(target), shown)
        except FileNotFoundError:
            if not flags & os.O_CREAT:
                raise FileNotFoundError(f"{shown!r} does not exist under the files root") from None
        try:
            fd = os.open(target, flags | _NOFOLLOW | _NONBLOCK, 0o644)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket, or a pipe opened to write with no reader
                _check_file(os.stat(target), shown)
            raise
        try:
            _check_file(os.fstat(fd), shown)
        except BaseException:
            os.close(fd)
            raise
        return fd


def _check_file(status: os.stat_result, shown: str) -> None:
    """Refuse anything but a regular file with exactly one link."""
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{shown!r} is a directory; give a file path (list it to look in)")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        raise PermissionError(
            f"{shown!r} is {kind}, not a regular file; only regular files are read or written"
        )
    if status.st_nlink != 1:
        raise PermissionError(
            f"{shown!r} has {status.st_nlink} hard links, so it may be a file outside the "
            "files root; only files with one link are read or written"
        )


class _ReadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the file, relative to the root, e.g. 'notes/todo.txt'")
    offset: int = Field(0, ge=0, description="the byte to start at, to read a long file on")


class _ListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(".", description="the directory, relative to the root; '.' is the root")


class _WriteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the file, relative to the root; missing folders are made")
    content: str = Field(description="the whole new content of the file (UTF-8 text)")


class _FileTool(Tool):
    kind: ToolKind = "file_system"

    def __init__(self, root: FileRoot, name: str, description: str) -> None:
        self.root = root
        self.name = name
        self.description = description
        self.check_definition()

    def run(self, args: BaseModel, ctx: ToolContext) -> Any:
        try:
            return self._run(args)
        except OSError as exc:
            if exc.filename is None:
                raise  # one of our own refusals: its message is already for the model
            # The system's message names the absolute path; the model knows only the
            # relative one, and the host's layout is none of its business.
            shown = getattr(args, "path", "?")
            raise type(exc)(f"{shown!r}: {exc.strerror or exc}") from None

    def _run(self, args: BaseModel) -> Any:
        raise NotImplementedError


class ReadFileTool(_FileTool):
    """Reads a text file under the root, `max_bytes` at a time; made by `files`."""

    args_model = _ReadArgs
    returns = "the text; a last line says where to go on when the file is longer"

    def __init__(self, root: FileRoot, name: str, max_bytes: int) -> None:
        super().__init__(
            root,
            name,
            f"Read a UTF-8 text file under the files root, at most {max_bytes} bytes per "
            "call (pass offset to read on). Paths are relative to the root.",
        )
        self.max_bytes = max_bytes

    def _run(self, args: BaseModel) -> str:
        a = cast(_ReadArgs, args)
        target = self.root.resolve(a.path)
        shown = self.root.show(target)
        fd = self.root.open_file(target, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(a.offset)
            data = f.read(self.max_bytes)
        if b"\0" in data:
            raise ValueError(f"{shown!r} is a binary file ({size} bytes); only text is read")
        # A cut may split a UTF-8 sequence; the replacement character marks it.
        text = data.decode("utf-8", errors="replace")
        end = a.offset + len(data)
        if end < size:
            text += f"\n… [bytes {a.offset}-{end} of {size}; read on with offset={end}]"
        return text


class ListFilesTool(_FileTool):
    """Lists a directory under the root; made by `files`."""

    args_model = _ListArgs
    returns = '{"path": dir, "entries": [names, directories end in "/"], "truncated": bool}'

    def __init__(self, root: FileRoot, name: str, max_entries: int) -> None:
        super().__init__(
            root,
            name,
            "List the files and folders in a directory under the files root (folders end "
            "in '/'). Paths are relative to the root; '.' is the root itself.",
        )
        self.max_entries = max_entries

    def _run(self, args: BaseModel) -> dict[str, Any]:
        target = self.root.resolve(cast(_ListArgs, args).path)
        shown = self.root.show(target)
        if not target.is_dir():
            what = "a file" if target.exists() else "missing"
            raise NotADirectoryError(f"{shown!r} is {what}, not a directory")
        # A symlink that leads out of the root is not listed: its name would tell of a
        # place the tools cannot reach. Only a symlink can: `target` itself is inside.
        entries = sorted(
            entry.name + ("/" if entry.is_dir() else "")
            for entry in os.scandir(target)
            if not entry.is_symlink() or self.root.holds(entry.path)
        )
        return {
            "path": shown,
            "entries": entries[: self.max_entries],
            "truncated": len(entries) > self.max_entries,
        }


class WriteFileTool(_FileTool):
    """Writes a whole text file under the root; made by `files(..., writable=True)`.

    Only whole-file writes, no append: writing the same content again is harmless, so a
    call re-run after a crash cannot duplicate anything.
    """

    args_model = _WriteArgs
    side_effects = True
    returns = "what was written where"

    def __init__(self, root: FileRoot, name: str) -> None:
        super().__init__(
            root,
            name,
            "Write a UTF-8 text file under the files root, replacing it if it exists; "
            "missing folders are created. Paths are relative to the root.",
        )

    def _run(self, args: BaseModel) -> str:
        a = cast(_WriteArgs, args)
        target = self.root.resolve(a.path)
        shown = self.root.show(target)
        if target == self.root.path or target.is_dir():
            raise IsADirectoryError(f"{shown!r} is a directory; give a file path")
        target.parent.mkdir(parents=True, exist_ok=True)
        data = a.content.encode("utf-8")
        # No O_TRUNC: the file is emptied only once the opened file has passed the checks.
        fd = self.root.open_file(target, os.O_WRONLY | os.O_CREAT)
        with os.fdopen(fd, "wb") as f:
            f.truncate(0)
            f.write(data)
        return f"wrote {len(data)} bytes to {shown!r}"


def files(
    root: str | os.PathLike[str],
    *,
    writable: bool = False,
    prefix: str = "",
    max_bytes: int = 100_000,
    max_entries: int = 500,
) -> list[Tool]:
    """Tools to read, list and (when `writable`) write files under `root`.

    Pass the list to `Agent(tools=...)`, alone or spread among other tools. A read-only
    set has no write tool at all, so the model is never offered one it may not use.

    Example:
        >>> tools = files(".", writable=False)
        >>> [t.name for t in tools]
        ['read_file', 'list_files']

    Args:
        root: the directory the tools may touch; it must exist.
        writable: add `write_file` (a tool with side effects).
        prefix: put before each tool's name, to tell several roots apart.
        max_bytes: the most bytes one `read_file` call returns.
        max_entries: the most entries one `list_files` call returns.

    Raises:
        ToolDefinitionError: `root` is not a directory, or a limit is below 1.
    """
    if max_bytes < 1 or max_entries < 1:
        raise ToolDefinitionError(
            f"max_bytes={max_bytes}, max_entries={max_entries}; use 1 or more for both"
        )
    confined = FileRoot(root)
    tools: list[Tool] = [
        ReadFileTool(confined, f"{prefix}read_file", max_bytes),
        ListFilesTool(confined, f"{prefix}list_files", max_entries),
    ]
    if writable:
        tools.append(WriteFileTool(confined, f"{prefix}write_file"))
    return tools
