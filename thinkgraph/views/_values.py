"""Where known secret values appear in a text, found in one scan however many there are.

`redact.Redactor` decides what is secret; this module only finds those values in a text,
whole or cut short, for it to mask. The work is linear in the text:

- a text and the values are split into the same tokens (words, JSON and URL escapes, and
  every other character on its own), and one Aho-Corasick automaton over those tokens
  finds every value in a single pass, so 200,000 values cost no more per text than one
  (replacing each value in turn made a view of a 200,000-key reply run for minutes);
- a text whose words include no value's first word holds no value whole, which one
  C-level pass tells (`re.findall` and a set intersection): a long text without any
  value, say a reply whose `"name": value` pairs were masked already, is not walked token
  by token.

A value is found where it starts and ends on token edges: "4821" in "pin 4821", "pin=4821"
and "pin\\n4821" (JSON-escaped), not inside the longer word "pin4821".

A value cut short is found too: where a text stops, or where it goes on with an ellipsis
("…" or "..."), the longest piece before that point which begins a known value (at least
`MIN_PREFIX_CHARS` long) is a secret's visible start: an observation cut at
`max_observation_chars`, or a thought that quotes a token's first characters.

Example:
    >>> values = KnownValues(["TOKSECRET-abcdefghij"])
    >>> values.mask('the token is TOKSECRET-abcdefghij, cut: "TOKSECRET-abc', "***")
    'the token is ***, cut: "***'
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate, filterfalse

__all__ = ["MIN_PREFIX_CHARS", "KnownValues"]

MIN_PREFIX_CHARS = 6
"""The shortest start of a value masked where a text is cut: fewer characters say little,
and masking them would hide every short word that happens to begin a secret."""

PREFIX_WINDOW_CHARS = 8192
"""How far back from a cut the start of a cut value is looked for."""

_TOKEN = re.compile(r"\w+|\\u[0-9a-fA-F]{4}|\\[\"\\/bfnrt]|%[0-9A-Fa-f]{2}|.", re.S)
"""The tokens a text and a value are split into alike."""

_WORD = re.compile(r"\w+")
_ESCAPED_WORD = re.compile(r"(?:\\u[0-9a-fA-F]{4}|\\[bfnrt]|%[0-9A-Fa-f]{2})(\w+)")
"""With `_WORD`, every word `_TOKEN` makes of a text (and a few more): after an escape
that ends in a letter or digit, `_TOKEN`'s word starts after the escape."""

_FEW_WORDS = 8
"""Up to this many first words, a text is searched for each before it is split in words."""

_FIRST_TOKENS = re.compile(rf"\0({_TOKEN.pattern})", re.S)
_FIRST_WORDS = re.compile(r"\0[^\w\0]*+(\w+)")
"""The first token, and the first word, of each value in values each after a NUL (the
scan jumps from one NUL to the next)."""

_CUT = re.compile(r"(?<!\s)\s*(?:…|\.\.\.)")
"""Where a text says it goes on beyond what it shows (the lookbehind starts a match only
at the head of a run of spaces, so a long run is not scanned again from each space)."""


