"""A held-out corpus of tool-call replies, as open models write them, with what each must give.

This corpus is the acceptance set for "every open model's tool-call text understood": it is
kept apart from the per-family tests (`test_<family>.py`) and written from the formats'
public descriptions, not from the readers. Each reply is shaped as its model writes it:

- Hermes / Qwen 2.5–3 and Qwen3-Coder: the ``tokenizer_config.json`` chat templates of the
  Hermes 2 Pro / Hermes 3 and Qwen model cards (``<tool_call>`` JSON, ``<function=…>`` XML);
- Llama 3.1–3.3 JSON, pythonic Llama 3.2 / 4: Meta's "model cards and prompt formats" pages
  and vLLM's ``llama3_json`` / ``pythonic`` / ``llama4_pythonic`` tool parsers;
- Mistral: ``mistral-common`` tokenizer versions (``[TOOL_CALLS]`` list, v11
  ``[TOOL_CALLS]NAME[ARGS]``, Magistral ``[THINK]``) and vLLM's ``mistral`` parser;
- gpt-oss: OpenAI's harmony response format guide;
- DeepSeek R1 / V3 / V3.1 and QwQ: their chat templates (``<think>``, the ``<｜tool▁…｜>``
  tokens) and vLLM's ``deepseek_v3`` / ``deepseek_v31`` parsers;
- XML invoke: Anthropic-style ``<function_calls>``, MiniMax-M2's ``<minimax:tool_call>``
  (vLLM ``minimax_m2``), GLM-4.5 / 4.7 ``<arg_key>`` (vLLM ``glm45`` / ``glm47``);
- Gemma 3 ``tool_code`` blocks (Google's Gemma function-calling guide) and FunctionGemma's
  ``call:NAME{…<escape>…}`` (its formatting guide);
- Cohere Command R / R+ (``Action: ```json``, ``Answer:`` / ``Grounded answer:``) and
  Command A / R7B (``<|START_ACTION|>``, ``<|START_RESPONSE|>``) prompt-format docs;
- IBM Granite 3.x (vLLM ``granite`` parser, Granite 3.2 "thought process" answers) and
  Microsoft Phi-4-mini (``functools[…]``, ``<|tool_call|>…<|/tool_call|>``, vLLM
  ``phi4_mini_json``);
- final-answer styles (R1-style ``<answer>``, ``\\boxed{}``, smolagents' ``final_answer``
  tool, bold ``Final Answer``) and ReAct variants (fenced input, call syntax or JSON on the
  ``Action:`` line, LangChain's ``{"action", "action_input"}`` blob).

About three quarters are tool calls (several with more than one call), a quarter final
answers, and among them negatives: JSON answers that are not calls, calls drafted only inside
reasoning, malformed calls and prose, which must be feedback or the answer — never a call.
Every call names a tool in `TOOLS`; reasoning text is only ever inside reasoning sections
(`reasoning_parts` finds them), so an answer holding any of it has leaked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.policies._expect import Call, Calls, Error, Expected, Final

__all__ = ["CORPUS", "FAMILIES", "SPECIAL_TOKENS", "TOOLS", "Case", "reasoning_parts"]

TOOLS = frozenset(
    {
        "get_weather",
        "get_time",
        "search",
        "calculator",
        "get_stock_price",
        "convert_currency",
        "send_email",
        "read_file",
    }
)
"""The tools every reply in the corpus was written for; a call to anything else is wrong."""

SPECIAL_TOKENS = (
    "<|",
    "|>",
    "<｜",
    "｜>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[THINK]",
    "[/THINK]",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<scratch_pad>",
    "<function",
    "</function",
    "<invoke",
    "</invoke>",
    "<parameter",
    "<minimax:",
    "<arg_key>",
    "<arg_value>",
    "<escape>",
    "_function_call>",
    "<answer>",
    "</answer>",
    "\\boxed",
    "```",
)
"""Format markers that must never appear in a tool name, an argument or an answer."""

FEEDBACK = Error("Reply in exactly this format")
"""Any feedback: every error decision shows the expected format."""


@dataclass(frozen=True, slots=True)
class Case:
    """One reply, the family whose format it is in, and the decision it must give."""

    family: str
    id: str
    text: str
    expected: Expected
    drafts: tuple[str, ...] = ()
    """Reasoning the model wrote outside the sections `reasoning_parts` finds (a Cohere
    ``Plan:``): it must not reach an answer either."""


# -- reasoning sections -------------------------------------------------------------------------

_SECTIONS = (
    re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S),
    re.compile(r"<thinking>(.*?)(?:</thinking>|\Z)", re.S),
    re.compile(r"<scratch_pad>(.*?)(?:</scratch_pad>|\Z)", re.S),
    re.compile(r"\[THINK\](.*?)(?:\[/THINK\]|\Z)", re.S),
    re.compile(r"<\|START_THINKING\|>(.*?)(?:<\|END_THINKING\|>|\Z)", re.S),
    re.compile(r"<\|channel\|>analysis<\|message\|>(.*?)(?:<\|end\|>|<\|start\|>|\Z)", re.S),
    re.compile(r"\Aanalysis(.*?)(?:assistant(?:final|commentary)|\Z)", re.S),
    re.compile(r"Here is my thought process:(.*?)(?:Here is my response:|\Z)", re.S),
)
_ONLY_CLOSED = re.compile(r"\A(.*?)</think>", re.S)


def reasoning_parts(case: Case) -> list[str]:
    """Every line of reasoning in a reply: its reasoning sections and its `drafts`.

    Lines shorter than 8 characters are left out: a line such as ``12`` may be the answer.
    """
    parts: list[str] = list(case.drafts)
    for section in _SECTIONS:
        parts += [m.group(1) for m in section.finditer(case.text)]
    if "</think>" in case.text and "<think>" not in case.text:
        closed = _ONLY_CLOSED.match(case.text)
        parts += [closed.group(1)] if closed else []
    lines = [line.strip() for part in parts for line in part.splitlines()]
    return [line for line in lines if len(line) >= 8]


# -- the replies --------------------------------------------------------------------------------

ROME = Call("get_weather", {"city": "Rome"})


def _hermes() -> list[Case]:
    family = "hermes"
    return [
        Case(
            family,
            "qwen25-one-call",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "unit": '
            '"celsius"}}\n</tool_call>',
            Call("get_weather", {"city": "Rome", "unit": "celsius"}),
        ),
        Case(
            family,
            "qwen3-think-then-call",
            "<think>\nThe user wants the weather in Rome. I should call get_weather with the "
            'city.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": '
            '"Rome"}}\n</tool_call>',
            ROME,
        ),
        Case(
            family,
            "qwen3-closing-think-only",
            "Okay, the user asks for the local time in Tokyo. The get_time tool takes an IANA "
            'zone.\n</think>\n\n<tool_call>\n{"name": "get_time", "arguments": {"timezone": '
            '"Asia/Tokyo"}}\n</tool_call>',
            Call("get_time", {"timezone": "Asia/Tokyo"}),
        ),
        Case(
            family,
            "qwen25-two-calls",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            Calls(ROME, Call("get_weather", {"city": "Paris"})),
        ),
        Case(
            family,
            "preamble-then-call",
            "I'll look that up for you.\n\n<tool_call>\n"
            '{"name": "search", "arguments": {"query": "population of Lisbon 2024"}}\n'
            "</tool_call>",
            Call("search", {"query": "population of Lisbon 2024"}),
        ),
        Case(
            family,
            "python-dict-quoting",
            "<tool_call>\n{'name': 'calculator', 'arguments': {'expression': '17 * 23'}}\n"
            "</tool_call>",
            Call("calculator", {"expression": "17 * 23"}),
        ),
        Case(
            family,
            "hermes3-scratch-pad",
            "<scratch_pad>\nGoal: find the share price of Apple. The get_stock_price tool takes "
            "a ticker symbol, which is AAPL.\n</scratch_pad>\n<tool_call>\n"
            '{"arguments": {"ticker": "AAPL"}, "name": "get_stock_price"}\n</tool_call>',
            Call("get_stock_price", {"ticker": "AAPL"}),
        ),
        Case(
            family,
            "qwen3-coder-xml",
            "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.py\n</parameter>\n"
            "</function>\n</tool_call>",
            Call("read_file", {"path": "src/main.py"}),
        ),
        Case(
            family,
            "qwen3-coder-xml-two-parameters",
            "I'll send the note now.\n<tool_call>\n<function=send_email>\n<parameter=to>\n"
            "ana@example.com\n</parameter>\n<parameter=subject>\nMeeting moved to Friday\n"
            "</parameter>\n</function>\n</tool_call>",
            Call("send_email", {"to": "ana@example.com", "subject": "Meeting moved to Friday"}),
        ),
        Case(
            family,
            "negative-call-drafted-in-think-only",
            '<think>\nMaybe I should write <tool_call>{"name": "search", "arguments": {"query": '
            '"weather Rome"}}</tool_call> but first I want to check the task again.\n</think>',
            FEEDBACK,
        ),
        Case(
            family,
            "negative-malformed-json",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"\n</tool_call>',
            FEEDBACK,
        ),
        Case(
            family,
            "negative-sentence-as-name",
            '<tool_call>\n{"name": "look up the weather", "arguments": {"city": "Rome"}}\n'
            "</tool_call>",
            Error("not a tool name"),
        ),
    ]


def _llama_json() -> list[Case]:
    family = "llama_json"
    return [
        Case(
            family,
            "llama31-bare-json",
            '{"name": "get_weather", "parameters": {"city": "Rome"}}',
            ROME,
        ),
        Case(
            family,
            "llama31-python-tag-eom",
            '<|python_tag|>{"name": "search", "parameters": {"query": "Nobel Prize in physics '
            '2023"}}<|eom_id|>',
            Call("search", {"query": "Nobel Prize in physics 2023"}),
        ),
        Case(
            family,
            "llama32-type-function",
            '{"type": "function", "name": "get_time", "parameters": {"timezone": "Europe/Berlin"}}',
            Call("get_time", {"timezone": "Europe/Berlin"}),
        ),
        Case(
            family,
            "openai-wrapper",
            '{"type": "function", "function": {"name": "calculator", "arguments": '
            '{"expression": "2**10"}}}',
            Call("calculator", {"expression": "2**10"}),
        ),
        Case(
            family,
            "semicolon-separated",
            '{"name": "get_weather", "parameters": {"city": "Rome"}}; '
            '{"name": "get_weather", "parameters": {"city": "Oslo"}}',
            Calls(ROME, Call("get_weather", {"city": "Oslo"})),
        ),
        Case(
            family,
            "fenced-json",
            '```json\n{"name": "search", "parameters": {"query": "Python 3.13 release date"}}\n```',
            Call("search", {"query": "Python 3.13 release date"}),
        ),
        Case(
            family,
            "function-tag",
            '<function=get_stock_price>{"ticker": "MSFT"}</function>',
            Call("get_stock_price", {"ticker": "MSFT"}),
        ),
        Case(
            family,
            "parameters-as-json-string",
            '{"name": "convert_currency", "parameters": "{\\"amount\\": 100, \\"from\\": '
            '\\"USD\\", \\"to\\": \\"EUR\\"}"}',
            Call("convert_currency", {"amount": 100, "from": "USD", "to": "EUR"}),
        ),
        Case(
            family,
            "negative-json-answer-weather",
            '{"city": "Rome", "temp_c": 21, "conditions": "sunny"}',
            FEEDBACK,
        ),
        Case(
            family,
            "negative-json-answer-with-name",
            '{"name": "Alice", "age": 3}',
            FEEDBACK,
        ),
    ]


def _pythonic() -> list[Case]:
    family = "pythonic"
    return [
        Case(family, "llama32-one-call", '[get_weather(city="Rome")]', ROME),
        Case(
            family,
            "llama32-two-calls",
            "[get_weather(city='San Francisco', unit='fahrenheit'), "
            "get_time(timezone='America/Los_Angeles')]",
            Calls(
                Call("get_weather", {"city": "San Francisco", "unit": "fahrenheit"}),
                Call("get_time", {"timezone": "America/Los_Angeles"}),
            ),
        ),
        Case(
            family,
            "llama4-python-start",
            '<|python_start|>[search(query="best pizza in Naples")]<|python_end|>',
            Call("search", {"query": "best pizza in Naples"}),
        ),
        Case(
            family,
            "call-outside-a-list",
            'get_stock_price(ticker="NVDA")',
            Call("get_stock_price", {"ticker": "NVDA"}),
        ),
        Case(
            family,
            "numbers-and-booleans",
            '[convert_currency(amount=12.5, source="EUR", target="CHF", exact=True, note=None)]',
            Call(
                "convert_currency",
                {"amount": 12.5, "source": "EUR", "target": "CHF", "exact": True, "note": None},
            ),
        ),
        Case(
            family,
            "list-argument",
            '[send_email(to=["ana@example.com", "bo@example.com"], subject="Lunch", '
            'body="See you at noon.")]',
            Call(
                "send_email",
                {
                    "to": ["ana@example.com", "bo@example.com"],
                    "subject": "Lunch",
                    "body": "See you at noon.",
                },
            ),
        ),
        Case(family, "no-arguments", "[get_time()]", Call("get_time", {})),
        Case(family, "negative-positional-argument", '[get_weather("Rome")]', FEEDBACK),
        Case(family, "negative-list-of-data", '["Rome", "Paris", "Oslo"]', FEEDBACK),
        Case(
            family,
            "negative-prose-with-parentheses",
            "I think the capital (probably) is Rome, but I am not sure.",
            FEEDBACK,
        ),
    ]


def _mistral() -> list[Case]:
    family = "mistral"
    return [
        Case(
            family,
            "v3-list-with-id",
            '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Rome"}, '
            '"id": "a1B2c3D4e"}]',
            ROME,
        ),
        Case(
            family,
            "nemo-two-calls",
            '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}}, '
            '{"name": "get_time", "arguments": {"timezone": "Europe/Rome"}}]',
            Calls(ROME, Call("get_time", {"timezone": "Europe/Rome"})),
        ),
        Case(
            family,
            "v11-name-args",
            '[TOOL_CALLS]search[ARGS]{"query": "ECB deposit rate"}',
            Call("search", {"query": "ECB deposit rate"}),
        ),
        Case(
            family,
            "v11-repeated",
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}'
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Milan"}',
            Calls(ROME, Call("get_weather", {"city": "Milan"})),
        ),
        Case(
            family,
            "magistral-think-then-call",
            "[THINK]The user wants fifteen percent of 240, so the calculator should do "
            'it.[/THINK][TOOL_CALLS]calculator[ARGS]{"expression": "0.15 * 240"}',
            Call("calculator", {"expression": "0.15 * 240"}),
        ),
        Case(
            family,
            "dropped-special-token",
            '[{"name": "search", "arguments": {"query": "Mistral Small 3.2 context length"}}]',
            Call("search", {"query": "Mistral Small 3.2 context length"}),
        ),
        Case(
            family,
            "preamble-then-v11",
            "Let me check the time there.[TOOL_CALLS]get_time[ARGS]{}",
            Call("get_time", {}),
        ),
        Case(
            family,
            "negative-truncated-list",
            '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Rome"}',
            FEEDBACK,
        ),
        Case(
            family,
            "negative-args-not-an-object",
            '[TOOL_CALLS]search[ARGS]"ECB deposit rate"',
            Error("not one JSON object"),
        ),
    ]


def _harmony() -> list[Case]:
    family = "harmony"
    return [
        Case(
            family,
            "recipient-after-channel",
            "<|channel|>analysis<|message|>User wants the weather in Tokyo. Need to call "
            "get_weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
            '<|constrain|>json<|message|>{"city": "Tokyo"}<|call|>',
            Call("get_weather", {"city": "Tokyo"}),
        ),
        Case(
            family,
            "recipient-in-header",
            "<|channel|>analysis<|message|>Need the current time in Sydney.<|end|>"
            "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>"
            '{"timezone": "Australia/Sydney"}<|call|>',
            Call("get_time", {"timezone": "Australia/Sydney"}),
        ),
        Case(
            family,
            "no-constrain-no-stop-token",
            "<|channel|>analysis<|message|>Search the web for the model's licence.<|end|>"
            "<|start|>assistant<|channel|>commentary to=functions.search<|message|>"
            '{"query": "gpt-oss licence"}',
            Call("search", {"query": "gpt-oss licence"}),
        ),
        Case(
            family,
            "final-channel",
            "<|channel|>analysis<|message|>The tool returned 18 degrees and light rain, so "
            "report that.<|end|><|start|>assistant<|channel|>final<|message|>It is 18 °C with "
            "light rain in Tokyo.<|return|>",
            Final("It is 18 °C with light rain in Tokyo."),
        ),
        Case(
            family,
            "final-channel-alone",
            "<|channel|>final<|message|>Paris is the capital of France.<|return|>",
            Final("Paris is the capital of France."),
        ),
        Case(
            family,
            "tokens-stripped-final",
            "analysisThe user asks for 2+2. Simple arithmetic, answer directly."
            "assistantfinal2 + 2 = 4.",
            Final("2 + 2 = 4."),
        ),
        Case(
            family,
            "tokens-stripped-call",
            "analysisNeed to look up the Apple share price first."
            'assistantcommentary to=functions.get_stock_price json{"ticker": "AAPL"}',
            Call("get_stock_price", {"ticker": "AAPL"}),
        ),
        Case(
            family,
            "negative-call-drafted-in-analysis",
            "<|channel|>analysis<|message|>Could call functions.search with "
            '{"query": "number of continents"} but it is well known.<|end|>'
            "<|start|>assistant<|channel|>final<|message|>There are seven continents.<|return|>",
            Final("There are seven continents."),
        ),
        Case(
            family,
            "negative-malformed-arguments",
            "<|channel|>analysis<|message|>Call the weather tool for Tokyo.<|end|>"
            "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
            '<|message|>{"city": "Tokyo"<|call|>',
            FEEDBACK,
        ),
        Case(
            family,
            "negative-analysis-only",
            "<|channel|>analysis<|message|>I still need to work out which tool fits this "
            "request before answering",
            FEEDBACK,
        ),
    ]


def _reasoning() -> list[Case]:
    family = "reasoning"
    tool_calls_begin = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>"
    tool_calls_end = "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    return [
        Case(
            family,
            "r1-think-then-react",
            "<think>\nThe user wants an exchange rate, so convert_currency is the tool to use."
            "\n</think>\n\nThought: I need to convert 100 USD to EUR.\nAction: convert_currency\n"
            'Action Input: {"amount": 100, "from": "USD", "to": "EUR"}',
            Call("convert_currency", {"amount": 100, "from": "USD", "to": "EUR"}),
        ),
        Case(
            family,
            "qwq-closing-think-only",
            "Okay, so I need to compute twelve factorial. The calculator can do that.\n</think>"
            '\n\nAction: calculator\nAction Input: {"expression": "factorial(12)"}',
            Call("calculator", {"expression": "factorial(12)"}),
        ),
        Case(
            family,
            "r1-unclosed-think-then-action",
            "<think>\nThe user wants the weather in Oslo, so I should call the tool.\n\n"
            'Action: get_weather\nAction Input: {"city": "Oslo"}',
            Call("get_weather", {"city": "Oslo"}),
        ),
        Case(
            family,
            "r1-think-then-final",
            "<think>\nThe observation says 21 degrees and sunny, which answers the question.\n"
            "</think>\n\nThought: I have the result.\nFinal Answer: It is 21 °C and sunny in "
            "Rome right now.",
            Final("It is 21 °C and sunny in Rome right now."),
        ),
        Case(
            family,
            "negative-action-drafted-in-think",
            '<think>\nMaybe:\nAction: search\nAction Input: {"query": "capital of Australia"}\n'
            "But I already know it is Canberra, no search needed.\n</think>\n"
            "Final Answer: Canberra is the capital of Australia.",
            Final("Canberra is the capital of Australia."),
        ),
        Case(
            family,
            "negative-final-drafted-in-think",
            "<think>\nFinal Answer: probably 42? No, I should verify with the calculator first."
            '\n</think>\nAction: calculator\nAction Input: {"expression": "6 * 7"}',
            Call("calculator", {"expression": "6 * 7"}),
        ),
        Case(
            family,
            "deepseek-v3-native-call",
            f"{tool_calls_begin}function<｜tool▁sep｜>get_weather\n```json\n"
            f'{{"city": "Beijing"}}\n```{tool_calls_end}',
            Call("get_weather", {"city": "Beijing"}),
        ),
        Case(
            family,
            "deepseek-v31-native-two-calls",
            f'{tool_calls_begin}get_weather<｜tool▁sep｜>{{"city": "Beijing"}}<｜tool▁call▁end｜>'
            f'<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{{"city": "Shanghai"}}{tool_calls_end}',
            Calls(
                Call("get_weather", {"city": "Beijing"}), Call("get_weather", {"city": "Shanghai"})
            ),
        ),
        Case(
            family,
            "r1-think-then-native-call",
            "<think>\nI need the current share price of Alibaba before comparing.\n</think>\n\n"
            f"{tool_calls_begin}function<｜tool▁sep｜>get_stock_price\n```json\n"
            f'{{"ticker": "BABA"}}\n```{tool_calls_end}',
            Call("get_stock_price", {"ticker": "BABA"}),
        ),
        Case(
            family,
            "negative-only-a-drafted-action",
            '<think>\nAction: search\nAction Input: {"query": "weather in Lima"}\n'
            "Hmm, let me reconsider what the user asked.\n</think>",
            FEEDBACK,
        ),
    ]


def _xml_invoke() -> list[Case]:
    family = "xml_invoke"
    return [
        Case(
            family,
            "function-calls-one-invoke",
            '<function_calls>\n<invoke name="search">\n<parameter name="query">latest LangGraph '
            "release</parameter>\n</invoke>\n</function_calls>",
            Call("search", {"query": "latest LangGraph release"}),
        ),
        Case(
            family,
            "function-calls-two-invokes",
            "I'll check both cities.\n\n<function_calls>\n"
            '<invoke name="get_weather">\n<parameter name="city">Rome</parameter>\n</invoke>\n'
            '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n'
            "</function_calls>",
            Calls(ROME, Call("get_weather", {"city": "Paris"})),
        ),
        Case(
            family,
            "minimax-m2",
            '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">README.md'
            "</parameter>\n</invoke>\n</minimax:tool_call>",
            Call("read_file", {"path": "README.md"}),
        ),
        Case(
            family,
            "minimax-m2-think-first",
            "<think>\nThe user wants the README summarised; read it first, then summarise.\n"
            '</think>\n\n<minimax:tool_call>\n<invoke name="read_file">\n'
            '<parameter name="path">docs/README.md</parameter>\n</invoke>\n</minimax:tool_call>',
            Call("read_file", {"path": "docs/README.md"}),
        ),
        Case(
            family,
            "glm45-one-call",
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
            "</tool_call>",
            Call("get_weather", {"city": "Beijing"}),
        ),
        Case(
            family,
            "glm45-two-calls",
            "<tool_call>send_email\n<arg_key>to</arg_key>\n<arg_value>li@example.com</arg_value>"
            "\n<arg_key>subject</arg_key>\n<arg_value>Quarterly report</arg_value>\n</tool_call>\n"
            "<tool_call>get_time\n<arg_key>timezone</arg_key>\n<arg_value>Asia/Shanghai"
            "</arg_value>\n</tool_call>",
            Calls(
                Call("send_email", {"to": "li@example.com", "subject": "Quarterly report"}),
                Call("get_time", {"timezone": "Asia/Shanghai"}),
            ),
        ),
        Case(
            family,
            "glm47-inline",
            "<think>The user wants the share price of Tencent.</think>"
            "<tool_call>get_stock_price<arg_key>ticker</arg_key><arg_value>0700.HK</arg_value>"
            "</tool_call>",
            Call("get_stock_price", {"ticker": "0700.HK"}),
        ),
        Case(
            family,
            "legacy-tool-name-parameters",
            "<function_calls>\n<invoke>\n<tool_name>get_stock_price</tool_name>\n<parameters>\n"
            "<ticker>TSLA</ticker>\n</parameters>\n</invoke>\n</function_calls>",
            Call("get_stock_price", {"ticker": "TSLA"}),
        ),
        Case(
            family,
            "negative-invoke-without-name",
            '<function_calls>\n<invoke name="">\n<parameter name="query">weather</parameter>\n'
            "</invoke>\n</function_calls>",
            FEEDBACK,
        ),
        Case(
            family,
            "negative-invoke-drafted-in-think",
            '<think>\nI could write <function_calls><invoke name="search"><parameter '
            'name="query">Rome</parameter></invoke></function_calls> but the answer is known.\n'
            "</think>\nFinal Answer: Rome is the capital of Italy.",
            Final("Rome is the capital of Italy."),
        ),
    ]


def _gemma() -> list[Case]:
    family = "gemma"
    return [
        Case(family, "tool-code-call", '```tool_code\nget_weather(city="Rome")\n```', ROME),
        Case(
            family,
            "tool-code-default-api",
            '```tool_code\nprint(default_api.search(query="Gemma 3 context window"))\n```',
            Call("search", {"query": "Gemma 3 context window"}),
        ),
        Case(
            family,
            "preamble-then-tool-code",
            "I'll look up the share price for you.\n\n"
            '```tool_code\nget_stock_price(ticker="GOOG")\n```',
            Call("get_stock_price", {"ticker": "GOOG"}),
        ),
        Case(
            family,
            "tool-code-two-calls",
            '```tool_code\nget_weather(city="Rome")\nget_weather(city="Paris")\n```',
            Calls(ROME, Call("get_weather", {"city": "Paris"})),
        ),
        Case(
            family,
            "tool-code-default-api-numbers",
            "```tool_code\nprint(default_api.convert_currency(amount=250, from_currency='GBP', "
            "to_currency='JPY'))\n```",
            Call("convert_currency", {"amount": 250, "from_currency": "GBP", "to_currency": "JPY"}),
        ),
        Case(
            family,
            "functiongemma-one-call",
            "<start_function_call>call:get_weather{city:<escape>London<escape>}<end_function_call>",
            Call("get_weather", {"city": "London"}),
        ),
        Case(
            family,
            "functiongemma-several-arguments",
            "<start_function_call>call:convert_currency{amount:250,from:<escape>GBP<escape>,"
            "to:<escape>JPY<escape>}<end_function_call>",
            Call("convert_currency", {"amount": 250, "from": "GBP", "to": "JPY"}),
        ),
        Case(family, "negative-tool-code-not-a-call", "```tool_code\nx = 5\n```", FEEDBACK),
        Case(
            family,
            "negative-tool-code-positional",
            '```tool_code\nget_weather("Rome")\n```',
            FEEDBACK,
        ),
    ]


def _cohere() -> list[Case]:
    family = "cohere"
    plan = "I will look up the weather in both cities and then compare them."
    return [
        Case(
            family,
            "command-r-action-json",
            'Action: ```json\n[\n    {\n        "tool_name": "search",\n        "parameters": '
            '{\n            "query": "Cohere Command R release date"\n        }\n    }\n]\n```',
            Call("search", {"query": "Cohere Command R release date"}),
        ),
        Case(
            family,
            "command-r-plan-two-calls",
            f'Plan: {plan}\nAction: ```json\n[\n    {{\n        "tool_name": "get_weather",\n'
            '        "parameters": {"city": "Rome"}\n    },\n    {\n        "tool_name": '
            '"get_weather",\n        "parameters": {"city": "Oslo"}\n    }\n]\n```',
            Calls(ROME, Call("get_weather", {"city": "Oslo"})),
            drafts=(plan,),
        ),
        Case(
            family,
            "command-a-action",
            "<|START_THINKING|>I should get the share price of Oracle first.<|END_THINKING|>"
            '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_stock_price", '
            '"parameters": {"ticker": "ORCL"}}\n]<|END_ACTION|>',
            Call("get_stock_price", {"ticker": "ORCL"}),
        ),
        Case(
            family,
            "command-a-two-actions",
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_time", "parameters": '
            '{"timezone": "Asia/Tokyo"}}, {"tool_call_id": "1", "tool_name": "get_time", '
            '"parameters": {"timezone": "Europe/London"}}]<|END_ACTION|>',
            Calls(
                Call("get_time", {"timezone": "Asia/Tokyo"}),
                Call("get_time", {"timezone": "Europe/London"}),
            ),
        ),
        Case(
            family,
            "command-r-answer",
            "Relevant Documents: 0\nCited Documents: 0\nAnswer: The Eiffel Tower is 330 metres "
            "tall.\nGrounded answer: The Eiffel Tower is <co: 0>330 metres</co: 0> tall.",
            Final("The Eiffel Tower is 330 metres tall."),
        ),
        Case(
            family,
            "command-a-response",
            "<|START_THINKING|>The tool reported 42 units left in the warehouse.<|END_THINKING|>"
            "<|START_RESPONSE|>There are 42 units in stock.<|END_RESPONSE|>",
            Final("There are 42 units in stock."),
        ),
        Case(
            family,
            "command-r7b-response-alone",
            "<|START_RESPONSE|>Hello! How can I help you today?<|END_RESPONSE|>",
            Final("Hello! How can I help you today?"),
        ),
        Case(
            family,
            "plan-then-answer",
            "Plan: First I will answer directly, no tool is needed for this.\n"
            "Answer: The speed of light is about 299,792 km/s.",
            Final("The speed of light is about 299,792 km/s."),
            drafts=("First I will answer directly, no tool is needed for this.",),
        ),
        Case(
            family,
            "negative-malformed-action",
            'Action: ```json\n[\n    {\n        "tool_name": "search",\n        "parameters": '
            '{"query": "Cohere"\n]\n```',
            FEEDBACK,
        ),
    ]


def _granite() -> list[Case]:
    family = "granite_phi"
    return [
        Case(
            family,
            "granite30-tool-call-token",
            '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Boston"}}]',
            Call("get_weather", {"city": "Boston"}),
        ),
        Case(
            family,
            "granite31-tool-call-tag-list",
            '<tool_call>[{"name": "search", "arguments": {"query": "IBM Granite 3.1 licence"}}]',
            Call("search", {"query": "IBM Granite 3.1 licence"}),
        ),
        Case(
            family,
            "granite-two-calls",
            '<|tool_call|>[{"name": "get_time", "arguments": {"timezone": "America/New_York"}}, '
            '{"name": "get_weather", "arguments": {"city": "New York"}}]',
            Calls(
                Call("get_time", {"timezone": "America/New_York"}),
                Call("get_weather", {"city": "New York"}),
            ),
        ),
        Case(
            family,
            "phi4-mini-functools",
            'functools[{"name": "get_stock_price", "arguments": {"ticker": "MSFT"}}]',
            Call("get_stock_price", {"ticker": "MSFT"}),
        ),
        Case(
            family,
            "phi4-mini-functools-two-calls",
            'functools[{"name": "get_weather", "arguments": {"city": "Seattle"}}, '
            '{"name": "get_weather", "arguments": {"city": "Portland"}}]',
            Calls(
                Call("get_weather", {"city": "Seattle"}), Call("get_weather", {"city": "Portland"})
            ),
        ),
        Case(
            family,
            "phi4-mini-tool-call-tags",
            '<|tool_call|>[{"name": "calculator", "arguments": {"expression": "sqrt(144)"}}]'
            "<|/tool_call|>",
            Call("calculator", {"expression": "sqrt(144)"}),
        ),
        Case(
            family,
            "granite32-thought-process-answer",
            "Here is my thought process:\nThe tool returned twelve items, so I should report the"
            " count.\n\nHere is my response:\nThere are 12 items in your cart.",
            Final("There are 12 items in your cart."),
        ),
        Case(
            family,
            "granite32-one-line-each",
            "Here is my thought process: The user only greeted me, no tool is needed. "
            "Here is my response: Hello! How can I help?",
            Final("Hello! How can I help?"),
        ),
        Case(
            family,
            "negative-args-not-an-object",
            '<|tool_call|>[{"name": "get_weather", "arguments": "Boston"}]',
            Error("not one JSON object"),
        ),
        Case(
            family,
            "negative-list-of-data",
            '<|tool_call|>[{"city": "Boston", "temp_f": 64}]',
            FEEDBACK,
        ),
    ]


def _finals() -> list[Case]:
    family = "finals"
    return [
        Case(
            family,
            "answer-tag-after-think",
            "<think>\nNineteen plus twenty-three makes forty-two.\n</think>\n<answer>42</answer>",
            Final("42"),
        ),
        Case(
            family,
            "answer-tag-alone",
            "<answer>\nThe meeting is on Tuesday at 3 pm.\n</answer>",
            Final("The meeting is on Tuesday at 3 pm."),
        ),
        Case(
            family,
            "boxed",
            "Fifteen percent of 80 is 0.15 × 80 = 12.\n\nSo the answer is $\\boxed{12}$.",
            Final("12"),
        ),
        Case(
            family,
            "boxed-after-think",
            "<think>\nCompute 80 times 0.15 which gives twelve.\n</think>\n\n\\boxed{12}",
            Final("12"),
        ),
        Case(
            family,
            "smolagents-final-answer-tool",
            'Action:\n{\n  "name": "final_answer",\n  "arguments": {"answer": "The population of'
            ' Lisbon is about 545,000."}\n}',
            Final("The population of Lisbon is about 545,000."),
        ),
        Case(
            family,
            "bold-final-answer",
            "**Final Answer:** The train leaves at 14:05.",
            Final("The train leaves at 14:05."),
        ),
        Case(
            family,
            "bold-final-answer-after-think",
            "<think>\nAll three search results agree on the capital.\n</think>\n\n"
            "**Final Answer:** Canberra",
            Final("Canberra"),
        ),
        Case(
            family,
            "answer-line",
            "Answer: Mount Everest is 8,849 m tall.",
            Final("Mount Everest is 8,849 m tall."),
        ),
        Case(
            family,
            "negative-json-answer-in-final-answer",
            'Thought: The tool gave me the data.\nFinal Answer: {"city": "Rome", "temp_c": 21}',
            Final('{"city": "Rome", "temp_c": 21}'),
        ),
        Case(
            family,
            "negative-json-answer-in-answer-tag",
            '<answer>{"name": "Alice", "age": 3}</answer>',
            Final('{"name": "Alice", "age": 3}'),
        ),
        Case(
            family,
            "negative-prose",
            "Sorry, I cannot help with that request.",
            FEEDBACK,
        ),
    ]


def _react_variants() -> list[Case]:
    family = "react_variants"
    return [
        Case(
            family,
            "fenced-action-input",
            "Thought: I need the weather first.\nAction: get_weather\nAction Input:\n```json\n"
            '{"city": "Rome"}\n```',
            ROME,
        ),
        Case(
            family,
            "json-on-action-line",
            "Thought: Search for it.\nAction: "
            '{"name": "search", "arguments": {"query": "LangGraph checkpointers"}}',
            Call("search", {"query": "LangGraph checkpointers"}),
        ),
        Case(
            family,
            "json-fenced-under-action",
            "Thought: I will read the notes.\nAction:\n```json\n"
            '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```',
            Call("read_file", {"path": "notes.txt"}),
        ),
        Case(
            family,
            "call-syntax-on-action-line",
            'Thought: Compute it.\nAction: calculator(expression="2**16")',
            Call("calculator", {"expression": "2**16"}),
        ),
        Case(
            family,
            "langchain-blob",
            '```json\n{\n    "action": "get_time",\n    "action_input": {"timezone": '
            '"Europe/Madrid"}\n}\n```',
            Call("get_time", {"timezone": "Europe/Madrid"}),
        ),
        Case(
            family,
            "langchain-blob-final-answer",
            '```json\n{\n    "action": "Final Answer",\n    "action_input": "Madrid is one hour '
            'ahead of London."\n}\n```',
            Final("Madrid is one hour ahead of London."),
        ),
        Case(
            family,
            "numbered-react-paper",
            "Thought 1: I need to search for the Apple Remote.\nAction 1: search\n"
            'Action Input 1: {"query": "Apple Remote"}',
            Call("search", {"query": "Apple Remote"}),
        ),
        Case(
            family,
            "hallucinated-observation",
            'Thought: Check the price.\nAction: get_stock_price\nAction Input: {"ticker": "IBM"}'
            "\nObservation: 180.5\nThought: I now know.\nFinal Answer: 180.5",
            Call("get_stock_price", {"ticker": "IBM"}),
        ),
        Case(
            family,
            "bold-keys-final",
            "**Thought:** I have everything I need.\n**Final Answer:** 1,024",
            Final("1,024"),
        ),
        Case(
            family,
            "negative-sentence-as-action",
            "Thought: I should look.\nAction: I will search the web for the answer.",
            FEEDBACK,
        ),
        Case(
            family,
            "negative-two-names",
            'Action: search, calculator\nAction Input: {"query": "x"}',
            FEEDBACK,
        ),
    ]


CORPUS: tuple[Case, ...] = tuple(
    _hermes()
    + _llama_json()
    + _pythonic()
    + _mistral()
    + _harmony()
    + _reasoning()
    + _xml_invoke()
    + _gemma()
    + _cohere()
    + _granite()
    + _finals()
    + _react_variants()
)
"""Every reply, grouped by family."""

FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(case.family for case in CORPUS))
"""The twelve families, in corpus order."""
