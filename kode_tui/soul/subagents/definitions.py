"""The subagent types the `Agent` tool offers: Kimi 1.52's built-ins and the user's files.

Built-ins come first and win on a name: `coder` (every tool of the parent but the root-only
ones), `explore` (reads and read-only commands) and `plan` (reads only), with Kimi's prompts
(`kimi_cli/agents/default/{coder,explore,plan}.yaml`). A cloned repo's `explore.md` must not turn
the read-only explorer into one that writes, so a file naming a built-in is listed as shadowed.

Then three folders; on a name found in more than one, the first wins:

1. `.kode/agents/` in the work dir;
2. `.claude/agents/` in the work dir (Claude Code's, so a team's agents work unchanged);
3. `$KODE_TUI_HOME/agents/` (the user's, for every work dir).

A file is Claude Code's format: YAML front matter `name` (else the file's name), `description`,
`tools` (a comma-separated list or a YAML list; Claude Code's names `Read`, `Bash`... mean ours;
omitted: the parent's tools, as `coder`) and `model` (`inherit`, or omitted: the parent's); the
body is the system prompt. Other keys (`color`...) are ignored.

Nothing in a file is trusted: one whose real path lies outside the work dir (or outside
`$KODE_TUI_HOME/agents` for the user's), that is not a regular file, over `MAX_BYTES`, not UTF-8,
with front matter that is not plain data, a bad name or no prompt gives one `AgentProblem` line
naming it, and the other agents are listed as usual (as `custom_commands` does for commands).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import msgspec

from kode_tui.paths import home as kode_home
from kode_tui.paths import tilde
from kode_tui.soul.markdown_files import (
    NotRead,
    SourceFolder,
    front_matter,
    one_line,
    read_confined,
    text_field,
)
from kode_tui.soul.project_files import scalar_text

__all__ = [
    "BUILT_IN",
    "AgentDefinition",
    "AgentListing",
    "AgentProblem",
    "list_agents",
    "tool_name",
]

Source = Literal["built-in", "project", "claude", "user"]
_Folder = SourceFolder[Source]

MAX_BYTES = 256 * 1024
"""A system prompt, not a data file: a larger one is refused."""
MAX_FILES = 200
"""Per folder: a cloned repo decides how many there are."""
LABEL_CHARS = 200
"""A description is one line of the `Agent` tool's description."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")

CLAUDE_TOOLS = {
    "Read": "ReadFile",
    "Write": "WriteFile",
    "Edit": "StrReplaceFile",
    "MultiEdit": "StrReplaceFile",
    "Bash": "Shell",
    "Glob": "Glob",
    "Grep": "Grep",
    "LS": "Glob",
    "WebFetch": "FetchURL",
    "WebSearch": "SearchWeb",
    "TodoWrite": "SetTodoList",
}
"""Claude Code's tool names and ours (Kimi's), so a `.claude/agents` file keeps its tools."""


def tool_name(name: str) -> str:
    """Our name for a tool a definition lists (Claude Code's `Read` is `ReadFile`)."""
    return CLAUDE_TOOLS.get(name, name)


class AgentDefinition(msgspec.Struct, frozen=True):
    """One subagent type."""

    name: str
    """`coder`, `explore`, `code-reviewer`: what `subagent_type` names."""
    description: str
    """One line, safe to show."""
    tools: tuple[str, ...] | None
    """The tools it may use (our names), in order; None: the parent's (never the root-only ones)."""
    model: str | None
    """The model alias it asks for; None: the parent's."""
    role: str = ""
    """A built-in's addition to the parent's system prompt (Kimi's `ROLE_ADDITIONAL`)."""
    system_prompt: str | None = None
    """A file's body, which replaces the system prompt; None for a built-in."""
    when_to_use: str = ""
    source: Source = "built-in"
    shown_path: str = ""
    """Where its file is, for people (`.claude/agents/reviewer.md`); empty for a built-in."""


