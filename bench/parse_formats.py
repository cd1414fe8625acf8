"""``python -m bench.parse_formats``: what the text policy's parse costs per reply, by size.

Issue 27: the one parser of tool-call texts (`thinkgraph.policies.react_text.parse`) must cost
no worse than linear in the reply's length, whatever the format — including a hostile reply
made of nothing but a format's openers. Each reply is built at 10 KB and at 100 KB (a long
argument or a long reasoning block, as a model writing a file or thinking at length does):

- ``react``: Thought / Action / Action Input with a long argument;
- ``hermes``: a long ``<think>`` block, then a ``<tool_call>`` with a long argument;
- ``harmony``: gpt-oss's analysis channel, then a call on the commentary channel;
- ``pythonic``: ``[write_file(path=…, content=…)]``;
- ``hostile tags`` / ``hostile brackets`` / ``hostile spaces``: the size in ``<tool_call>``
  openers, in ``[``, in spaces.

A sample parses a size's reply repeatedly, so every sample parses about 1 MB of text;
`REPEAT` samples per size, the sizes interleaved, their median. The figure that matters is
the cost per KB at 100 KB over the cost per KB at 10 KB: 1.0× is linear, and the goal is at
most `LINEAR_LIMIT`. Parsing is pure computation on a string, so it is timed in the calling
process.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FORMATS", "LINEAR_LIMIT", "SIZES_KB", "ParseSample", "markdown", "measure", "reply"]

SIZES_KB = (10, 100)
"""The reply sizes compared."""
REPEAT = 5
"""Samples per format and size; the median is reported."""
LINEAR_LIMIT = 2.0
"""The most the per-KB cost at the large size may be, as a multiple of the small size's."""
KB = 1024
PARSED_PER_SAMPLE_KB = 1000
"""Each sample parses a reply as often as it takes to read about this much text."""

_LINE = "The quarterly figures rose by 4.2 percent, led by exports and services. "


