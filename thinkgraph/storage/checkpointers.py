"""Open a LangGraph checkpointer from a URL: memory://, sqlite:///path, postgresql://…

Every backend is LangGraph's own saver. What this module adds is the tuning (WAL for
SQLite), a serializer that revives only thinkgraph's own record types, and errors that say
what to do when a store cannot be opened, holds something that is not ours, or fails under
a command (`storage_fault`: damaged, full, unreachable).
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
)
from langgraph.types import Send

from thinkgraph._langgraph import DeltaSnapshot, ext_hook_of, serializer_with_hook
from thinkgraph.errors import StorageError, ThinkgraphError
from thinkgraph.state import (
    STEP_TYPES,
    BaseStep,
    Counters,
    PackedSteps,
    RunInfo,
    ToolCall,
    Verdict,
    revive_steps,
)
from thinkgraph.storage import sqlite
from thinkgraph.storage.memory import MemoryStore
from thinkgraph.storage.threaded import ThreadedAsyncSaver
from thinkgraph.types import Breakpoints, NextAction, StepLimits
from thinkgraph.values import storable

__all__ = [
    "DEFAULT_STORE",
    "close_checkpointer",
    "is_postgres_url",
    "open_checkpointer",
    "serializer",
    "sqlite_path",
    "steps_left_packed",
    "storage_fault",
]

DEFAULT_STORE = "sqlite:///.thinkgraph/runs.db"
"""The embedded default: a SQLite file under .thinkgraph/ in the working directory."""

_NON_STR_KEYS = ormsgpack.OPT_NON_STR_KEYS


_RECORD_TYPES: list[type[Any]] = [
    *STEP_TYPES,
    ToolCall,
    Verdict,
    Counters,
    RunInfo,
    StepLimits,
    Breakpoints,
    NextAction,
]
"""The records a run's channels hold, revived from a prebuilt table."""

_ALSO_ALLOWED = [("thinkgraph.policies.base", "Decision")]
"""Records a checkpoint may hold that are not the store's to import: a policy's Decision
(a node of a user's may keep one in a channel). Revived by LangGraph's allowlisted hook,
which imports the class only when a stored value names it."""


def serializer(extra_types: list[type[Any]] | None = None) -> JsonPlusSerializer:
    """The checkpoint serializer: revives thinkgraph's records and nothing else.

    LangGraph's default serializer would import and construct any class named in a stored
    checkpoint. Restricting it to our own record types means a tampered database cannot
    make a resume execute arbitrary constructors.

    Loading a run revives every step and every small channel of every checkpoint on the
    way back to the last chain snapshot, so reviving is the cost of a resume. Our own types
    are revived from a prebuilt table (no import or allowlist look-up per object); any
    other type goes through LangGraph's hook and its allowlist.
    """
    types: list[type[Any]] = [*_RECORD_TYPES, PackedSteps, *(extra_types or [])]
    allowed = [*((t.__module__, t.__qualname__) for t in types), *_ALSO_ALLOWED]
    fallback = JsonPlusSerializer(allowed_msgpack_modules=allowed)
    hook = _fast_ext_hook({(t.__module__, t.__qualname__): t for t in types}, fallback)
    return serializer_with_hook(_PackingSerializer, hook, allowed_msgpack_modules=allowed)


def _is_steps(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], BaseStep)


def pack_steps(steps: list[BaseStep]) -> PackedSteps:
    """Steps as one record (see `PackedSteps`).

    A step is made storable when it is made (see `BaseStep`), but one changed afterwards
    (`model_copy(update=...)` skips that) may still hold a value msgpack cannot encode: it
    is stored in its nearest storable form, never left to stop the run here.
    """
    fields = [s.model_dump() for s in steps]
    try:
        return PackedSteps(blob=ormsgpack.packb(fields))
    except TypeError:  # a lone surrogate, an integer over 64 bits, nesting too deep
        return PackedSteps(blob=ormsgpack.packb(storable(fields)))