class KnownValues:
    """A growing set of secret values, and where they appear in a text (whole or cut)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        # The automaton and the sorted list are made when a text first needs them: most
        # texts hold no value's first word (those a view shows are masked by name first).
        self._built = False
        self._sorted_now = False
        self._goto: list[dict[str, int]] = [{}]
        self._fail: list[int] = [0]
        self._out: list[int] = [0]
        """Per state: the length in characters of the longest value ending there, or 0."""
        self._first: set[str] = set()
        """The first token of every value."""
        self._first_words: set[str] = set()
        """The first word of every value (wherever it is in the value): a text with none of
        them holds no value whole."""
        self._unanchored = False
        """Whether some value has no word (then every text is walked)."""
        self._sorted: list[str] = []
        self._longest = 0
        self._new: list[str] = []
        """Values added since `_settle` last took note of them."""
        self._heads: set[str] = set()
        """The first `MIN_PREFIX_CHARS` characters of every value: a piece that begins
        none of them begins no value, and the sorted list is not needed to say so."""
        self.update(values)

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: str) -> None:
        """Find `value` from now on (the automaton is rebuilt when next needed)."""
        self.update((value,))

    def update(self, values: Iterable[str]) -> None:
        """Find each of `values` from now on."""
        known = self._values
        # `filter` over C callables: no Python step per value (a reply may give 200,000).
        fresh = list(dict.fromkeys(filter(None, filterfalse(known.__contains__, values))))
        known.update(fresh)
        self._new += fresh

    def _settle(self) -> None:
        """Take note of the values added since last time: their first tokens and words.

        All at once, in a scan of the values each after a NUL (which no token or word
        holds), rather than a call per value: a reply with 200,000 secret keys adds as many.
        """
        new, self._new = self._new, []
        if not new:
            return
        self._built = self._sorted_now = False
        self._longest = max(self._longest, max(map(len, new)))
        self._heads.update([value[:MIN_PREFIX_CHARS] for value in new])
        joined = "\0" + "\0".join(new)
        odd = [value for value in new if "\0" in value] if joined.count("\0") > len(new) else []
        if odd:  # a value that holds a NUL is read on its own
            joined = "".join(["\0" + value for value in new if "\0" not in value])
        self._first.update(_FIRST_TOKENS.findall(joined))
        words = _FIRST_WORDS.findall(joined)
        self._first_words.update(words)
        # Where a value is, its first word is a word of the text (as `_has_first_word` reads
        # words), whatever comes before it; a value with no word anchors nothing.
        self._unanchored = self._unanchored or len(words) < len(new) - len(odd)
        for value in odd:
            self._first.add(_TOKEN.match(value)[0])  # type: ignore[index]
            word = _WORD.search(value)
            if word is None:
                self._unanchored = True
            else:
                self._first_words.add(word[0])

    def mask(self, text: str, mask: str) -> str:
        """`text` with every known value, and the cut-off start of one, replaced by `mask`."""
        if not self._values or not text:
            return text
        spans = self.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        at = 0
        for start, end in spans:
            parts += [text[at:start], mask]
            at = end
        parts.append(text[at:])
        return "".join(parts)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of each piece of `text` to mask, sorted, overlaps merged."""
        self._settle()
        anchored = self._unanchored or self._has_first_word(text)
        found = self._whole(text) if anchored else []
        found += self._cut_starts(text, anchored=anchored)
        return _merged(found)

    def _has_first_word(self, text: str) -> bool:
        if len(self._first_words) <= _FEW_WORDS and not any(
            word in text for word in self._first_words
        ):  # a search for each word's letters costs less than splitting a long text
            return False
        if not self._first_words.isdisjoint(_WORD.findall(text)):
            return True
        escaped = "\\" in text or "%" in text
        return escaped and not self._first_words.isdisjoint(_ESCAPED_WORD.findall(text))

    def _whole(self, text: str) -> list[tuple[int, int]]:
        """Every known value in `text`: one pass of the automaton over its tokens."""
        self._build()
        goto, fail, out = self._goto, self._fail, self._out
        tokens = _TOKEN.findall(text)
        ends: list[tuple[int, int]] = []  # (index of the last token, length in characters)
        state = 0
        for index, token in enumerate(tokens):
            while state and token not in goto[state]:
                state = fail[state]
            state = goto[state].get(token, 0)
            if out[state]:
                ends.append((index, out[state]))
        if not ends:
            return []
        offsets = list(accumulate(map(len, tokens)))
        return [(offsets[index] - length, offsets[index]) for index, length in ends]

    def _cut_starts(self, text: str, *, anchored: bool) -> list[tuple[int, int]]:
        """The visible start of a value at each point where the text is cut."""
        ends = [m.start() for m in _CUT.finditer(text)] if "…" in text or "..." in text else []
        ends.append(len(text.rstrip()))
        found: list[tuple[int, int]] = []
        for end in dict.fromkeys(ends):
            start = self._cut_start(text, end, anchored=anchored)
            if start is not None:
                found.append((start, end))
        return found

    def _cut_start(self, text: str, end: int, *, anchored: bool) -> int | None:
        """Where the longest piece of text ending at `end` that begins a value starts.

        The piece starts on a token edge: at a token that begins a value (when the text
        has any, `anchored`), or within the last token, which the cut may have split.
        """
        if end < MIN_PREFIX_CHARS:
            return None
        window = max(0, end - min(self._longest, PREFIX_WINDOW_CHARS))
        for match in _TOKEN.finditer(text, window, end):
            start = match.start()
            if end - start < MIN_PREFIX_CHARS:
                return None
            starts = match.end() >= end or (anchored and match[0] in self._first)
            if starts and self._begins(text[start:end]):
                return start
        return None

    def _begins(self, piece: str) -> bool:
        """Whether some known value starts with `piece` (at least `MIN_PREFIX_CHARS` long)."""
        if piece[:MIN_PREFIX_CHARS] not in self._heads:
            return False
        if not self._sorted_now:
            self._sorted, self._sorted_now = sorted(self._values), True
        at = bisect_left(self._sorted, piece)
        return at < len(self._sorted) and self._sorted[at].startswith(piece)

    def _build(self) -> None:
        """The automaton over every value's tokens, with its failure links."""
        if self._built:
            return
        goto: list[dict[str, int]] = [{}]
        out = [0]
        for value in self._values:
            state = 0
            for token in _TOKEN.findall(value):
                nxt = goto[state].get(token)
                if nxt is None:
                    nxt = goto[state][token] = len(goto)
                    goto.append({})
                    out.append(0)
                state = nxt
            out[state] = len(value)
        fail = [0] * len(goto)
        queue = [child for child in goto[0].values()]
        for state in queue:  # breadth first: a state's failure is known before its children's
            for token, child in goto[state].items():
                queue.append(child)
                back = fail[state]
                while back and token not in goto[back]:
                    back = fail[back]
                fail[child] = goto[back].get(token, 0)
                # The longest value ending here: this state's own, else its failure's.
                out[child] = out[child] or out[fail[child]]
        self._goto, self._fail, self._out = goto, fail, out
        self._built = True


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