class AgentProblem(msgspec.Struct, frozen=True):
    """A definition file that was not read, and why (one line naming the file)."""

    message: str


class AgentListing(msgspec.Struct, frozen=True):
    """The subagent types of a work dir at one moment."""

    agents: tuple[AgentDefinition, ...]
    """Built-ins first, then the files' by name."""
    shadowed: tuple[AgentDefinition, ...] = ()
    """Files whose name a built-in or an earlier folder's file has."""
    problems: tuple[AgentProblem, ...] = ()

    def get(self, name: str) -> AgentDefinition | None:
        """The type `name` names, if any."""
        return next((a for a in self.agents if a.name == name), None)


# --- built-ins: Kimi 1.52's agents/default/{coder,explore,plan}.yaml ------------------------------

_SUBAGENT_ROLE = (
    "You are now running as a subagent. All the `user` messages are sent by the main agent. The "
    "main agent cannot see your context, it can only see your last message when you finish the "
    "task. You must treat the parent agent as your caller. Do not directly ask the end user "
    "questions. If something is unclear, explain the ambiguity in your final summary to the "
    "parent agent."
)

_EXPLORE_ROLE = """\
You are a codebase exploration specialist. Your role is EXCLUSIVELY to search, read, and analyze \
existing code and resources. You do NOT have access to file editing tools.

Your strengths:
- Rapidly finding files using glob patterns
- Searching code and text with powerful regex patterns
- Reading and analyzing file contents
- Running read-only shell commands (git log, git diff, ls, find, etc.)

Guidelines:
- Use Glob for broad file pattern matching
- Use Grep for searching file contents with regex
- Use ReadFile when you know the specific file path
- Use Shell ONLY for read-only operations (ls, git status, git log, git diff, find)
- NEVER use Shell for any file creation or modification commands
- Adapt your search depth based on the thoroughness level specified by the caller
- Wherever possible, spawn multiple parallel tool calls for grepping and reading files to \
maximize speed

You are meant to be a fast agent. Complete the search request efficiently and report your \
findings clearly in a structured format."""

_PLAN_ROLE = """\
Before designing your implementation plan, consider whether you fully understand the codebase \
areas relevant to the task. If not, recommend the parent agent to use the explore agent \
(subagent_type="explore") to investigate key questions first. In your response, clearly state:
1. What you already know from the information provided
2. What questions remain unanswered that would benefit from explore agent investigation
3. Your implementation plan (either preliminary if questions remain, or final if sufficient \
context exists)"""

_READS = ("ReadFile", "ReadMediaFile", "Glob", "Grep", "SearchWeb", "FetchURL")

BUILT_IN: tuple[AgentDefinition, ...] = (
    AgentDefinition(
        name="coder",
        description="Good at general software engineering tasks.",
        tools=("Shell", "WriteFile", "StrReplaceFile", *_READS),
        model=None,
        role=_SUBAGENT_ROLE,
        when_to_use=(
            "Use this agent for non-trivial software engineering work that may require reading "
            "files, editing code, running commands, and returning a compact but technically "
            "complete summary to the parent agent."
        ),
    ),
    AgentDefinition(
        name="explore",
        description="Fast codebase exploration with prompt-enforced read-only behavior.",
        tools=("Shell", *_READS),
        model=None,
        role=f"{_SUBAGENT_ROLE}\n\n{_EXPLORE_ROLE}",
        when_to_use=(
            "Fast agent specialized for exploring codebases: finding files by patterns, "
            "searching code for keywords, answering questions about the codebase. Specify the "
            'thoroughness: "quick", "medium" or "thorough". Prefer launching multiple explore '
            "agents concurrently when investigating independent questions."
        ),
    ),
    AgentDefinition(
        name="plan",
        description="Read-only implementation planning and architecture design.",
        tools=_READS,
        model=None,
        role=f"{_SUBAGENT_ROLE}\n\n{_PLAN_ROLE}",
        when_to_use=(
            "Use this agent when the parent agent needs a step-by-step implementation plan, key "
            "file identification, and architectural trade-off analysis before code changes."
        ),
    ),
)


