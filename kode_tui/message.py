"""Messages and the other records of a context file, in Kimi CLI's JSON.

A context.jsonl line is a message (`user`, `assistant`, `tool`, `system`) or a record whose role
starts with `_` (`_checkpoint`, `_usage`, `_system_prompt`, our `_file_edit`). The JSON is exactly
what Kimi CLI (kosong) reads and writes, so either tool opens the other's sessions:

* content is a string (one text part) or a list of typed parts: `text`, `think`, `image_url`;
* unknown part types, unknown keys and unknown `_records` are kept as they came and written back
  unchanged (models allow extra keys, and dumps include exactly the keys that were read);
* messages are written compact (pydantic), the `_` records with `json.dumps` defaults, as Kimi does;
* every `_` record we add has a `content` string, or Kimi CLI 1.52 fails to restore the file.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import base64
import binascii
import functools
import html
import itertools
import json
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Annotated, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    TypeAdapter,
)

from kode_tui.humanize import format_size

IMAGE_TOKENS = 2_000
"""What an image (or other media part) is counted as: Kimi CLI 1.52's `MEDIA_TOKEN_ESTIMATE`.
Providers charge by pixels (an image of at most 2048 px costs ~1.5k tokens at Anthropic, up to
~1.1k at OpenAI); the data URL's length would count it a hundred times over."""

Role = Literal["system", "user", "assistant", "tool"]
MESSAGE_ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))


class _Model(BaseModel):
    """A dump holds the keys that were read, unknown ones too (extra="allow"), plus what Kimi
    always writes: the `_always` keys even at their default, the `_unless_none` keys only when
    not None. So Kimi's lines come back byte for byte, and new ones look like Kimi's."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    _always: ClassVar[frozenset[str]] = frozenset()
    _unless_none: ClassVar[frozenset[str]] = frozenset()

    def model_post_init(self, context: Any, /) -> None:
        # Runs after parsing and after construction alike, and only marks what a dump shows.
        # (An overridden __init__ would run on every parse too, and validate everything twice.)
        fields_set = self.__pydantic_fields_set__
        fields_set.update(self._always)
        for name in self._unless_none:
            if name in fields_set and getattr(self, name) is None:
                fields_set.discard(name)

    def to_json(self) -> str:
        return self.model_dump_json(exclude_unset=True)


class TextPart(_Model):
    type: Literal["text"] = "text"
    text: str

    _always = frozenset(("type",))


class ThinkPart(_Model):
    type: Literal["think"] = "think"
    think: str
    encrypted: str | None = None
    """Encrypted thinking or its signature, when the provider gives one."""

    _always = frozenset(("type", "encrypted"))


class ImageURL(_Model):
    url: str
    id: str | None = None

    _always = frozenset(("id",))


class ImageURLPart(_Model):
    type: Literal["image_url"] = "image_url"
    image_url: ImageURL

    _always = frozenset(("type",))


class UnknownPart(_Model):
    """A part type this version does not know (audio, video, a future kind): kept verbatim."""

    type: str


def type_tag(known: Iterable[str]) -> Callable[[Any], str]:
    """A discriminator on the `type` key that sends every type not in `known` to "unknown"."""
    known_types = frozenset(known)

    def tag(value: Any) -> str:
        kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
        return kind if kind in known_types else "unknown"

    return tag


ContentPart = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ThinkPart, Tag("think")]
    | Annotated[ImageURLPart, Tag("image_url")]
    | Annotated[UnknownPart, Tag("unknown")],
    Discriminator(type_tag(("text", "think", "image_url"))),
]


class FunctionBody(_Model):
    name: str
    arguments: str | None = None
    """The arguments as a JSON string (possibly partial while streaming)."""


class ToolCall(_Model):
    type: Literal["function"] = "function"
    id: str
    function: FunctionBody
    extras: dict[str, Any] | None = None

    _always = frozenset(("type",))
    _unless_none = frozenset(("extras",))


class Message(_Model):
    role: Role
    name: str | None = None
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    partial: bool | None = None

    _unless_none = frozenset(("name", "tool_calls", "tool_call_id", "partial"))

    @property
    def parts(self) -> list[TextPart | ThinkPart | ImageURLPart | UnknownPart]:
        """The content as a list of parts, whatever form it was stored in."""
        if self.content is None:
            return []
        if isinstance(self.content, str):
            return [TextPart(text=self.content)]
        return list(self.content)

    @property
    def text(self) -> str:
        """The text parts joined (think parts and images left out)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    def estimated_tokens(self) -> int:
        """A rough token count (chars / 4) of what the model reads from this message."""
        content = self.content
        chars = 0
        if isinstance(content, str):  # the common case: no part objects needed to count
            chars = len(content)
        for part in content if isinstance(content, list) else ():
            if isinstance(part, TextPart):
                chars += len(part.text)
            elif isinstance(part, ThinkPart):
                chars += len(part.think)
            else:
                chars += IMAGE_TOKENS * 4
        for call in self.tool_calls or ():
            chars += len(call.function.name) + len(call.function.arguments or "")
        return chars // 4


