"""gpt-oss's harmony format: messages on channels, calls addressed to ``functions.NAME``.

Source: OpenAI's harmony guide (the cookbook article "OpenAI Harmony Response Format") and
the gpt-oss model card. A reply is a run of messages, each a header then
``<|message|>`` and its content, ended by ``<|end|>``, ``<|call|>`` or ``<|return|>``:

- ``<|channel|>analysis<|message|>…<|end|>`` — the chain of thought: the thought, never
  part of an answer, and never acted on (an ``Action:`` drafted there is a draft);
- ``<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
  <|message|>{"city": "Rome"}<|call|>`` — a call. The recipient ``to=functions.NAME`` may
  stand in the header before ``<|channel|>`` (``<|start|>assistant to=functions.NAME
  <|channel|>commentary``) or after the channel name; ``<|constrain|>json`` may be missing,
  and so may the stop token. Several calls are read in order;
- ``<|channel|>commentary<|message|>…`` without a recipient — a preamble to the user, kept
  with the thought;
- ``<|channel|>final<|message|>…<|return|>`` — the answer. A model asked for ReAct writes
  ReAct there, so a ``Final Answer:`` or an ``Action:`` in it is read as ReAct.

A recipient that is not ``functions.NAME`` is one of gpt-oss's built-in tools
(``browser.search``, ``python``, ``container.exec``): feedback that names it, never a call.

Decoders that skip special tokens give the same text without them:
``analysisWe need the weather.assistantcommentary to=functions.get_weather json{…}`` and
``analysis…assistantfinalThe answer is 4.``. That form is read only when the channel words
stand where the tokens were: the reply starts with ``analysis`` and a later ``assistant`` is
glued to a channel word (or to `` to=``), or it starts with ``commentary to=``. Prose that
merely starts with the word "analysis" is left to the other formats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thinkgraph.policies._react_format import quoted
from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import Found, Reply, answer, calls, error
from thinkgraph.policies.textcalls.react import read_react

__all__ = ["read"]

_TOKEN = re.compile(r"<\|(start|channel|message|constrain|end|call|return)\|>")
_ENDS = ("end", "call", "return")
_RECIPIENT = re.compile(r"(?:^|\s)to=([^\s<]++)")
_CHANNELS = ("analysis", "commentary", "final")
_FUNCTIONS = "functions."
_WHERE = "harmony tool call"

# The stripped form: "assistant" glued to the next message's channel word or recipient.
_GLUED = re.compile(r"assistant(?=analysis|commentary|final|[ \t]++to=)")
_STRIPPED_CALL = re.compile(r"commentary[ \t]++to=\S")
_HEADER_TO = re.compile(r"[ \t]*+to=([\w.\-]++)")
_CHANNEL_TO = re.compile(r"[ \t]++to=([\w.\-]++)")
_CONTENT_TYPE = re.compile(r"[ \t]*+(?:<\|constrain\|>)?+[ \t]*+(?:(?:json|code)\b)?+")


@dataclass(frozen=True, slots=True)
class _Message:
    """One harmony message: its channel, who it is addressed to, and its content."""

    channel: str
    recipient: str | None
    content: str


def read(reply: Reply) -> Decision | None:
    """The decision a harmony reply makes, or None when the reply is not in harmony."""
    body = reply.body
    if "<|channel|>" in body or "<|message|>" in body:
        messages, loose = _token_messages(body)
    else:
        stripped = _stripped_messages(body)
        if stripped is None:
            return None
        messages, loose = stripped, ""
    return _decide(messages, loose, reply)


# -- the messages -------------------------------------------------------------------------


class _Reader:
    """Reads harmony's tokens one after another into messages; text outside them is loose.

    Each part (role, channel, content) is kept as a list of pieces and joined once, so a
    reply of many tokens is read in linear time.
    """

    def __init__(self) -> None:
        self.messages: list[_Message] = []
        self.loose: list[str] = []
        self.state = "outside"  # or "role", "channel", "content"
        self.role: list[str] = []
        self.channel: list[str] = []
        self.content: list[str] = []
        self.current = self.loose
        """Where text between tokens goes: the part being read."""

    def token(self, name: str) -> None:
        """A special token: it opens a header part, the content, or ends the message."""
        if name in ("start", "channel"):
            if self.state == "content":
                self.finish()
            if name == "start" or self.state not in ("role", "channel"):
                self.role = []
            self.channel = []
            self.state = "role" if name == "start" else "channel"
            self.current = self.role if name == "start" else self.channel
        elif name == "constrain":
            if self.state in ("role", "channel"):
                self.current.append(" ")
        elif name == "message":
            if self.state != "content":
                self.state, self.content = "content", []
                self.current = self.content
        elif self.state == "content":
            self.finish()
        else:
            self.state, self.current = "outside", self.loose  # an end token after a header

    def finish(self) -> None:
        """The message being read is complete (or the reply ended inside it)."""
        channel = "".join(self.channel)
        found = _RECIPIENT.search(f"{''.join(self.role)} {channel}")
        words = channel.split(maxsplit=1)
        self.messages.append(
            _Message(
                channel=words[0] if words else "",
                recipient=found.group(1) if found else None,
                content="".join(self.content),
            )
        )
        self.state, self.role, self.channel, self.content = "outside", [], [], []
        self.current = self.loose


def _token_messages(body: str) -> tuple[list[_Message], str]:
    """The messages of a reply written with harmony's special tokens, and the loose text."""
    reader = _Reader()
    pos = 0
    for token in _TOKEN.finditer(body):
        reader.current.append(body[pos : token.start()])
        reader.token(token.group(1))
        pos = token.end()
    reader.current.append(body[pos:])
    if reader.state == "content":
        reader.finish()  # the reply stopped before the message's end token
    return reader.messages, "".join(reader.loose)