# --- reading the folders --------------------------------------------------------------------------


def list_agents(work_dir: Path, home: Path | None = None) -> AgentListing:
    """The built-ins and the agent files of `work_dir` and of `home` (`$KODE_TUI_HOME` by
    default), read now (they are few and small; the `Agent` tool reads them once per turn)."""
    user = (home if home is not None else kode_home()) / "agents"
    folders = (
        _Folder(work_dir / ".kode" / "agents", "project", work_dir, "the work dir"),
        _Folder(work_dir / ".claude" / "agents", "claude", work_dir, "the work dir"),
        _Folder(user, "user", user, tilde(user)),
    )
    agents = {a.name: a for a in BUILT_IN}
    files: dict[str, AgentDefinition] = {}
    shadowed: list[AgentDefinition] = []
    problems: list[AgentProblem] = []
    for folder in folders:
        for path in _scan(folder, work_dir, problems):
            item = _load(folder, path, folder.shown(path, work_dir))
            if isinstance(item, AgentProblem):
                problems.append(item)
            elif item.name in agents or item.name in files:
                shadowed.append(item)
            else:
                files[item.name] = item
    ordered = (*BUILT_IN, *sorted(files.values(), key=lambda a: a.name))
    return AgentListing(ordered, tuple(shadowed), tuple(problems))


def _scan(folder: _Folder, work_dir: Path, problems: list[AgentProblem]) -> list[Path]:
    """The `.md` files of `folder` (not its subfolders), at most `MAX_FILES`."""
    if not folder.path.is_dir():
        return []
    try:
        names = sorted(
            p.name
            for p in folder.path.iterdir()
            if p.name.lower().endswith(".md") and not p.name.startswith(".")
        )
    except OSError:
        return []
    if len(names) > MAX_FILES:
        shown = folder.shown(folder.path, work_dir)
        problems.append(
            AgentProblem(f"{shown} holds more than {MAX_FILES} agent files: the rest are not read.")
        )
    return [folder.path / name for name in names[:MAX_FILES]]


def _load(folder: _Folder, path: Path, shown: str) -> AgentDefinition | AgentProblem:
    def problem(why: str) -> AgentProblem:
        return AgentProblem(f"agent {shown} {why}")

    try:
        text = read_confined(path, folder.confine, folder.confine_shown, MAX_BYTES)
        fields, body = front_matter(text)
        name = text_field(fields, "name") or path.stem.lower()
        tools = _tools(fields.get("tools"))
        model = text_field(fields, "model")
        description = text_field(fields, "description")
    except NotRead as error:
        return problem(f"{error}: not read.")
    if not _NAME.fullmatch(name):
        return problem("has a name that is not lower-case letters, digits, - and _: not read.")
    body = body.strip()
    if not body:
        return problem("has no system prompt (its body is empty): not read.")
    first_line = next(line.strip() for line in body.splitlines() if line.strip())
    return AgentDefinition(
        name=name,
        description=one_line(description or first_line.lstrip("# "), LABEL_CHARS),
        tools=tools,
        model=None if model in (None, "", "inherit") else model,
        system_prompt=body,
        source=folder.source,
        shown_path=shown,
    )


def _tools(value: object) -> tuple[str, ...] | None:
    """`Read, Grep` or `[Read, Grep]` as our tool names, in order, once each."""
    if value is None:
        return None
    if isinstance(value, list):
        words = [scalar_text(item) for item in value]
        if any(word is None for word in words):
            raise NotRead("has a `tools:` list that is not names")
        raw = [word for word in words if word]
    else:
        text = scalar_text(value)
        if text is None:
            raise NotRead("has a `tools:` that is not names")
        raw = text.split(",")
    names: list[str] = []
    for word in raw:
        name = tool_name(word.strip())
        if name and name not in names:
            names.append(name)
    return tuple(names)