def unpack_steps(packed: PackedSteps) -> list[BaseStep]:
    """The steps of a packed record, revived in one validation."""
    return revive_steps(_stored_fields(packed.blob))


def _stored_fields(blob: bytes) -> list[Any]:
    """The steps' fields in a packed record, as `revive_steps` takes them.

    Steps are revived without being made storable again (see `revive_steps`), and what
    they hold need not be: msgpack has no lone surrogate and no integer wider than 64
    bits, and nesting deeper than `MAX_DEPTH` (a step changed with `model_copy`) is what
    every reader and writer of a run handles up to the 254 levels the writer encodes (a
    deeper value is cut when it is next written). The one value msgpack holds that would
    reach a reader is a non-finite float (a step changed with `model_copy`, a record
    written by other code): its encoding is looked for in one scan of the bytes, and only
    when it is there are the steps walked and made storable (a match inside other bytes
    costs that walk, nothing else).
    """
    fields: list[Any] = ormsgpack.unpackb(blob)
    return [storable(f) for f in fields] if _NON_FINITE.search(blob) else fields


_NON_FINITE = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]|\xca[\x7f\xff][\x80-\xff]")
"""msgpack's encoding of NaN or an infinity: a float64 or float32 of all-ones exponent."""


_STEPS_LEFT_PACKED: ContextVar[bool] = ContextVar("thinkgraph_steps_left_packed", default=False)


@contextmanager
def steps_left_packed() -> Iterator[None]:
    """Within this block, stored steps load as their `PackedSteps` record, not revived.

    For reading a checkpoint's small channels when a whole chain may be stored beside
    them (a paused run's snapshot): reviving its steps would be most of the read.
    """
    token = _STEPS_LEFT_PACKED.set(True)
    try:
        yield
    finally:
        _STEPS_LEFT_PACKED.reset(token)


class _PackingSerializer(JsonPlusSerializer):
    """Packs lists of steps on the way in; the ext hook unpacks them on the way out."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if _is_steps(obj):
            obj = pack_steps(obj)  # a node's write to the chain
        elif isinstance(obj, DeltaSnapshot) and _is_steps(obj.value):
            obj = DeltaSnapshot(pack_steps(obj.value))  # a chain snapshot (per-value savers)
        elif isinstance(obj, dict) and isinstance(obj.get("channel_values"), dict):
            values = obj["channel_values"]  # a whole checkpoint (SQLite)
            packed = {
                k: DeltaSnapshot(pack_steps(v.value))
                for k, v in values.items()
                if isinstance(v, DeltaSnapshot) and _is_steps(v.value)
            }
            if packed:
                obj = {**obj, "channel_values": {**values, **packed}}
        try:
            return super().dumps_typed(obj)
        except TypeError:
            # A channel holding a value msgpack cannot encode (set by a node of a user's, or
            # by hand): stored in its nearest storable form rather than stopping the run at
            # this checkpoint and at every resume after it (see `thinkgraph.values`).
            return super().dumps_typed(storable(obj))

    def loads_many(self, items: Iterable[tuple[str, bytes]]) -> list[Any]:
        """Decode many stored values; the steps of all of them revive in one validation.

        A resume replays every chain write since the last snapshot (hundreds for a long
        run); validating their steps together saves the fixed cost of each validation.
        """
        values: list[Any] = []
        packed: list[tuple[int, list[Any]]] = []
        for item in items:
            blob = _packed_steps_blob(*item)
            if blob is None:
                values.append(self.loads_typed(item))
            else:
                fields = _stored_fields(blob)
                packed.append((len(values), fields))
                values.append(None)
        if packed:
            steps = revive_steps([f for _, fields in packed for f in fields])
            start = 0
            for position, fields in packed:
                values[position] = steps[start : start + len(fields)]
                start += len(fields)
        return values


class _Ext:
    """An ext value left encoded: its type code and its bytes."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code = code
        self.data = data


_PACKED_NAME = [PackedSteps.__module__, PackedSteps.__qualname__]