# --- Kimi's `<system>` markers ------------------------------------------------------------------
# What kode-tui (not the user, not a tool's output) says inside a message is marked as Kimi CLI
# marks it: `<system>...</system>` (a tool result's status, checkpoint notes, the compaction and
# D-Mail notes). Kode's reminders travel as `<system-reminder>` blocks, in requests only. Both
# are built and recognised here and nowhere else.

_SYSTEM_OPEN, _SYSTEM_CLOSE = "<system>", "</system>"
_REMINDER_OPEN = "<system-reminder>"
_ERROR = "ERROR: "
_SYSTEM_NOTE = re.compile(r"\s*<system>(.*?)</system>\n?", re.DOTALL)
_CHECKPOINT_NOTE = re.compile(r"\s*<system>CHECKPOINT \d+</system>\s*")


def system_text(text: str) -> str:
    """`text` marked as coming from the system: `<system>text</system>`."""
    return f"{_SYSTEM_OPEN}{text}{_SYSTEM_CLOSE}"


def system(text: str) -> TextPart:
    """A text part marked as coming from the system, as Kimi marks them."""
    return TextPart(text=system_text(text))


def reminder_text(text: str) -> str:
    """A reminder as the model reads it: a `<system-reminder>` block (Kode's form)."""
    return f"{_REMINDER_OPEN}\n{text}\n</system-reminder>"


def checkpoint_note(checkpoint_id: int) -> str:
    """The user message that tells the model a checkpoint's id (for D-Mail)."""
    return system_text(f"CHECKPOINT {checkpoint_id}")


def is_checkpoint_note(text: str) -> bool:
    """Whether a user message's text is only the `<system>CHECKPOINT n</system>` note that tells
    the model a checkpoint's id (for D-Mail): something for the model, not the user's words."""
    return _CHECKPOINT_NOTE.fullmatch(text) is not None


def is_shown(message: Message) -> bool:
    """Whether a person would call `message` part of the conversation (not a checkpoint note
    for the model)."""
    return not (message.role == "user" and is_checkpoint_note(message.text))


def shown_messages(messages: Sequence[Message]) -> list[Message]:
    """The messages a person would call the conversation: checkpoint notes for the model left
    out. What every count of messages a user reads counts."""
    return [m for m in messages if is_shown(m)]


@runtime_checkable
class _CountsShown(Protocol):
    def count_shown(self, stop: int) -> int: ...


def shown_count(messages: Sequence[Message], stop: int) -> int:
    """`len(shown_messages(messages[:stop]))`; a stored context's history counts it without
    parsing (and keeping) every message (`kode_tui.session.history.History.count_shown`)."""
    if isinstance(messages, _CountsShown):
        return messages.count_shown(stop)
    return len(shown_messages(messages[:stop]))


