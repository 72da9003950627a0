"""Skills: folders of instructions, scripts and references, each with a `SKILL.md`.

A skill is a folder `<name>/SKILL.md` in one of these, read in this order; on a name found in
more than one (case ignored, as Kimi CLI does), the first wins and the others are listed as
shadowed:

1. `.kode/skills/` in the work dir (kode-tui's own place);
2. `.kimi/skills/` in the work dir (Kimi CLI 1.52's project folder);
3. `.claude/skills/` in the work dir (Claude Code's, so a team's skills work unchanged);
4. `.agents/skills/` in the work dir (the folder every agent reads);
5. `$KODE_TUI_HOME/skills/` (the user's, for every work dir);
6. `~/.kimi/skills/` (Kimi CLI's user folder);
7. `~/.claude/skills/` (Claude Code's user folder: a Claude Code user's skills come along);
8. `~/.agents/skills/` (the user folder Codex and other agents read).

`SKILL.md` has YAML front matter `name` (else the folder's name) and `description` (else the
body's first line, as Kimi does). Progressive disclosure, as Kimi 1.52 does it: only each
skill's name, the path of its `SKILL.md` and its description go into the system prompt (the
`skills` block, `prompt_block`); the model reads the body, and the files beside it, with
ReadFile when a task calls for the skill. There is no `Skill` tool: Kimi has none and its models
are told to read `SKILL.md`, and a tool's schema would cost tokens on every request. ReadFile
(and ReadMediaFile, Glob, Grep: Kimi lets Glob list skill folders) reads a listed skill's
folder without asking even outside the work dir (`Skills.covers`), and only that folder: a
symlink in it that leads elsewhere asks as any outside read does. `/skill:NAME` sends a skill's
`SKILL.md` as the user's message (`facade/custom.py`), as Kimi's command does. A script a skill
ships runs through Shell like any command (the sandbox, the approvals: nothing special).

Nothing in a folder is trusted (a cloned repo brings it): a `SKILL.md` whose real path lies
outside its folder's root (a skill folder in the work dir that is a symlink out of it, say),
that is not a regular file, over `MAX_BYTES`, not UTF-8, with front matter that is not plain
data or a bad name gives one `SkillProblem` line naming it, and the other skills are listed as
usual (as custom commands and agent definitions do). One exception, for the user's folders
alone (5 to 8): dotfiles often symlink skill folders into `~/.claude/skills`, so a skill folder
there may be a symlink to a folder elsewhere when that folder is the user's own and not
world-writable (nobody else could put a skill in it); the skill is then confined to that
folder, and `/skills` says where it points.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Literal

import msgspec

from kode_tui.paths import home as kode_home
from kode_tui.paths import tilde
from kode_tui.safetext import visible
from kode_tui.soul import prompts
from kode_tui.soul.markdown_files import (
    NotRead,
    SourceFolder,
    front_matter,
    one_line,
    read_confined,
    text_field,
)

__all__ = [
    "SKILLS_BLOCK",
    "SKILL_COMMAND",
    "Skill",
    "SkillListing",
    "SkillProblem",
    "Skills",
    "command_text",
    "prompt_block",
    "with_skills",
]

Source = Literal[
    "project", "kimi", "claude", "agents", "user", "kimi-user", "claude-user", "agents-user"
]
_Folder = SourceFolder[Source]

SKILL_COMMAND = "/skill:"
"""`/skill:NAME [request]` sends the skill `NAME` as the user's message (Kimi's command)."""
SKILLS_BLOCK = "skills"
"""The block's name in the system prompt and in `/context`."""
MAX_BYTES = 256 * 1024
"""Instructions, not a data file: a larger `SKILL.md` is refused."""
MAX_FOLDERS = 200
"""Per skills folder: a cloned repo decides how many there are, and each is read per request."""
DESCRIPTION_CHARS = 1024
"""The Agent Skills format's cap on a description; it goes into every request."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class Skill(msgspec.Struct, frozen=True):
    """One skill folder, its `SKILL.md` read for its name and description only."""

    name: str
    description: str
    """One line, safe to show."""
    path: Path
    """Its `SKILL.md`, as found (not resolved): the path the model is given."""
    folder: Path
    """Its folder, symlinks resolved: what ReadFile reads without asking."""
    shown_path: str
    """`path` for people: `.claude/skills/pdf/SKILL.md`, `~/.kode-tui/skills/pdf/SKILL.md`."""
    source: Source
    body_tokens: int
    """What reading its `SKILL.md` costs (characters / 4)."""
    link: str = ""
    """Where its folder points, for people, when it is a symlink in a user folder; else ""."""

    @property
    def project(self) -> bool:
        """Whether it comes from the work dir (else from the user's folders)."""
        return self.source in ("project", "kimi", "claude", "agents")

    def entry(self) -> str:
        """Its lines in the system prompt (Kimi's form)."""
        return f"- {self.name}\n  - Path: {self.path}\n  - Description: {self.description}"

    @property
    def prompt_tokens(self) -> int:
        """What it costs in every request (its `entry`, characters / 4)."""
        return len(self.entry()) // 4 + 1


class SkillProblem(msgspec.Struct, frozen=True):
    """A skill that was not read, and why (one line naming its file)."""

    message: str


class SkillListing(msgspec.Struct, frozen=True):
    """The skills of a work dir at one moment."""

    skills: tuple[Skill, ...] = ()
    """By name."""
    shadowed: tuple[Skill, ...] = ()
    """Skills whose name an earlier folder's skill has."""
    problems: tuple[SkillProblem, ...] = ()


def prompt_block(listing: SkillListing) -> str:
    """The skills as the system prompt's `<context name="skills">` block, grouped by scope as
    Kimi does (Project, then User); "" when there are none."""
    groups = [
        (heading, [skill.entry() for skill in listing.skills if skill.project == project])
        for heading, project in (("Project", True), ("User", False))
    ]
    text = "\n\n".join(f"### {heading}\n" + "\n".join(lines) for heading, lines in groups if lines)
    if not text:
        return ""
    return f'\n\n<context name="{SKILLS_BLOCK}">{prompts.render("skills", skills=text)}</context>'


def command_text(skill: Skill, request: str) -> str:
    """What `/skill:NAME request` sends, as Kimi 1.52 sends it: the whole `SKILL.md` (read now,
    still confined to the skill's folder), then the user's request; NotRead why not."""
    text = read_confined(skill.path, skill.folder, "its skill folder", MAX_BYTES).strip()
    request = request.strip()
    return f"{text}\n\nUser request:\n{request}" if request else text


def with_skills(
    system_prompt: str, blocks: list[tuple[str, int]], listing: SkillListing
) -> tuple[str, list[tuple[str, int]]]:
    """`system_prompt` with the skills block appended, and `blocks` with its `/context` row
    (estimated tokens: characters // 4, as the other blocks)."""
    block = prompt_block(listing)
    if not block:
        return system_prompt, blocks
    row = f"{SKILLS_BLOCK} ({len(listing.skills)})"
    return system_prompt + block, [*blocks, (row, len(block) // 4)]


class Skills:
    """The skills of one work dir, read again when a `SKILL.md` changes."""

    def __init__(self, work_dir: Path, home: Path | None = None) -> None:
        """`home` is kode-tui's (`$KODE_TUI_HOME`, by default)."""
        user = (home if home is not None else kode_home()) / "skills"
        self._work_dir = work_dir
        project: tuple[tuple[str, Source], ...] = (
            (".kode", "project"),
            (".kimi", "kimi"),
            (".claude", "claude"),
            (".agents", "agents"),
        )
        users: tuple[tuple[Path, Source], ...] = (
            (user, "user"),
            # Kimi's `~/.kimi/skills` (not its share dir), then Claude Code's and the generic
            # one, as Kimi reads them.
            (Path.home() / ".kimi" / "skills", "kimi-user"),
            (Path.home() / ".claude" / "skills", "claude-user"),
            (Path.home() / ".agents" / "skills", "agents-user"),
        )
        self._folders = (
            *(
                _Folder(work_dir / brand / "skills", source, work_dir, "the work dir")
                for brand, source in project
            ),
            *(_Folder(path, source, path, tilde(path)) for path, source in users),
        )
        self._read: dict[Path, tuple[tuple[int, int], Skill | SkillProblem]] = {}
        self.last = SkillListing()
        """What the last `listing()` found: the skills the model was last told of."""

    def listing(self) -> SkillListing:
        """The skills now: each `SKILL.md` is stat'ed, and read again only when it changed."""
        read: dict[Path, tuple[tuple[int, int], Skill | SkillProblem]] = {}
        skills: dict[str, Skill] = {}
        shadowed: list[Skill] = []
        problems: list[SkillProblem] = []
        for folder in self._folders:
            for path, version in self._scan(folder, problems):
                cached = self._read.get(path)
                if cached is None or cached[0] != version:
                    cached = (version, self._load(folder, path))
                read[path] = cached
                item = cached[1]
                if isinstance(item, SkillProblem):
                    problems.append(item)
                elif item.name.casefold() in skills:
                    shadowed.append(item)
                else:
                    skills[item.name.casefold()] = item
        self._read = read
        ordered = tuple(sorted(skills.values(), key=lambda s: s.name.casefold()))
        self.last = SkillListing(ordered, tuple(shadowed), tuple(problems))
        return self.last

    def covers(self, path: Path) -> bool:
        """Whether `path` (symlinks resolved) lies in the folder of a skill the last listing
        found: the read tools read it without asking, as the prompt told the model to."""
        real = Path(os.path.realpath(path))
        return any(real.is_relative_to(skill.folder) for skill in self.last.skills)

    def _scan(
        self, folder: _Folder, problems: list[SkillProblem]
    ) -> list[tuple[Path, tuple[int, int]]]:
        """(path, (mtime, size)) of the `SKILL.md` of each subfolder of `folder`."""
        try:
            with os.scandir(folder.path) as entries:
                names = sorted(
                    entry.name
                    for entry in entries
                    if entry.is_dir() and not entry.name.startswith(".")
                )
        except OSError:
            return []  # no such folder (the usual case), or one that cannot be listed
        if len(names) > MAX_FOLDERS:
            problems.append(
                SkillProblem(
                    f"{folder.shown(folder.path, self._work_dir)} holds more than "
                    f"{MAX_FOLDERS} skill folders: the rest are not read."
                )
            )
        found = []
        for name in names[:MAX_FOLDERS]:
            path = folder.path / name / "SKILL.md"
            try:
                info = path.stat()
            except FileNotFoundError:
                continue  # a folder of something else (a skill's shared scripts, say)
            except OSError:
                found.append((path, (-1, -1)))  # a dangling symlink: _load says why
                continue
            found.append((path, (info.st_mtime_ns, info.st_size)))
        return found

    def _load(self, folder: _Folder, path: Path) -> Skill | SkillProblem:
        shown = folder.shown(path, self._work_dir)
        confine, confine_shown, link = folder.confine, folder.confine_shown, ""
        if folder.confine != self._work_dir and path.parent.is_symlink():
            target = Path(os.path.realpath(path.parent))
            link = visible(tilde(target), multiline=False)
            refused = _not_own_folder(target)
            if refused:
                return SkillProblem(f"skill {shown} is a link to {link}, {refused}: not read.")
            confine, confine_shown = target, link
        try:
            text = read_confined(path, confine, confine_shown, MAX_BYTES)
            fields, body = front_matter(text)
            name = text_field(fields, "name") or path.parent.name
            description = text_field(fields, "description")
        except NotRead as error:
            return SkillProblem(f"skill {shown} {error}: not read.")
        if not _NAME.fullmatch(name):
            return SkillProblem(
                f"skill {shown} has a name that is not letters, digits, ., - and _ "
                "(at most 64): not read."
            )
        first_line = next((line.strip() for line in body.splitlines() if line.strip()), "")
        return Skill(
            name=name,
            description=one_line(
                description or first_line.lstrip("# ") or "No description provided.",
                DESCRIPTION_CHARS,
            ),
            path=path,
            folder=Path(os.path.realpath(path.parent)),
            shown_path=shown,
            source=folder.source,
            body_tokens=len(text) // 4,
            link=link,
        )


def _not_own_folder(target: Path) -> str:
    """Why a user skill folder's link target may not hold a skill ("" when it may): it must be a
    folder of the user's that nobody else can write to."""
    try:
        info = target.stat()
    except OSError:
        return "which cannot be read"
    if not stat.S_ISDIR(info.st_mode):
        return "which is not a folder"
    if info.st_uid != os.getuid():
        return "a folder that is not yours"
    if info.st_mode & stat.S_IWOTH:
        return "a folder anyone can write to"
    return ""