def _packed_steps_blob(type_tag: str, data: bytes) -> bytes | None:
    """The inner blob of a stored `PackedSteps` (a node's chain write), else None."""
    if type_tag != "msgpack":
        return None
    outer = ormsgpack.unpackb(data, ext_hook=_Ext)
    if not isinstance(outer, _Ext) or outer.code != EXT_PYDANTIC_V2:
        return None
    parts = ormsgpack.unpackb(outer.data, ext_hook=_Ext)
    if parts[:2] != _PACKED_NAME or not isinstance(parts[2], dict):
        return None
    blob = parts[2].get("blob")
    return blob if isinstance(blob, bytes) else None


def _fast_ext_hook(
    classes: dict[tuple[str, str], type[Any]], fallback: JsonPlusSerializer
) -> Callable[[int, bytes], Any]:
    slow = ext_hook_of(fallback)  # LangGraph's own hook, for every other type
    # Loading a run decodes every ancestor checkpoint's small channels, which repeat from
    # one checkpoint to the next (the limits, the breakpoints, the next action). They are
    # frozen records, so one decoded instance can serve every identical encoding.
    shared: dict[tuple[int, bytes], Any] = {}
    shareable = {c for c in classes.values() if c not in STEP_TYPES and c is not PackedSteps}

    def hook(code: int, data: bytes) -> Any:
        key = (code, data)
        if key in shared:
            return shared[key]
        value = decode(code, data)
        if type(value) in shareable and len(data) < 1024:
            if len(shared) > 4096:
                shared.clear()
            shared[key] = value
        return value

    def decode(code: int, data: bytes) -> Any:
        if code == EXT_DELTA_SNAPSHOT:
            # Unpacked here (not by the slow hook) so the steps inside revive fast too.
            return DeltaSnapshot(ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS))
        if code in (EXT_PYDANTIC_V2, EXT_CONSTRUCTOR_SINGLE_ARG):
            parts = ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS)
            cls = classes.get((parts[0], parts[1]))
            if cls is PackedSteps:
                packed = PackedSteps(**parts[2])
                return packed if _STEPS_LEFT_PACKED.get() else unpack_steps(packed)
            if cls is not None:
                return cls(**parts[2]) if code == EXT_PYDANTIC_V2 else cls(parts[2])
        elif code == EXT_CONSTRUCTOR_POS_ARGS:
            # Every act task is stored as a Send(node, task): one per tool call.
            parts = ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS)
            if tuple(parts[:2]) == ("langgraph.types", "Send") and len(parts[2]) == 2:
                return Send(*parts[2])
        elif code == EXT_METHOD_SINGLE_ARG:
            # Every step's timestamp is stored as datetime.fromisoformat(...).
            parts = ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS)
            if tuple(parts[:2]) == ("datetime", "datetime") and parts[3] == "fromisoformat":
                return datetime.fromisoformat(parts[2])
        return slow(code, data)

    return hook


def open_checkpointer(url: str = DEFAULT_STORE) -> BaseCheckpointSaver[Any]:
    """Open the checkpoint store named by `url`.

    Args:
        url: ``memory://`` (in-process, lost at exit), ``sqlite:///relative/path.db`` or
            ``sqlite:////absolute/path.db`` (the embedded default, WAL mode), or
            ``postgresql://user@host:5432/db`` (for several workers; needs the
            ``thinkgraph[postgres]`` extra).

    Returns:
        A LangGraph checkpoint saver, set up and ready. Close it with `close_checkpointer`.

    Raises:
        StorageError: the URL is not understood, or the store cannot be opened, or it holds
            tables that are not a LangGraph checkpoint store.

    Example:
        >>> saver = open_checkpointer("memory://")
        >>> type(saver).__name__
        'MemoryStore'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise StorageError(
            f"store URL {url!r} has no scheme; use memory://, sqlite:///path.db "
            "or postgresql://user@host/db"
        )
    scheme = scheme.lower()
    if scheme == "memory":
        return MemoryStore(serde=serializer())
    if scheme == "sqlite":
        return _open_sqlite(url, rest)
    if scheme in _POSTGRES_SCHEMES:
        return _open_postgres(url)
    raise StorageError(
        f"unknown store scheme {scheme!r} in {url!r}; use memory://, sqlite:///path.db "
        "or postgresql://user@host/db"
    )


_POSTGRES_SCHEMES = ("postgres", "postgresql")


def is_postgres_url(url: str) -> bool:
    """Whether a store URL names a PostgreSQL database (the store workers share)."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.lower() in _POSTGRES_SCHEMES