def is_system_note(text: str, starting: str = "") -> bool:
    """Whether `text` begins with a `<system>` note (whose words begin with `starting`): the
    system speaking, not the user."""
    return text.startswith(_SYSTEM_OPEN + starting)


COMPACTION_OUTPUT_PREFIX = "Previous context has been compacted. Here is the compaction output:"
"""How the summary a compaction leaves begins, inside `<system>` tags (Kimi's wording, exact:
Kimi's files are recognised by it)."""

DMAIL_NOTE = "You just got a D-Mail"
"""How the note a D-Mail brings back begins (`prompts/dmail.md`, Kimi's wording)."""


def is_dmail_note(text: str) -> bool:
    """Whether `text` is the `<system>` note a D-Mail left in the context."""
    return is_system_note(text, DMAIL_NOTE)


def is_from_system(text: str) -> bool:
    """Whether `text` is a `<system>` note or a `<system-reminder>` block: what a request holds
    besides the user's own words."""
    return text.startswith((_SYSTEM_OPEN, _REMINDER_OPEN))


def split_system_note(text: str) -> tuple[str, str]:
    """The words of the `<system>` note `text` begins with (stripped; "" without one) and the
    text after it: a tool message's status and its output."""
    match = _SYSTEM_NOTE.match(text)
    if match is None:
        return "", text
    return match.group(1).strip(), text[match.end() :]


def unwrap_system(text: str) -> str:
    """The words of a text that is one `<system>` note, its tags taken off (a D-Mail note keeps
    a `</system>` inside the mail it carries, which `split_system_note` would stop at)."""
    return text.removeprefix(_SYSTEM_OPEN).removesuffix(_SYSTEM_CLOSE)


def tool_status(message: str, *, is_error: bool = False) -> TextPart:
    """A tool result's status line as the model reads it (`<system>ERROR: ...</system>` for an
    error), before the tool's output."""
    return system(f"{_ERROR}{message}" if is_error else message)


def split_tool_result(text: str) -> tuple[bool, str, str]:
    """A stored tool message's text read back: (is an error, its status, the tool's output)."""
    status, output = split_system_note(text)
    is_error = status.startswith(_ERROR.rstrip())
    if is_error:
        status = status.removeprefix(_ERROR.rstrip()).strip()
    return is_error, status, output


def estimate_tokens(messages: Iterable[Message]) -> int:
    return sum(message.estimated_tokens() for message in messages)


def estimate_tool_tokens(tools: Sequence[dict[str, Any]]) -> int:
    """A rough token count (chars / 4, as for messages) of tool definitions: their JSON."""
    if not tools:
        return 0
    return len(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))) // 4


# --- tool calls and their results ---------------------------------------------------------------

INTERRUPTED_RESULT = system_text("The tool call was interrupted and did not finish.")


def interrupted_result(tool_call_id: str) -> Message:
    """The result a tool call gets when it has none (a kill, a failed write): providers refuse
    a history holding a call without its result (HTTP 400), so every later turn would fail."""
    return Message(role="tool", content=INTERRUPTED_RESULT, tool_call_id=tool_call_id)


def unanswered_at_end(history: Sequence[Message]) -> list[str]:
    """The ids of the last assistant message's tool calls that have no result, when nothing but
    tool messages follows it (results can then be appended; anywhere else see `paired`)."""
    index = len(history) - 1
    while index >= 0 and history[index].role == "tool":
        index -= 1
    if index < 0:
        return []
    calls = history[index].tool_calls
    if history[index].role != "assistant" or not calls:
        return []
    answered = {message.tool_call_id for message in history[index + 1 :]}
    return [call_id for call_id in dict.fromkeys(c.id for c in calls) if call_id not in answered]


