"""The kode-tui command: open a session of a work dir in the terminal UI, or answer a question
about where things are and which sessions exist."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import shutil
import sys
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from kode_tui import model_launch, pydantic_plugins
from kode_tui.cli_args import Parser, build_parser, config_file, export_options, model_options
from kode_tui.errors import ConfigError, UserError
from kode_tui.fsutil import FILE_MODE, make_private_dir
from kode_tui.masking import MaskingFormatter, mask
from kode_tui.paths import Paths, canonical, too_wide
from kode_tui.safetext import visible
from kode_tui.ui import collector

# asyncio (~35 ms) is imported where it is used: the command is read, and the model process
# started, before it loads (see `main`).

if TYPE_CHECKING:
    # The session engine loads only when a command needs it (the TUI opens a new session
    # itself, after its first frame).
    from kode_tui.config import Config
    from kode_tui.soul.facade import AgentSession, ImageAttachment, Session, SessionLocked

log = logging.getLogger("kode_tui")

_T = TypeVar("_T")


@dataclass(slots=True)
class Opened:
    """What the app starts with: the work dir and, when one was asked for, the session."""

    work_dir: Path
    session: AgentSession | None = None


def run() -> NoReturn:
    """The `kode-tui` command: `main()`, then a fast exit.

    By the time `main()` returns, every session file is written and fsynced (closing a session
    does it) and the terminal is restored. What is left is the interpreter's own teardown: the
    garbage collector walking every object a model's library made (litellm's ~400k, about a
    second) and the exit handlers those libraries registered. Neither holds anything of ours,
    so the process flushes its streams and its log, and leaves without them.
    """
    pydantic_plugins.turn_off()
    status = main()
    model_launch.stop_early()  # started for the app by `launch.run`, and not used
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed stream
            stream.flush()
    logging.shutdown()
    os._exit(status)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["acp"]:
        # A folder named acp opens as `kode-tui ./acp`.
        return _acp(argv[1:])
    args = build_parser().parse_args(argv)
    if args.paths:
        for name, path in Paths.current().describe():
            print(f"{name:<9} {path}")
        return 0
    if args.gc:
        return _collect_snapshots()
    if args.print_mode and args.prompt is None and not Path(args.work_dir).expanduser().is_dir():
        # `kode-tui --print "question"`, as `claude -p "question"`: a word that names no
        # folder is the message, asked here.
        args.prompt, args.work_dir = args.work_dir, "."
    try:
        work_dir = _work_dir(args.work_dir)
        _start_logging()
        if args.list_sessions:
            return _run(_list_sessions(work_dir))
        if args.search is not None or args.export is not None or export_options(args):
            _check_transcript_options(args)
            if args.search is not None:
                from kode_tui.cli_transcripts import run_search

                return _run(run_search(work_dir, args.search, everywhere=args.everywhere))
            return _run(_export(args, work_dir))
        if args.print_mode or args.prompt is not None:
            if args.yolo and args.permission_mode not in (None, "yolo"):
                raise UserError(f"--yolo and --permission-mode {args.permission_mode} disagree.")
            _check_work_dir(work_dir)
            prompt = _prompt(args)
            return _run(_run_print(args, work_dir, _load_config(args), prompt))
        if args.output_format != "text" or args.input_format != "text":
            raise UserError("--output-format and --input-format go with --print.")
        if args.permission_mode is not None:
            raise UserError("--permission-mode goes with --print.")
        _check_work_dir(work_dir)
        # The TUI runs: its model process starts now, before asyncio and Textual load (~0.3 s
        # of imports), so that it imports the model's library on the other core meanwhile and
        # the first message typed does not wait for it. It reads the config itself (the app
        # does, after its first frame).
        model_launch.start_early(config_file(args), args.model)
        try:
            return _run(_run_app(args, work_dir))
        finally:
            model_launch.stop_early()  # not taken: the session asked for could not open, say
    except (UserError, ConfigError) as error:
        # A config error quotes the value it rejects: a key put in the wrong place, say.
        print(f"kode-tui: {visible(mask(str(error)), multiline=False)}", file=sys.stderr)
        return 2
    except OSError as error:
        # A folder we cannot create or read: the system's own sentence says what and where.
        where = visible(f"{error.strerror or error}: {error.filename or ''}", multiline=False)
        print(f"kode-tui: {where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        # Python's own report would write the message raw (model text may hold escape
        # sequences) and unmasked; the log keeps the traceback, masked.
        log.exception("unexpected error")
        shown = visible(mask(f"{type(error).__name__}: {error}"), multiline=False)
        print(f"kode-tui: unexpected error: {shown} (details in the log)", file=sys.stderr)
        return 1


def _run(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run(main)`, asyncio imported only now (see the note at the imports)."""
    import asyncio

    return asyncio.run(main)