def sqlite_path(url: str) -> Path | None:
    """The file a sqlite:/// store URL names, or None for another kind of store."""
    scheme, sep, rest = url.partition("://")
    return _sqlite_path(url, rest) if sep and scheme.lower() == "sqlite" else None


def _sqlite_path(url: str, rest: str) -> Path:
    # sqlite:///rel.db -> rest "/rel.db" -> "rel.db"; sqlite:////abs.db -> "/abs.db".
    if not rest.startswith("/") or rest == "/":
        raise StorageError(
            f"SQLite URL {url!r} needs a path: sqlite:///relative/path.db "
            "or sqlite:////absolute/path.db"
        )
    return Path(rest[1:])


def _open_sqlite(url: str, rest: str) -> BaseCheckpointSaver[Any]:
    return sqlite.open_sqlite(_sqlite_path(url, rest), serializer())


def _postgres() -> ModuleType:
    """The PostgreSQL store's module, imported when first needed: it needs the optional
    psycopg, and importing it costs every command that never opens a PostgreSQL store."""
    try:
        from thinkgraph.storage import postgres
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise StorageError(
            "PostgreSQL stores need the postgres extra: pip install 'thinkgraph[postgres]'"
        ) from exc
    return postgres


def _open_postgres(url: str) -> BaseCheckpointSaver[Any]:
    saver: BaseCheckpointSaver[Any] = _postgres().open_postgres(url, serializer())
    return saver


def storage_fault(exc: BaseException, url: str | None) -> StorageError | None:
    """The fault of the store at `url` behind `exc`, worded to say what to do; else None.

    Looks through `exc` and what caused it for an error of the store's driver that is a
    fault of the store, not of the code: a SQLite file that is damaged, not a database,
    full or unreadable; a PostgreSQL server that cannot be reached, dropped the connection
    or ran out of disk. Those reach the caller from anywhere (a LangGraph saver, a reader,
    the job queue), so they are classified here, once, for every command. A thinkgraph
    error other than a `StorageError` (a busy thread, say) already says what happened, so
    what caused it is not looked at.

    Args:
        exc: what a command raised.
        url: the store's URL, named in the message (without its password); None when not
            known.
    """
    for cause in _causes(exc):
        message = _fault_message(cause, url)
        if message is not None:
            return StorageError(message)
    return None


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, ThinkgraphError) and not isinstance(current, StorageError):
            continue
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        if current.__cause__ is not None:
            pending.append(current.__cause__)
        elif current.__context__ is not None and not current.__suppress_context__:
            pending.append(current.__context__)


def _fault_message(exc: BaseException, url: str | None) -> str | None:
    if isinstance(exc, sqlite3.Error):
        try:
            path = sqlite_path(url) if url else None
        except StorageError:
            path = None
        return sqlite.describe_fault(exc, path)
    # Only a program that imported psycopg can have an error of it to classify.
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(exc, psycopg.OperationalError):
        described: str | None = _postgres().describe_fault(
            exc, url if url and is_postgres_url(url) else None
        )
        return described
    return None


def close_checkpointer(saver: BaseCheckpointSaver[Any]) -> None:
    """Close the connection behind a saver opened by `open_checkpointer`."""
    if isinstance(saver, ThreadedAsyncSaver):
        saver.close()  # the calls in flight finish before the connection closes