def paired(history: Iterable[Message]) -> list[Message]:
    """`history` as it can be sent: each assistant message's tool calls followed by exactly one
    result each, in the provider's order.

    A call without a result gets `interrupted_result` right after its group's results. A tool
    message that answers no call of the assistant message right before it (an orphan, or a
    second result for one call) is left out: providers refuse it too. Calls of one message that
    share an id, or have none (a file from another tool, an old version), are sent under ids of
    their own, the results of a shared id going to its calls in order. The file keeps them.
    """
    out: list[Message] = []
    waiting: dict[str, list[str]] = {}
    """A call id as the file has it -> the ids sent for its calls still without a result."""

    def close_group() -> None:
        out.extend(interrupted_result(sent) for ids in waiting.values() for sent in ids)
        waiting.clear()

    for message in history:
        if message.role == "tool":
            ids = waiting.get(message.tool_call_id or "")
            if ids:
                sent = ids.pop(0)
                if sent != message.tool_call_id:
                    message = message.model_copy(update={"tool_call_id": sent})
                out.append(message)
            continue
        close_group()
        if message.role == "assistant" and message.tool_calls:
            original = message.tool_calls
            message = _unique_call_ids(message)
            for call, renamed in zip(original, message.tool_calls or [], strict=True):
                waiting.setdefault(call.id, []).append(renamed.id)
        out.append(message)
    close_group()
    return out


def fresh_call_id(base: str, taken: Collection[str]) -> str:
    """The id a tool call whose id is empty or repeated gets: `base_2`, `base_3`... (`call_2`
    for no id), the first not in `taken`. The one rule for the soul, which renames as a response
    streams in, and for `paired`, which renames what a file holds."""
    base = base or "call"
    return next(f"{base}_{n}" for n in itertools.count(2) if f"{base}_{n}" not in taken)


def _unique_call_ids(message: Message) -> Message:
    """`message` with every tool call under an id no other call of it has (a copy when needed).

    The new ids are derived from the old ones (`a`, `a_2`), so the same history always gives
    the same request and a provider's prompt cache keeps working.
    """
    calls = message.tool_calls or []
    ids = [call.id for call in calls]
    if all(ids) and len(set(ids)) == len(ids):
        return message
    taken = set(ids)
    seen: set[str] = set()
    renamed: list[ToolCall] = []
    for call in calls:
        sent = call.id
        if not sent or sent in seen:
            sent = fresh_call_id(call.id, taken)
            taken.add(sent)
        seen.add(call.id)
        renamed.append(call.model_copy(update={"id": sent}))
    return message.model_copy(update={"tool_calls": renamed})


class TokenUsage(BaseModel):
    """What one model call used, in tokens (`input` counts the whole prompt, cached ones too).
    Defined here, not with the wire events that carry it, for the model process, which sends
    it and imports nothing of the wire."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    input: int
    output: int
    cache_read: int = 0
    cache_creation: int = 0


# --- the `_` records ---------------------------------------------------------------------------


class _Record(_Model):
    _always = frozenset(("role",))

    def to_json(self) -> str:
        # Kimi writes these with json.dumps defaults (", " / ": " and ASCII escapes).
        return json.dumps(self.model_dump(mode="json", exclude_unset=True))


class CheckpointRecord(_Record):
    role: Literal["_checkpoint"] = "_checkpoint"
    id: Annotated[StrictInt, Field(ge=0)]


class UsageRecord(_Record):
    role: Literal["_usage"] = "_usage"
    token_count: Annotated[StrictInt, Field(ge=0)]


class SystemPromptRecord(_Record):
    role: Literal["_system_prompt"] = "_system_prompt"
    content: str


class FileEditRecord(_Record):
    """A file a tool changed: the sha256 of its content before and after (None: absent).

    It carries a `content` string only for Kimi CLI 1.52: its restore raises on a record without
    `content` whose role it does not know, but skips one that has it.
    """

    role: Literal["_file_edit"] = "_file_edit"
    content: str = ""
    path: str
    before: str | None
    after: str | None
    tool_call_id: str | None = None

    _always = frozenset(("role", "content"))

    def model_post_init(self, context: Any, /) -> None:
        if not self.content:
            self.content = f"file edit: {self.path}"
        super().model_post_init(context)


class UnknownRecord(_Record):
    """A `_record` this version does not know: preserved, never interpreted."""

    role: str


_KNOWN_RECORDS = frozenset(("_checkpoint", "_usage", "_system_prompt", "_file_edit"))


def _record_tag(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    if isinstance(role, str) and role.startswith("_"):
        return role if role in _KNOWN_RECORDS else "unknown"
    return "message"


Record = Annotated[
    Annotated[Message, Tag("message")]
    | Annotated[CheckpointRecord, Tag("_checkpoint")]
    | Annotated[UsageRecord, Tag("_usage")]
    | Annotated[SystemPromptRecord, Tag("_system_prompt")]
    | Annotated[FileEditRecord, Tag("_file_edit")]
    | Annotated[UnknownRecord, Tag("unknown")],
    Discriminator(_record_tag),
]

AnyRecord = (
    Message | CheckpointRecord | UsageRecord | SystemPromptRecord | FileEditRecord | UnknownRecord
)


@functools.cache
def _record_adapter() -> TypeAdapter[AnyRecord]:
    """Built at the first record read (~10 ms of schema): the model process reads none, and a
    new session's first request goes before any."""
    return TypeAdapter(Record)