def _filler(size: int) -> str:
    """Prose of exactly `size` characters, in lines, safe inside a JSON or Python string."""
    line = _LINE.strip() + "\\n"  # an escaped newline inside the string literal
    text = (line * (size // len(line) + 1))[:size]
    return text[:-1] + " " if text.endswith("\\") else text  # never a dangling escape


def _react(size: int) -> str:
    head = 'Thought: I will save the report.\nAction: write_file\nAction Input: {"path": '
    head += '"report.txt", "content": "'
    return head + _filler(size - len(head) - 2) + '"}'


def _hermes(size: int) -> str:
    think = "<think>\n" + _LINE * (size // 2 // len(_LINE)) + "\n</think>\n\n"
    head = '<tool_call>\n{"name": "write_file", "arguments": {"path": "report.txt", "content": "'
    tail = '"}}\n</tool_call>'
    return think + head + _filler(size - len(think) - len(head) - len(tail)) + tail


def _harmony(size: int) -> str:
    analysis = "<|channel|>analysis<|message|>" + _LINE * (size // 2 // len(_LINE)) + "<|end|>"
    head = (
        "<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json"
        '<|message|>{"path": "report.txt", "content": "'
    )
    tail = '"}<|call|>'
    return analysis + head + _filler(size - len(analysis) - len(head) - len(tail)) + tail


def _pythonic(size: int) -> str:
    head = '[write_file(path="report.txt", content="'
    return head + _filler(size - len(head) - 3) + '")]'


def _repeated(unit: str) -> Callable[[int], str]:
    return lambda size: (unit * (size // len(unit) + 1))[:size]


FORMATS: dict[str, Callable[[int], str]] = {
    "react": _react,
    "hermes": _hermes,
    "harmony": _harmony,
    "pythonic": _pythonic,
    "hostile tags": _repeated("<tool_call>"),
    "hostile brackets": _repeated("["),
    "hostile spaces": _repeated(" "),
}
"""Each format's reply of a given size in characters."""


def reply(fmt: str, kb: int) -> str:
    """The reply of format `fmt`, `kb` KB long."""
    return FORMATS[fmt](kb * KB)


@dataclass(frozen=True, slots=True)
class ParseSample:
    """The median seconds one parse took, by format and reply size."""

    sizes_kb: tuple[int, ...]
    seconds: dict[str, dict[int, float]]
    """Format → size in KB → median seconds per parse."""
    kinds: dict[str, str]
    """Format → what the parser made of its largest reply (tool_calls, final or error)."""

    def ratio(self, fmt: str) -> float | None:
        """The per-KB cost at the largest size over the smallest's; 1.0 is linear."""
        small, large = min(self.sizes_kb), max(self.sizes_kb)
        times = self.seconds[fmt]
        if small == large or not times.get(small):
            return None
        return (times[large] / large) / (times[small] / small)

    @property
    def worst(self) -> tuple[str, float] | None:
        """The format whose cost grows the most, and its ratio."""
        ratios = [(fmt, r) for fmt in self.seconds if (r := self.ratio(fmt)) is not None]
        return max(ratios, key=lambda item: item[1]) if ratios else None


def measure(
    sizes_kb: tuple[int, ...] = SIZES_KB,
    repeat: int = REPEAT,
    log: Callable[[str], None] | None = None,
    per_sample_kb: int = PARSED_PER_SAMPLE_KB,
) -> ParseSample:
    """Time the parse of every format's reply at every size, each sample reading about
    `per_sample_kb` KB of text."""
    from thinkgraph.policies.react_text import parse

    seconds: dict[str, dict[int, float]] = {}
    kinds: dict[str, str] = {}
    for fmt in FORMATS:
        texts = {kb: reply(fmt, kb) for kb in sizes_kb}
        kinds[fmt] = parse(texts[max(sizes_kb)]).kind  # also warms up
        samples: dict[int, list[float]] = {kb: [] for kb in sizes_kb}
        for _ in range(repeat):
            for kb, text in texts.items():  # sizes interleaved, so load hits both alike
                samples[kb].append(_timed(parse, text, per_sample_kb * KB))
        seconds[fmt] = {kb: statistics.median(times) for kb, times in samples.items()}
    sample = ParseSample(tuple(sizes_kb), seconds, kinds)
    if log is not None:
        for line in markdown(sample):
            log(f"  {line}")
    return sample


def _timed(parse: Callable[[str], object], text: str, budget: int) -> float:
    """Seconds per parse of `text`, parsed as often as it takes to read `budget` characters."""
    loops = max(1, budget // max(1, len(text)))
    started = time.perf_counter()
    for _ in range(loops):
        parse(text)
    return (time.perf_counter() - started) / loops


def markdown(sample: ParseSample) -> list[str]:
    """The table: milliseconds per parse at each size, and the per-KB ratio."""
    sizes = sample.sizes_kb
    head = " | ".join(f"{kb} KB (ms)" for kb in sizes)
    lines = [
        f"| parse cost per reply | {head} | per KB, {max(sizes)} vs {min(sizes)} KB | read as |",
        "|---|" + "---:|" * (len(sizes) + 1) + "---|",
    ]
    for fmt, times in sample.seconds.items():
        cells = " | ".join(f"{times[kb] * 1000:.3f}" for kb in sizes)
        ratio = sample.ratio(fmt)
        shown = f"{ratio:.2f}×" if ratio is not None else "—"
        lines.append(f"| {fmt} | {cells} | {shown} | {sample.kinds[fmt]} |")
    return [*lines, ""]


def main(argv: list[str]) -> None:
    """Print the table, then the samples as one JSON line."""
    sizes = tuple(int(arg) for arg in argv) or SIZES_KB
    sample = measure(sizes)
    print("\n".join(markdown(sample)))
    print(json.dumps({"sizes_kb": sample.sizes_kb, "seconds": sample.seconds}))


if __name__ == "__main__":
    main(sys.argv[1:])