def _collect_snapshots() -> int:
    """`kode-tui --gc`: collect the snapshots' pools (`session.pool_gc`), one line either way."""
    from kode_tui.session.pool_gc import collect_all

    try:
        collected = collect_all()
    except OSError as error:
        where = visible(f"{error.strerror or error}: {error.filename or ''}", multiline=False)
        print(f"kode-tui: --gc stopped: {where}", file=sys.stderr)
        return 2
    print(f"kode-tui --gc: {visible(str(collected), multiline=False)}")
    return 0


def _acp(argv: list[str]) -> int:
    """`kode-tui acp`: an ACP agent on stdin/stdout (kode_tui/acp). stdout carries the protocol
    alone: the process's own fd 1 becomes stderr, so a stray print or a child's output cannot
    corrupt it, and the protocol is written to a copy of the real stdout."""
    parser = Parser(
        prog="kode-tui acp",
        description="Run kode-tui as an Agent Client Protocol agent over stdio (Zed, acpx).",
    )
    model_options(parser)
    args = parser.parse_args(argv)
    try:
        _start_logging()
        config = _load_config(args)
        from kode_tui.acp.agent import serve
        from kode_tui.config import resolve_model

        choice = resolve_model(config, args.model)
    except ConfigError as error:
        print(f"kode-tui: {visible(mask(str(error)), multiline=False)}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        _run(serve(config, choice, protocol_out))
    except KeyboardInterrupt:
        return 130
    except Exception:
        log.exception("the ACP agent failed")
        return 1
    return 0


def _check_transcript_options(args: argparse.Namespace) -> None:
    if args.search is not None and args.export is not None:
        raise UserError("--search and --export go one at a time.")
    if args.everywhere and args.search is None:
        raise UserError("--all goes with --search TEXT.")
    if (args.export_format or args.output) and args.export is None:
        raise UserError("--format and -o go with --export ID.")


def _load_config(args: argparse.Namespace) -> Config:
    from kode_tui.config import load_config

    return load_config(config_file(args))


def _prompt(args: argparse.Namespace) -> str:
    """The print-mode message: `-p TEXT`, else whatever is piped to stdin."""
    if args.input_format == "stream-json":
        if args.prompt is not None:
            raise UserError(
                "--input-format stream-json reads the messages from stdin; leave out -p."
            )
        if args.output_format != "stream-json":
            raise UserError("--input-format stream-json needs --output-format stream-json.")
        return ""
    if args.prompt is not None:
        prompt: str = args.prompt
    elif not sys.stdin.isatty():
        prompt = sys.stdin.read()
    else:
        raise UserError("--print needs a message: -p TEXT, or pipe it to stdin.")
    if not prompt.strip():
        raise UserError("the message is empty.")
    return prompt


async def _run_print(args: argparse.Namespace, work_dir: Path, config: Config, prompt: str) -> int:
    import asyncio

    from kode_tui.config import missing_key, resolve_model
    from kode_tui.print_mode import run_print  # the agent loads only when it is wanted
    from kode_tui.soul.facade import AgentSession

    choice = await asyncio.to_thread(resolve_model, config, args.model)
    missing = missing_key(choice.model, choice.api_key_env, choice.api_base)
    if missing is not None and not prompt.startswith("/"):
        # Said before a session is made: a run that cannot send its message leaves none to
        # list (a command such as /context needs no model).
        raise UserError(f"no API key for {choice.name}: set {missing}")
    images = [] if prompt.startswith("/") else await _mentioned_images(prompt, work_dir)
    opened = (await _open(args, work_dir)).session
    if opened is not None and opened.read_only is not None:
        await opened.close()
        raise UserError(
            f"{opened.session.dir} cannot be written, so this session cannot go on here; "
            f"look at it read-only with: {opened.resume_command()}"
        )
    if opened is None:
        opened = await AgentSession.open(work_dir)
    messages = sys.stdin if args.input_format == "stream-json" else None
    return await run_print(
        opened, config, choice, prompt, yolo=args.yolo, mode=args.permission_mode,
        output_format=args.output_format, messages=messages, images=images,
    )  # fmt: skip


async def _mentioned_images(prompt: str, work_dir: Path) -> list[ImageAttachment]:
    """The work dir's image files that `@` mentions in a print-mode prompt name, attached as
    the TUI attaches them on send; UserError for a mention outside the work dir or an image
    that cannot be read (said before a session is made)."""
    import asyncio

    from kode_tui.soul.facade import ImageError, attach_image, mentioned_images

    mentions = await asyncio.to_thread(mentioned_images, prompt, work_dir)
    if mentions.outside:
        raise UserError(
            f"@{mentions.outside[0]} is outside the work dir: a prompt attaches only the work "
            "dir's images."
        )
    attached = []
    for path in mentions.inside:
        try:
            attached.append(await attach_image(path))
        except ImageError as error:
            raise UserError(str(error)) from None
        except OSError as error:
            raise UserError(f"{path} could not be read: {error.strerror or error}.") from None
    return attached


def _work_dir(raw: str) -> Path:
    work_dir = canonical(raw)
    if not work_dir.is_dir():
        raise UserError(f"{raw} is not a directory.")
    return work_dir


def _check_work_dir(work_dir: Path) -> None:
    """Refuse a work dir that would put every file of the user's in reach of the tools."""
    why = too_wide(work_dir)
    if why is not None:
        raise UserError(f"{why}: start kode-tui in a project folder.")


async def _list_sessions(work_dir: Path) -> int:
    from rich.cells import cell_len, set_cell_size

    from kode_tui.soul.facade import LineageNote, Session

    sessions = await Session.list(work_dir)
    if not sessions:
        print(f"No sessions in {visible(str(work_dir))} yet.")
        return 0
    # On a terminal each line fits its width; piped, the titles are whole.
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for session in sessions:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(session.updated_at))
        head = f"{visible(session.id)}  {when}  "
        note = LineageNote.of(session)
        tail = visible(f"  ⑂ {note.text}", multiline=False) if note is not None else ""
        # A title is the first words someone (or a model, in a session file) wrote.
        title = visible(session.title, multiline=False)
        room = None if width is None else max(width - cell_len(head + tail) - 1, 12)
        if room is not None and cell_len(title) > room:
            title = set_cell_size(title, room - 1).rstrip() + "…"
        print(f"{head}{title}{tail}")
    return 0