def parse_record(line: str | bytes | dict[str, Any]) -> AnyRecord:
    """One context.jsonl line (or its decoded object) as a model; ValueError when it is not one."""
    if isinstance(line, dict):
        return _record_adapter().validate_python(line)
    return _record_adapter().validate_json(line)


def dump_record(record: AnyRecord) -> str:
    """The line for a record, without the newline."""
    return record.to_json()


# --- media in tool results -----------------------------------------------------------------------

_MEDIA_KINDS = {"image_url": "image", "audio_url": "audio", "video_url": "video"}
_MEDIA_TAG = re.compile(r"<(image|audio|video)\b([^>]*)>(\s*</\1>)?")
_PATH_ATTRIBUTE = re.compile(r'\bpath="([^"]*)"')


def media_chips(output: str, parts: Sequence[ContentPart]) -> tuple[str, list[str]]:
    """A tool result's text without the `<image path=…></image>` wrappers its media parts leave
    empty in it (Kimi CLI's ReadMediaFile), and a chip for each part: `image cat.png · 12 KiB`
    (the size of the data sent to the model; a part sent as a link has none)."""
    tags: list[tuple[str, str]] = []
    for match in _MEDIA_TAG.finditer(output):
        path = _PATH_ATTRIBUTE.search(match.group(2))
        tags.append((match.group(1), html.unescape(path.group(1)) if path else ""))
    text = _MEDIA_TAG.sub("", output).strip() if parts else output
    chips: list[str] = []
    for part in parts:
        kind = _MEDIA_KINDS.get(part.type, part.type)
        tag = next((tag for tag in tags if tag[0] == kind), None)
        if tag is not None:
            tags.remove(tag)
        size = _data_size(part.model_dump().get(part.type))
        fields = [kind, tag[1] if tag else "", format_size(size) if size else ""]
        chips.append(" · ".join(field for field in fields if field))
    return text, chips


def _data_size(value: object) -> int | None:
    """The decoded size of a `data:…;base64,` URL, given as itself or as `{"url": …}`."""
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return None
    data = url.partition(";base64,")[2].strip()
    return len(data) * 3 // 4 - data[-2:].count("=")


def data_url_bytes(url: str) -> bytes | None:
    """The bytes a `data:…;base64,` URL holds; None for any other URL or broken base64."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    try:
        return base64.b64decode(url.partition(";base64,")[2].strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


def image_urls(parts: Iterable[ContentPart]) -> list[str]:
    """The URLs of the image parts among `parts`, in order."""
    return [part.image_url.url for part in parts if isinstance(part, ImageURLPart)]
