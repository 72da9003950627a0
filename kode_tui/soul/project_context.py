"""Kode's static project context: what the model is told about the project at the start.

`collect` gathers it once per session (blocking: run it in `asyncio.to_thread`), the way Kode's
`getContext()` does: a directory snapshot, git status, code style read from config files, the
README, the user's custom context from config, and the project docs (AGENTS.md, CLAUDE.md,
KODE.md). `format_system_prompt` appends it to the system prompt like Kode's
`formatSystemPromptWithContext`, and `ProjectContextWatcher` notices when a file it was built
from changes, so the owner can collect it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec
import watchfiles

from kode_tui import gitcmd, watching, workfiles
from kode_tui.fsutil import read_regular
from kode_tui.pathnames import escape_name
from kode_tui.soul.code_style import STYLE_FILES, code_style
from kode_tui.soul.project_files import read_text

log = logging.getLogger(__name__)
_T = TypeVar("_T")

DOC_NAMES = ("AGENTS.md", "CLAUDE.md", "KODE.md")
README_NAMES = ("README.md", "README.rst", "README.txt", "README")

TREE_MAX_ENTRIES = 200
TREE_MAX_PER_DIR = 30
TREE_MAX_DEPTH = 4
STATUS_MAX_LINES = 30
README_MAX_CHARS = 4000
DOC_MAX_CHARS = 20000
GIT_TIMEOUT_S = 3.0

TREE_HEADER = (
    "Below is a snapshot of this project's file structure at the start of the conversation. "
    "It will not update as the conversation goes on."
)
CONTEXT_INTRO = "\n\nAs you answer the user's questions, you can use the following context:\n"


class ProjectDoc(msgspec.Struct, frozen=True):
    """One instructions file (AGENTS.md, CLAUDE.md or KODE.md) and its (capped) text."""

    path: Path
    text: str

    @property
    def name(self) -> str:
        return self.path.name


class ProjectContext(msgspec.Struct, frozen=True):
    """The static context of one work dir, as `collect` found it.

    `blocks` are the `<context name=...>` blocks in prompt order. `project_docs` run from the
    outermost directory (the git root) to the work dir, so the nearest file comes last and its
    instructions read as the final word. `watched` holds every path whose creation, change or
    removal makes this context out of date.
    """

    work_dir: Path
    blocks: dict[str, str] = msgspec.field(default_factory=dict)
    project_docs: list[ProjectDoc] = msgspec.field(default_factory=list)
    watched: frozenset[Path] = frozenset()


def collect(work_dir: Path, *, custom: str = "") -> ProjectContext:
    """Gather the project context of `work_dir`. Blocking; never raises.

    A piece that cannot be built (git missing or failing, a file unreadable) is left out.
    """
    work_dir = work_dir.expanduser().resolve()
    git_root = _find_git_root(work_dir)
    git_ok = git_root is not None and gitcmd.find_program("git") is not None
    blocks: dict[str, str] = {}

    tree = _guarded("directoryStructure", lambda: _directory_structure(work_dir, git_ok))
    if tree:
        blocks["directoryStructure"] = tree
    if git_ok:
        status = _guarded("gitStatus", lambda: _git_status(work_dir))
        if status:
            blocks["gitStatus"] = status
    style = _guarded("codeStyle", lambda: code_style(work_dir))
    if style:
        blocks["codeStyle"] = style
    readme = _guarded("readme", lambda: _readme(work_dir))
    if readme:
        blocks["readme"] = readme
    if custom.strip():
        blocks["customContext"] = custom.strip()

    doc_dirs = _doc_dirs(work_dir, git_root)
    docs = _guarded("project docs", lambda: _project_docs(doc_dirs)) or []
    watched = {d / name for d in doc_dirs for name in DOC_NAMES}
    watched.update(work_dir / name for name in (*README_NAMES, *STYLE_FILES))
    watched.update(doc.path for doc in docs)
    if git_root is not None:
        head = _git_head(git_root)
        if head is not None:
            watched.add(head)
    return ProjectContext(
        work_dir=work_dir, blocks=blocks, project_docs=docs, watched=frozenset(watched)
    )


def format_system_prompt(base: str, context: ProjectContext | None) -> str:
    """`base` followed by the project docs and the context blocks (Kode's layout)."""
    if context is None:
        return base
    parts = [base]
    if context.project_docs:
        sections = "\n\n---\n\n".join(
            _doc_section(doc, context.work_dir) for doc in context.project_docs
        )
        # Kode sends "\n---\n" as its own system block; in one string it needs a blank line
        # before it, or the last doc line and the rule read as a Markdown heading.
        parts.append(f"\n\n---\n# Project context\n\n{sections}\n\n---\n")
    if context.blocks:
        parts.append(CONTEXT_INTRO)
        parts.append("\n".join(_block(key, value) for key, value in context.blocks.items()))
    return "".join(parts)


def block_sizes(base: str, context: ProjectContext | None) -> list[tuple[str, int]]:
    """Each part of the full system prompt with its estimated tokens (characters // 4).

    Docs are named by their displayed path, so two AGENTS.md at different levels stay apart.
    """
    sizes = [("system prompt", _tokens(base))]
    if context is None:
        return sizes
    for doc in context.project_docs:
        sizes.append(
            (
                _display_path(doc.path, context.work_dir),
                _tokens(_doc_section(doc, context.work_dir)),
            )
        )
    for key, value in context.blocks.items():
        sizes.append((key, _tokens(_block(key, value))))
    return sizes


class ProjectContextWatcher:
    """Marks a `ProjectContext` stale when one of its watched files is added, changed or removed.

    Watches the parent directories of `context.watched` non-recursively and ignores every other
    file in them. The owner checks `stale` (or awaits `changed`) between turns, collects the
    context again and calls `reset` with the new one.
    """

    def __init__(
        self,
        context: ProjectContext,
        *,
        debounce_ms: int = 300,
        force_polling: bool | None = None,
        poll_delay_ms: int = 300,
    ) -> None:
        self.changed = asyncio.Event()
        self._debounce_ms = debounce_ms
        self._force_polling = force_polling
        self._poll_delay_ms = poll_delay_ms
        self._stale = False
        self._watched: frozenset[str] = frozenset()
        self._dirs: tuple[Path, ...] = ()
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        # Tasks told to stop by `reset`, awaited by `stop` so none outlives the watcher.
        self._retired: set[asyncio.Task[None]] = set()
        self._follow(context)

    @property
    def stale(self) -> bool:
        return self._stale

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start watching in a task on the running loop (a no-op if already running)."""
        if self.running or not self._dirs:
            return
        self._stop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._run(self._dirs, self._stop), name="project-context-watcher"
        )

    async def stop(self) -> None:
        """Stop watching and wait until every watch thread has let go."""
        if self._task is not None:
            self._retire()
        tasks, self._retired = self._retired, set()
        for task in tasks:
            try:
                # The watch thread checks the stop event every `step` ms; the timeout only
                # guards against a backend that never returns.
                await asyncio.wait_for(asyncio.shield(task), timeout=2)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def reset(self, context: ProjectContext) -> None:
        """Follow a freshly collected context: not stale, and watching its files."""
        self._stale = False
        self.changed.clear()
        old_dirs = self._dirs
        self._follow(context)
        if self._dirs != old_dirs and self.running:
            self._retire()
            self.start()

    def _retire(self) -> None:
        assert self._task is not None and self._stop is not None
        self._stop.set()
        self._retired.add(self._task)
        self._task = self._stop = None

    def _follow(self, context: ProjectContext) -> None:
        self._watched = frozenset(str(path) for path in context.watched)
        self._dirs = tuple(sorted({p.parent for p in context.watched if p.parent.is_dir()}))

    def _interesting(self, _change: watchfiles.Change, path: str) -> bool:
        return path in self._watched

    async def _run(self, dirs: tuple[Path, ...], stop: asyncio.Event) -> None:
        force_polling = self._force_polling
        while not stop.is_set():
            try:
                async for _changes in watching.changes(
                    *dirs,
                    watch_filter=self._interesting,
                    debounce=self._debounce_ms,
                    step=min(50, self._debounce_ms),
                    stop_event=stop,
                    recursive=False,
                    force_polling=force_polling,
                    poll_delay_ms=self._poll_delay_ms,
                ):
                    self._stale = True
                    self.changed.set()
                return
            except Exception:
                if force_polling:
                    log.debug(
                        "cannot watch %s; the project context will not refresh", dirs, exc_info=True
                    )
                    return
                # No inotify (too many watches, or a filesystem that has none): poll instead.
                log.debug("file notifications failed for %s; polling", dirs, exc_info=True)
                force_polling = True


# ---- pieces -------------------------------------------------------------------------------


def _guarded(what: str, build: Callable[[], _T]) -> _T | None:
    try:
        return build()
    except Exception:
        log.debug("project context: %s left out", what, exc_info=True)
        return None


def _find_git_root(work_dir: Path) -> Path | None:
    # A stat per parent is cheaper than starting git, and works when git is missing.
    for directory in (work_dir, *work_dir.parents):
        try:
            owner = (directory / ".git").stat().st_uid
        except (OSError, ValueError):
            continue
        # Git's own rule (safe.directory): a repository someone else owns is not ours. Another
        # user's /tmp/.git would otherwise make /tmp/AGENTS.md part of the system prompt of
        # every project started under /tmp.
        if directory != work_dir and hasattr(os, "geteuid") and owner != os.geteuid():
            log.info("ignoring %s: owned by another user", directory / ".git")
            return None
        return directory
    return None


def _git_head(git_root: Path) -> Path | None:
    dot_git = git_root / ".git"
    if dot_git.is_dir():
        return dot_git / "HEAD"
    # A worktree or submodule: ".git" is a file saying "gitdir: <path>".
    data = read_regular(dot_git, 4096)
    if data is None:
        return None
    line = data.decode("utf-8", errors="replace").strip()
    if not line.startswith("gitdir:"):
        return None
    try:
        git_dir = Path(line.removeprefix("gitdir:").strip())
        return (git_root / git_dir).resolve() / "HEAD"
    except (OSError, RuntimeError, ValueError):
        return None  # a symlink loop, a NUL byte: a hostile `.git` note must not stop the start


def _doc_dirs(work_dir: Path, git_root: Path | None) -> list[Path]:
    """The directories searched for project docs, outermost first."""
    if git_root is None:
        return [work_dir]
    dirs = [work_dir]
    for parent in work_dir.parents:
        if not parent.is_relative_to(git_root):
            break
        dirs.append(parent)
    return dirs[::-1]


def _project_docs(dirs: list[Path]) -> list[ProjectDoc]:
    docs = []
    for directory in dirs:
        for name in DOC_NAMES:
            path = directory / name
            text = read_text(path)
            if text is not None and text.strip():
                docs.append(ProjectDoc(path, _cap_chars(text.strip(), DOC_MAX_CHARS)))
    return docs


def _readme(work_dir: Path) -> str | None:
    candidates = [work_dir / name for name in README_NAMES]
    with contextlib.suppress(OSError):
        candidates += sorted(
            entry
            for entry in work_dir.iterdir()
            if entry.name.lower().startswith("readme") and entry.name not in README_NAMES
        )
    for path in candidates:
        text = read_text(path)
        if text is not None and text.strip():
            return _cap_lines(text.strip(), README_MAX_CHARS)
    return None


def _cap_chars(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… (truncated: {len(text) - limit} more characters)"


def _cap_lines(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return f"{text[: cut if cut > 0 else limit]}\n… (truncated)"


def _tokens(text: str) -> int:
    return len(text) // 4


def _block(key: str, value: str) -> str:
    return f'<context name="{key}">{value}</context>'


def _doc_section(doc: ProjectDoc, work_dir: Path) -> str:
    return f"# {doc.name} ({_display_path(doc.path, work_dir)})\n\n{doc.text}"


def _display_path(path: Path, work_dir: Path) -> str:
    """`path` relative to the work dir (`../AGENTS.md` for a parent's), else from `~`."""
    if path.is_relative_to(work_dir) or work_dir.is_relative_to(path.parent):
        return escape_name(os.path.relpath(path, work_dir))
    home = Path.home()
    if path.is_relative_to(home):
        return escape_name(f"~/{path.relative_to(home)}")
    return escape_name(str(path))


# ---- git ------------------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str | None:
    """Stdout of one git command, or None when git fails, is missing or hangs."""
    config = ("core.quotepath=false", "color.ui=false")
    try:
        done = gitcmd.run(args, cwd, timeout=GIT_TIMEOUT_S, config=config)
    except (OSError, subprocess.SubprocessError):
        log.debug("git %s failed", " ".join(args), exc_info=True)
        return None
    if done.returncode != 0:
        log.debug("git %s: %s", " ".join(args), done.stderr.decode("utf-8", "replace").strip())
        return None
    # Names that are not UTF-8 (in ls-files, status, ...) come out escaped, never lost; record
    # by record, so the separators stay and a line feed inside a name (-z) is escaped.
    sep = b"\0" if "-z" in args else b"\n"
    return sep.decode().join(escape_name(record) for record in done.stdout.split(sep))


def _git_status(work_dir: Path) -> str | None:
    status = _git(work_dir, "status", "--short")
    if status is None:
        # Not a repository git will talk about (or git is broken): say nothing rather than guess.
        return None
    status_lines = status.rstrip("\n").splitlines()
    if len(status_lines) > STATUS_MAX_LINES:
        more = len(status_lines) - STATUS_MAX_LINES
        status_lines = [*status_lines[:STATUS_MAX_LINES], f"… {more} more"]

    branch = (_git(work_dir, "branch", "--show-current") or "").strip()
    if not branch:
        head = (_git(work_dir, "rev-parse", "--short", "HEAD") or "").strip()
        branch = f"(detached at {head})" if head else "(unknown)"

    if _git(work_dir, "rev-parse", "--verify", "--quiet", "HEAD") is None:
        recent = mine = "(no commits yet)"
    else:
        log_args = ("log", "--oneline", "--no-decorate", "-n", "5")
        recent = (_git(work_dir, *log_args) or "").strip() or "(none)"
        email = (_git(work_dir, "config", "user.email") or "").strip()
        if email:
            mine = (_git(work_dir, *log_args, f"--author={email}") or "").strip() or "(none)"
        else:
            mine = "(git user.email is not set)"

    return "\n".join(
        [
            f"Current branch: {branch}",
            f"Main branch: {_main_branch(work_dir, branch)}",
            "",
            "Status:",
            *(status_lines or ["(clean)"]),
            "",
            "Recent commits:",
            recent,
            "",
            "Your recent commits:",
            mine,
        ]
    )


def _main_branch(work_dir: Path, current: str) -> str:
    remote_head = _git(work_dir, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote_head and remote_head.strip():
        return remote_head.strip().removeprefix("origin/")
    for name in ("main", "master"):
        if _git(work_dir, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}") is not None:
            return name
    return current


# ---- directory structure --------------------------------------------------------------------

# A lister gives the entries of one directory (relative path, "" for the root, "a/b/" below),
# as (name, is_dir) pairs, or None when the directory cannot be read (`workfiles.Listing`).
_Lister = Callable[[str], list[tuple[str, bool]] | None]


class _Node(msgspec.Struct):
    name: str
    is_dir: bool
    children: list[_Node] | None = None  # None: a directory that was not expanded
    more: int = 0  # entries of this directory that are not shown


def _directory_structure(work_dir: Path, use_git: bool) -> str | None:
    listing = workfiles.listing(work_dir, use_git=use_git, timeout=GIT_TIMEOUT_S)
    tree = _tree(listing.entries)
    return f"{TREE_HEADER}\n\n{tree}" if tree is not None else None


def _tree(
    lister: _Lister,
    *,
    max_entries: int = TREE_MAX_ENTRIES,
    max_per_dir: int = TREE_MAX_PER_DIR,
    max_depth: int = TREE_MAX_DEPTH,
) -> str | None:
    """Breadth first, so the top levels are always shown and the budget runs out deep down.

    None when the root itself cannot be listed.
    """
    root = _Node(".", True)
    queue: deque[tuple[_Node, str, int]] = deque([(root, "", 0)])
    budget = max_entries
    # Empty directories cost no budget; this bounds the listings a tree of them can cause.
    listings = max_entries
    while queue and budget > 0 and listings > 0:
        node, rel, depth = queue.popleft()
        listings -= 1
        entries = lister(rel)
        if entries is None:
            continue
        entries.sort(key=lambda entry: (not entry[1], entry[0].casefold(), entry[0]))
        shown = entries[: min(max_per_dir, budget)]
        budget -= len(shown)
        node.children = [_Node(name, is_dir) for name, is_dir in shown]
        node.more = len(entries) - len(shown)
        if depth + 1 < max_depth:
            queue.extend((c, f"{rel}{c.name}/", depth + 1) for c in node.children if c.is_dir)
    if root.children is None:
        return None
    lines = ["."]
    unexpanded = _render(root, "", lines)
    if unexpanded:
        lines.append(
            f"(the snapshot stops at {max_depth} levels and {max_entries} entries: "
            "a directory shown without entries may not be empty)"
        )
    return "\n".join(lines)


def _render(node: _Node, prefix: str, lines: list[str]) -> bool:
    """Append the lines below `node`; True if some directory under it was not expanded."""
    children = node.children or []
    rows: list[_Node | str] = [*children, *([f"… {node.more} more"] if node.more else [])]
    unexpanded = False
    for index, row in enumerate(rows):
        last = index == len(rows) - 1
        branch, extend = ("└── ", "    ") if last else ("├── ", "│   ")
        if isinstance(row, str):
            lines.append(f"{prefix}{branch}{row}")
            continue
        lines.append(f"{prefix}{branch}{escape_name(row.name)}{'/' if row.is_dir else ''}")
        if row.is_dir:
            if row.children is None:
                unexpanded = True
            else:
                unexpanded |= _render(row, prefix + extend, lines)
    return unexpanded