async def _run_app(args: argparse.Namespace, work_dir: Path) -> int:
    collector.hold()  # the app lets it go in steps (ui/collector.py)
    locked: SessionLocked | None = None
    waiting: Session | None = None
    try:
        opened = await _open(args, work_dir)
    except _Locked as error:
        opened, locked, waiting = Opened(error.work_dir), error.locked, error.session
    from kode_tui.ui.app import KodeApp  # Textual loads only when a screen is wanted

    app = KodeApp(
        opened.work_dir,
        model=args.model,
        session=waiting,
        opened=opened.session,
        locked=locked,
        theme=args.theme,
        yolo=args.yolo,
        pick_session=args.session == "",
        config_file=config_file(args),
    )
    try:
        await app.run_async()
    finally:
        if opened.session is not None:
            await opened.session.close()
    if app.config_error is not None:
        raise app.config_error
    resume = app.resume_command
    if resume is not None:
        print(f"Resume this session with: {visible(resume)}")
    return 0


class _Locked(Exception):
    """The session asked for is open in another kode-tui: the app asks what to do."""

    def __init__(self, work_dir: Path, session: Session, locked: SessionLocked) -> None:
        self.work_dir = work_dir
        self.session = session
        self.locked = locked


async def _open(args: argparse.Namespace, work_dir: Path) -> Opened:
    if not (args.session_dir or args.session or args.continue_):
        return Opened(work_dir)  # a new session, made where it is used
    from kode_tui.soul.facade import AgentSession, SessionLocked

    session = await _find_session(args, work_dir)
    if session is None:
        return Opened(work_dir)
    if session.work_dir is not None:
        _check_work_dir(session.work_dir)  # the one recorded for a folder opened by path
    try:
        # A folder that cannot be written opens read-only, for viewing.
        opened = await AgentSession.open(work_dir, session)
    except SessionLocked as error:
        if args.print_mode or args.prompt is not None:
            raise UserError(str(error)) from None
        raise _Locked(session.work_dir or work_dir, session, error) from None
    return Opened(opened.work_dir, opened)