def _stripped_messages(body: str) -> list[_Message] | None:
    """The messages of a reply whose special tokens a decoder dropped, or None if it is not."""
    text = body.lstrip()
    markers = list(_GLUED.finditer(text))
    at_start = bool(markers) and markers[0].start() == 0
    if not ((text.startswith("analysis") and markers) or at_start or _STRIPPED_CALL.match(text)):
        return None
    bounds = [0, *(m.end() for m in markers)]
    ends = [*(m.start() for m in markers), len(text)]
    messages: list[_Message] = []
    for start, end in zip(bounds, ends, strict=True):
        message = _stripped_message(text[start:end])
        if message is not None:
            messages.append(message)
    return messages


def _stripped_message(segment: str) -> _Message | None:
    """One message of the stripped form: channel word, recipient, content type, content."""
    recipient: str | None = None
    header_to = _HEADER_TO.match(segment)
    if header_to is not None:
        # "assistant to=functions.NAMEcommentary json{…}": the channel is glued to the name.
        recipient, channel = header_to.group(1), ""
        for word in _CHANNELS:
            if recipient.endswith(word) and len(recipient) > len(word):
                recipient, channel = recipient[: -len(word)], word
                break
        rest = segment[header_to.end() :]
    else:
        channel = next((word for word in _CHANNELS if segment.startswith(word)), "")
        if not channel:
            return None
        rest = segment[len(channel) :]
        channel_to = _CHANNEL_TO.match(rest)
        if channel_to is not None:
            recipient, rest = channel_to.group(1), rest[channel_to.end() :]
    if recipient is not None:
        content_type = _CONTENT_TYPE.match(rest)
        rest = rest[content_type.end() :] if content_type else rest
    return _Message(channel=channel, recipient=recipient, content=rest)


# -- the decision -------------------------------------------------------------------------


def _decide(messages: list[_Message], loose: str, reply: Reply) -> Decision:
    """Calls in order, else the final channel's answer, else ReAct outside analysis, else feedback.

    The first decisive message wins, as in ReAct: calls before a final message are the
    decision; a final message before any call is.
    """
    thought = _thought(messages, reply, loose)
    found: list[Found] = []
    for message in messages:
        if message.recipient is not None:
            if not message.recipient.startswith(_FUNCTIONS):
                return error(_built_in(message.recipient), thought)
            found.append(Found(message.recipient[len(_FUNCTIONS) :], message.content))
        elif message.channel == "final" and not found:
            return _final(message.content, thought, reply)
    if found:
        return calls(found, thought, _WHERE)
    # No call and no final message: what the model wrote outside its analysis may be ReAct.
    visible = [m.content for m in messages if m.channel not in ("analysis", "final")]
    react, decided = read_react(_reply(reply, "\n".join([*visible, loose]), thought))
    if decided:
        return react
    return error(
        "Your reply held only reasoning or a preamble: no tool call and no final answer.",
        thought,
    )


def _final(content: str, thought: str, reply: Reply) -> Decision:
    """The final channel's message: ReAct if the model wrote ReAct there, else the answer."""
    react, decided = read_react(_reply(reply, content, thought))
    if decided:
        return react
    return answer(content, thought, "final message")


def _thought(messages: list[_Message], reply: Reply, loose: str) -> str:
    """The analysis and preamble texts, else the reply's reasoning blocks, else loose text."""
    parts = [
        m.content.strip()
        for m in messages
        if m.recipient is None and m.channel != "final" and m.content.strip()
    ]
    return "\n".join(parts) or reply.reasoning or loose.strip()


def _reply(reply: Reply, body: str, thought: str) -> Reply:
    return Reply(text=reply.text, body=body, reasoning=thought)


def _built_in(recipient: str) -> str:
    return (
        f"Your reply called {quoted(recipient)}, a built-in tool this agent does not have. "
        "Call one of your own tools by its name, with its arguments as one JSON object."
    )