async def _find_session(args: argparse.Namespace, work_dir: Path) -> Session | None:
    from kode_tui.soul.facade import Session

    if args.session_dir:
        try:
            opened = await Session.from_dir(Path(args.session_dir).expanduser())
        except (FileNotFoundError, ValueError) as error:
            raise UserError(str(error)) from None
        # Nobody recorded its work dir: tools run in WORK_DIR (default: here), never in the
        # session folder, and the agent says so (open_agent).
        opened.work_dir = opened.work_dir or work_dir
        return opened
    if args.session:
        return await _named_session(work_dir, args.session)
    if args.continue_:
        session = await Session.continue_(work_dir)
        if session is None:
            raise UserError(f"there is no earlier session in {work_dir} to continue.")
        return session
    return None


async def _export(args: argparse.Namespace, work_dir: Path) -> int:
    from kode_tui.cli_transcripts import run_export

    session = await _named_session(work_dir, args.export)
    return await run_export(session, args.export_format or "md", args.output)


async def _named_session(work_dir: Path, name: str) -> Session:
    """The session of id `name`, else the one whose id starts with it."""
    from kode_tui.soul.facade import Session

    session = await Session.find(work_dir, name)
    return session if session is not None else await _by_prefix(work_dir, name)


_SHOWN_MATCHES = 6


async def _by_prefix(work_dir: Path, prefix: str) -> Session:
    """The one session whose id starts with `prefix`, as `git` takes a short hash; among the
    sessions `--list-sessions` shows (one nothing was said in opens by its whole id)."""
    from kode_tui.soul.facade import Session

    matches = [s for s in await Session.list(work_dir) if s.id.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UserError(f"there is no session {prefix} in {work_dir} (see --list-sessions).")
    ids = ", ".join(sorted(visible(session.id) for session in matches)[:_SHOWN_MATCHES])
    if len(matches) > _SHOWN_MATCHES:
        ids += ", …"
    raise UserError(
        f"{prefix} could be any of {len(matches)} sessions: {ids}; give more of the id."
    )


class _QuietFileHandler(logging.FileHandler):
    """A log line that cannot be written (a full disk) is dropped: logging's default prints a
    traceback to stderr for each one, over the screen and on every start."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass


_NO_ROOM_OR_READ_ONLY = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def _start_logging() -> None:
    """Log to $KODE_TUI_HOME/logs/kode-tui.log (0600); the screen is the app's."""
    log_file = Paths.current().log_file
    try:
        make_private_dir(log_file.parent)
        os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE))
        handler = _QuietFileHandler(log_file, encoding="utf-8")
    except OSError as error:
        if error.errno not in _NO_ROOM_OR_READ_ONLY:
            raise
        # No room to log, or a home on read-only media: kode-tui works without its log (its
        # sessions can still be viewed), and a handler that drops everything keeps logging's
        # last resort from printing warnings over the screen.
        log.addHandler(logging.NullHandler())
        return
    handler.setFormatter(MaskingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # "N changes detected" per save


if __name__ == "__main__":
    sys.exit(main())
