"""Sessions on disk: create/find/list/continue_, titles, kode.json, Kimi session folders."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import uuid
from hashlib import md5
from pathlib import Path
from typing import Any

import pytest

from kode_tui.paths import Paths, canonical, program
from kode_tui.session import Context
from kode_tui.session.catalog import SessionCatalog
from kode_tui.session.metadata import load_metadata
from kode_tui.session.session import TITLE_WIDTH, Session
from kode_tui.session.state import Pin
from kode_tui.wire.records import sidecar_path
from tests.conftest import KIMI_FIXTURE

USER_MESSAGE = {"role": "user", "content": "List the files"}
WIRE_HEADER = {"type": "metadata", "protocol_version": "1"}


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def write_jsonl(path: Path, *records: Any) -> None:
    with path.open("a", encoding="utf-8") as file:
        for record in records:
            file.write((record if isinstance(record, str) else json.dumps(record)) + "\n")


def turn_begin(user_input: str | list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "timestamp": 1.0,
        "message": {"type": "TurnBegin", "payload": {"user_input": user_input}},
    }


async def session_with_wire(work_dir: Path, *records: Any) -> Session:
    session = await Session.create(work_dir)
    write_jsonl(session.wire_file, WIRE_HEADER, *records)
    await session.refresh()
    return session


async def talked_session(work_dir: Path, mtime: float | None = None) -> Session:
    session = await Session.create(work_dir)
    write_jsonl(session.context_file, USER_MESSAGE)
    if mtime is not None:
        os.utime(session.context_file, (mtime, mtime))
    return session


def copy_kimi_session(destination: Path) -> Path:
    shutil.copytree(KIMI_FIXTURE, destination)
    # The fixture is read-only; the copy must be writable like a real session folder.
    for path in [destination, *destination.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    return destination


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# create / find / list / continue_


async def test_created_session_is_found_listed_and_continued(work_dir: Path) -> None:
    created = await talked_session(work_dir)

    found = await Session.find(work_dir, created.id)
    listed = await Session.list(work_dir)
    continued = await Session.continue_(work_dir)

    assert found is not None and found.dir == created.dir
    assert found.work_dir == canonical(work_dir)
    assert [session.id for session in listed] == [created.id]
    assert continued is not None and continued.id == created.id


async def test_new_session_has_a_uuid4_id_and_an_empty_context(work_dir: Path) -> None:
    session = await Session.create(work_dir)

    assert uuid.UUID(session.id).version == 4
    assert session.dir.name == session.id
    assert session.context_file.read_bytes() == b""
    assert session.title == "Untitled"


async def test_create_uses_the_given_session_id(work_dir: Path) -> None:
    session = await Session.create(work_dir, session_id="my-session")

    assert session.id == "my-session"
    assert session.context_file.is_file()


async def test_sessions_folder_is_md5_of_the_canonical_unresolved_work_dir(
    tmp_path: Path, work_dir: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = tmp_path / "link"
    link.symlink_to(work_dir)
    monkeypatch.chdir(tmp_path)

    session = await Session.create("link/../link/.")

    expected = md5(str(tmp_path / "link").encode("utf-8")).hexdigest()
    assert session.dir.parent == home / "sessions" / expected
    assert expected != md5(str(work_dir).encode("utf-8")).hexdigest()
    assert session.work_dir == tmp_path / "link"


async def test_a_work_dir_whose_name_is_not_utf8_holds_sessions_like_any_other(
    tmp_path: Path, home: Path
) -> None:
    # `caf\xe9` (Latin-1): hashing its name as UTF-8 raised, so kode-tui could not start there.
    work_dir = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    work_dir.mkdir()
    session = await talked_session(work_dir)

    expected = md5(os.fsencode(work_dir)).hexdigest()
    assert session.dir.parent == home / "sessions" / expected
    assert [s.id for s in await Session.list(work_dir)] == [session.id]
    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.id == session.id
    (entry,) = load_metadata().work_dirs
    assert entry.path == f"{tmp_path}/caf\\xe9"  # kode.json holds it escaped, as text
    (home / "kode.json").read_bytes().decode("utf-8")
    # The sessions screen finds its folder again from the escaped path.
    from kode_tui.session.catalog import _sessions_of_every_work_dir

    everywhere = await _sessions_of_every_work_dir(tmp_path)
    assert [s.work_dir for s in everywhere if s.id == session.id] == [work_dir]


async def test_sessions_of_different_work_dirs_are_kept_apart(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    session = await talked_session(first)

    assert await Session.find(second, session.id) is None
    assert await Session.list(second) == []


async def test_find_returns_none_for_an_unknown_session(work_dir: Path) -> None:
    await talked_session(work_dir)

    assert await Session.find(work_dir, str(uuid.uuid4())) is None


async def test_find_returns_none_for_a_folder_without_context(work_dir: Path) -> None:
    session = await talked_session(work_dir)
    session.context_file.unlink()

    assert await Session.find(work_dir, session.id) is None


async def test_ids_that_are_not_plain_folder_names_are_refused(work_dir: Path) -> None:
    with pytest.raises(ValueError, match="not a valid session id"):
        await Session.create(work_dir, session_id="../escape")

    assert await Session.find(work_dir, "../escape") is None
    assert await Session.find(work_dir, "..") is None


async def test_create_refuses_to_clobber_an_existing_conversation(work_dir: Path) -> None:
    session = await talked_session(work_dir)
    before = session.context_file.read_bytes()

    with pytest.raises(ValueError, match="already exists"):
        await Session.create(work_dir, session_id=session.id)

    assert session.context_file.read_bytes() == before


async def test_create_reuses_a_session_whose_context_is_still_empty(work_dir: Path) -> None:
    first = await Session.create(work_dir, session_id="fresh")

    again = await Session.create(work_dir, session_id="fresh")

    assert again.dir == first.dir


async def test_continue_without_history_returns_none(work_dir: Path) -> None:
    assert await Session.continue_(work_dir) is None


async def test_continue_opens_the_session_marked_last(work_dir: Path) -> None:
    older = await talked_session(work_dir)
    await talked_session(work_dir)

    older.mark_last()

    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.id == older.id


async def test_marking_the_session_kode_json_names_already_leaves_the_file_alone(
    work_dir: Path,
) -> None:
    """A new session is marked as it is created and again as it opens: the second mark would
    rewrite kode.json as it was (two fsyncs before the first request)."""
    session = await Session.create(work_dir)
    kode_json = Paths.current().metadata_file
    written = kode_json.stat().st_ino  # every rewrite is a new file renamed over the old one

    session.mark_last()
    assert kode_json.stat().st_ino == written

    other = await Session.create(work_dir)
    assert kode_json.stat().st_ino != written
    entry = load_metadata().get(work_dir)
    assert entry is not None and entry.last_session_id == other.id


async def test_continue_skips_a_last_session_nothing_was_said_in(work_dir: Path) -> None:
    talked = await talked_session(work_dir)
    empty = await Session.create(work_dir)  # started and quit; now marked last

    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.id == talked.id
    assert empty.id != talked.id


async def test_continue_opens_an_empty_last_session_when_there_is_nothing_else(
    work_dir: Path,
) -> None:
    empty = await Session.create(work_dir)

    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.id == empty.id


async def test_continue_returns_none_when_the_last_session_was_deleted(work_dir: Path) -> None:
    session = await talked_session(work_dir)
    shutil.rmtree(session.dir)

    assert await Session.continue_(work_dir) is None


# list


async def test_list_is_newest_first_by_context_or_wire_time(work_dir: Path) -> None:
    old = await talked_session(work_dir, mtime=1_000)
    middle = await talked_session(work_dir, mtime=2_000)
    revived = await talked_session(work_dir, mtime=500)
    write_jsonl(revived.wire_file, WIRE_HEADER, turn_begin("hi"))
    os.utime(revived.wire_file, (3_000, 3_000))

    listed = await Session.list(work_dir)

    assert [session.id for session in listed] == [revived.id, middle.id, old.id]
    assert [session.updated_at for session in listed] == [3_000, 2_000, 1_000]


async def test_list_skips_sessions_nobody_talked_in(work_dir: Path) -> None:
    await Session.create(work_dir)
    only_records = await Session.create(work_dir)
    write_jsonl(
        only_records.context_file,
        {"role": "_system_prompt", "content": "You are kode."},
        {"role": "_checkpoint", "id": 0},
        {"role": "_usage", "token_count": 10},
    )
    only_header = await session_with_wire(work_dir)
    talked = await talked_session(work_dir)
    with_turn = await session_with_wire(work_dir, turn_begin("hello"))
    titled = await Session.create(work_dir)
    titled.state.custom_title = "Named"
    titled.save_state()

    listed = {session.id for session in await Session.list(work_dir)}

    assert listed == {talked.id, with_turn.id, titled.id}
    assert only_records.id not in listed and only_header.id not in listed


def status_record(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": 1.0, "message": {"type": kind, "payload": payload}}


async def test_a_session_holding_only_what_a_start_records_unasked_is_not_listed(
    work_dir: Path,
) -> None:
    """Opened and left: the gauge's status, a SessionStart hook's run, a warning."""
    left = await session_with_wire(
        work_dir,
        status_record("StatusUpdate", context_tokens=3793),
        status_record("HookRan", event="SessionStart"),
        status_record("Warning", message="the MCP server docs did not start"),
    )
    talked = await session_with_wire(
        work_dir, status_record("StatusUpdate", context_tokens=1), turn_begin("hello")
    )

    assert await asyncio.to_thread(left.is_empty)
    assert [s.id for s in await Session.list(work_dir)] == [talked.id]
    assert [row.session.id for row in await SessionCatalog().rows(work_dir)] == [talked.id]


async def test_only_an_empty_session_of_our_store_is_removed_and_nothing_with_content(
    work_dir: Path, tmp_path: Path
) -> None:
    left = await session_with_wire(work_dir, status_record("StatusUpdate", context_tokens=1))
    left.state.approval_mode = "yolo"
    left.save_state()
    (left.dir / "snapshot.json").write_text('{"version":2,"files":{}}')
    kept = {
        "a message": await talked_session(work_dir),
        "a turn": await session_with_wire(work_dir, turn_begin("hi")),
        "a title": await Session.create(work_dir),
        "a pin": await Session.create(work_dir),
        "a rotated context": await Session.create(work_dir),
        "what the sandbox refused": await Session.create(work_dir),
        "open elsewhere": await Session.create(work_dir),
    }
    kept["a title"].state.custom_title = "Named"
    kept["a title"].save_state()
    kept["a pin"].state.pins.append(Pin(text="run make check first"))
    kept["a pin"].save_state()
    write_jsonl(kept["a rotated context"].dir / "context_1.jsonl", USER_MESSAGE)
    (kept["what the sandbox refused"].dir / "refused").mkdir()
    outside = await Session.from_dir(shutil.copytree(left.dir, tmp_path / "copied" / "abc"))

    async with Context(kept["open elsewhere"].context_file) as holder:
        await holder.restore()  # takes the session's lock
        removed = {name: session.remove_if_empty() for name, session in kept.items()}
    assert removed == dict.fromkeys(kept, False)
    assert all(session.context_file.exists() for session in kept.values())
    assert not outside.remove_if_empty() and outside.context_file.exists()

    assert left.remove_if_empty()
    assert not left.dir.exists()
    assert left.id not in {s.id for s in await Session.list(work_dir)}


async def test_a_session_with_only_our_sidecar_records_is_listed_and_dated_by_them(
    work_dir: Path, tmp_path: Path
) -> None:
    cleared = await session_with_wire(work_dir)
    write_jsonl(cleared.dir / "context_1.jsonl", USER_MESSAGE)
    clear = {"type": "ContextCleared", "payload": {"rotated_file": "context_1.jsonl"}}
    write_jsonl(cleared.wire_sidecar, {"timestamp": 5.0, "wire_offset": 0, "message": clear})
    for path, when in ((cleared.context_file, 1_000), (cleared.wire_file, 1_000)):
        os.utime(path, (when, when))
    os.utime(cleared.wire_sidecar, (4_000, 4_000))
    folder = tmp_path / "elsewhere" / "abc"  # a folder no work dir is recorded for
    shutil.copytree(cleared.dir, folder)

    listed = await Session.list(work_dir)
    rows = await SessionCatalog().rows(work_dir)
    found = await Session.from_dir(folder)

    assert [(s.id, s.updated_at) for s in listed] == [(cleared.id, 4_000)]
    assert [row.session.id for row in rows] == [cleared.id]
    assert not await asyncio.to_thread(found.is_empty)
    assert cleared.wire_sidecar == sidecar_path(cleared.wire_file)


async def test_list_reads_context_only_up_to_the_first_message(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = await Session.create(work_dir)
    write_jsonl(session.context_file, {"role": "_checkpoint", "id": 0}, USER_MESSAGE)
    write_jsonl(session.context_file, *([USER_MESSAGE] * 5_000))
    parsed: list[object] = []
    real_loads = json.loads

    def counting_loads(text: str | bytes, **kwargs: Any) -> Any:
        parsed.append(text)
        return real_loads(text, **kwargs)

    monkeypatch.setattr(json, "loads", counting_loads)

    assert [listed.id for listed in await Session.list(work_dir)] == [session.id]
    assert len(parsed) <= 3


async def test_list_survives_corrupt_and_undecodable_lines(work_dir: Path) -> None:
    session = await Session.create(work_dir)
    with session.context_file.open("ab") as file:
        file.write(b'{"role": "_checkpoint", "id": 0}\n\xff\xfe not json\n')
    with session.wire_file.open("ab") as file:
        file.write(json.dumps(WIRE_HEADER).encode() + b"\n")
        file.write(b'{"message": {"type": "TurnBegin", \xff\n')
        file.write(json.dumps(turn_begin("the real title")).encode() + b"\n")

    listed = await Session.list(work_dir)

    assert [(listed_session.id, listed_session.title) for listed_session in listed] == [
        (session.id, "the real title")
    ]


async def test_list_of_an_unknown_work_dir_is_empty(work_dir: Path) -> None:
    assert await Session.list(work_dir) == []


async def test_list_ignores_stray_files_and_folders(work_dir: Path) -> None:
    session = await talked_session(work_dir)
    (session.dir.parent / "notes.txt").write_text("stray")
    (session.dir.parent / "not-a-session").mkdir()

    assert [listed.id for listed in await Session.list(work_dir)] == [session.id]


# titles


async def test_title_is_the_first_user_input_of_the_wire(work_dir: Path) -> None:
    session = await session_with_wire(
        work_dir,
        {"timestamp": 1.0, "message": {"type": "StepBegin", "payload": {"n": 1}}},
        turn_begin("  Fix the\n failing   test "),
        turn_begin("second turn"),
    )

    assert session.title == "Fix the failing test"


async def test_title_joins_the_text_parts_of_a_part_list(work_dir: Path) -> None:
    session = await session_with_wire(
        work_dir,
        turn_begin(
            [
                {"type": "text", "text": "Look at"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "this screenshot"},
            ]
        ),
    )

    assert session.title == "Look at this screenshot"


async def test_title_leaves_out_the_tags_kimi_wraps_an_attached_image_in(work_dir: Path) -> None:
    session = await session_with_wire(
        work_dir,
        turn_begin(
            [
                {"type": "text", "text": "What is this?"},
                {"type": "text", "text": '<image path="/home/me/shot.png">'},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "</image>"},
            ]
        ),
    )

    assert session.title == "What is this?"


async def test_a_long_title_keeps_its_words_up_to_200_chars_for_views_to_cut(
    work_dir: Path,
) -> None:
    text = "Refactor the session listing so that empty sessions are skipped quickly"
    session = await session_with_wire(work_dir, turn_begin(f"{text}\n\n  and   more " * 4))

    assert session.title.startswith(f"{text} and more {text} and more")
    assert session.title.endswith("…") and len(session.title) <= TITLE_WIDTH
    assert "\n" not in session.title and "  " not in session.title


async def test_long_title_without_spaces_is_cut_hard(work_dir: Path) -> None:
    session = await session_with_wire(work_dir, turn_begin("写" * 250))

    assert session.title == "写" * (TITLE_WIDTH - 1) + "…"


async def test_title_of_exactly_the_width_is_kept_whole(work_dir: Path) -> None:
    text = "x" * TITLE_WIDTH
    session = await session_with_wire(work_dir, turn_begin(text))

    assert session.title == text


async def test_title_is_untitled_without_a_turn(work_dir: Path) -> None:
    session = await session_with_wire(work_dir)

    assert session.title == "Untitled"


async def test_title_is_untitled_when_the_first_input_has_no_text(work_dir: Path) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    session = await session_with_wire(work_dir, turn_begin([image]), turn_begin("later"))

    assert session.title == "Untitled"


async def test_custom_title_wins_over_the_wire(work_dir: Path) -> None:
    session = await session_with_wire(work_dir, turn_begin("from the wire"))

    session.state.custom_title = "My own title"
    session.save_state()

    assert session.title == "My own title"
    found = await Session.find(work_dir, session.id)
    assert found is not None and found.title == "My own title"


async def test_clearing_the_custom_title_brings_back_the_wire_title(work_dir: Path) -> None:
    session = await session_with_wire(work_dir, turn_begin("from the wire"))
    session.state.custom_title = "Temporary"
    session.save_state()

    session.state.custom_title = None
    session.save_state()

    assert session.title == "from the wire"


async def test_refresh_sees_a_title_written_after_opening(work_dir: Path) -> None:
    session = await Session.create(work_dir)
    write_jsonl(session.wire_file, WIRE_HEADER, turn_begin("late title"))

    await session.refresh()

    assert session.title == "late title"


# Kimi CLI session folders


async def test_a_kimi_session_folder_opens_by_path(tmp_path: Path, home: Path) -> None:
    folder = copy_kimi_session(tmp_path / "kimi" / "4f0e2c1a-kimi-session")

    session = await Session.from_dir(folder)

    assert session.id == "4f0e2c1a-kimi-session"
    assert session.dir == folder
    assert session.work_dir is None
    assert session.title == "Create hello.py"
    assert session.state.custom_title == "Create hello.py"
    assert session.context_file == folder / "context.jsonl" and session.context_file.is_file()
    assert session.wire_file == folder / "wire.jsonl" and session.wire_file.is_file()
    assert session.state_file == folder / "state.json" and session.state_file.is_file()
    assert session.updated_at == max(
        session.context_file.stat().st_mtime, session.wire_file.stat().st_mtime
    )
    assert not home.exists()


async def test_a_kimi_session_without_custom_title_takes_its_wire_title(tmp_path: Path) -> None:
    folder = copy_kimi_session(tmp_path / "kimi" / "session")
    (folder / "state.json").unlink()

    session = await Session.from_dir(folder)

    assert session.title == "Create hello.py"


async def test_saving_state_of_a_kimi_session_keeps_its_keys(tmp_path: Path) -> None:
    folder = copy_kimi_session(tmp_path / "kimi" / "session")
    original = json.loads((folder / "state.json").read_text())
    session = await Session.from_dir(folder)

    session.state.approval_mode = "auto-edit"
    session.save_state()

    saved = json.loads((folder / "state.json").read_text())
    assert {key: saved[key] for key in original} == original
    assert saved["approval_mode"] == "auto-edit"


async def test_from_dir_of_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no session folder"):
        await Session.from_dir(tmp_path / "missing")


async def test_from_dir_of_a_folder_without_context_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a session folder"):
        await Session.from_dir(tmp_path)


async def test_a_folder_opened_by_path_is_not_recorded_as_last(
    tmp_path: Path, work_dir: Path
) -> None:
    folder = copy_kimi_session(tmp_path / "kimi" / "session")
    session = await Session.from_dir(folder, work_dir=work_dir)

    session.mark_last()

    assert session.work_dir == work_dir
    assert load_metadata().get(work_dir) is None


async def test_a_session_folder_of_our_own_opened_by_path_can_be_marked_last(
    work_dir: Path,
) -> None:
    created = await talked_session(work_dir)
    await talked_session(work_dir)
    session = await Session.from_dir(created.dir, work_dir=work_dir)

    session.mark_last()

    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.id == created.id


# kode.json and file modes


async def test_create_records_the_session_in_kode_json(home: Path, work_dir: Path) -> None:
    session = await Session.create(work_dir)

    data = json.loads((home / "kode.json").read_text())
    assert data == {"work_dirs": [{"path": str(work_dir), "last_session_id": session.id}]}


async def test_kode_json_keeps_unknown_keys(home: Path, work_dir: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "kode.json").write_text(
        json.dumps(
            {
                "future": {"x": 1},
                "work_dirs": [
                    {"path": "/elsewhere", "last_session_id": None, "pinned": True},
                    {"path": str(work_dir), "last_session_id": "old", "note": "kept"},
                ],
            }
        )
    )

    session = await Session.create(work_dir)

    data = json.loads((home / "kode.json").read_text())
    assert data["future"] == {"x": 1}
    assert data["work_dirs"] == [
        {"path": "/elsewhere", "last_session_id": None, "pinned": True},
        {"path": str(work_dir), "last_session_id": session.id, "note": "kept"},
    ]


async def test_kode_json_is_replaced_atomically(
    home: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await Session.create(work_dir)
    before = (home / "kode.json").read_bytes()

    def crash(*args: object) -> None:
        raise OSError("disk pulled out")

    monkeypatch.setattr(os, "replace", crash)
    # Noting the last session is best effort (a full disk must not stop a session from
    # opening); the old kode.json stays whole.
    await Session.create(work_dir)

    assert (home / "kode.json").read_bytes() == before
    assert json.loads(before)["work_dirs"][0]["last_session_id"] == first.id


async def test_corrupt_kode_json_does_not_stop_sessions(
    home: Path, work_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home.mkdir(mode=0o700)
    (home / "kode.json").write_text('{"work_dirs": [{"path": ')

    assert await Session.continue_(work_dir) is None
    session = await Session.create(work_dir)

    assert "kode.json" in caplog.text
    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.id == session.id


async def test_kode_json_of_the_wrong_shape_is_ignored(home: Path, work_dir: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "kode.json").write_text('{"work_dirs": "nope"}')

    assert await Session.continue_(work_dir) is None


async def test_session_folders_are_private(home: Path, work_dir: Path) -> None:
    session = await Session.create(work_dir)
    session.save_state()

    for folder in (home, home / "sessions", session.dir.parent, session.dir):
        assert mode(folder) == 0o700, folder
    for file in (home / "kode.json", session.context_file, session.state_file):
        assert mode(file) == 0o600, file
    assert sorted(path.name for path in home.iterdir()) == ["kode.json", "sessions"]


async def test_home_is_read_at_call_time(
    tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = await talked_session(work_dir)

    monkeypatch.setenv("KODE_TUI_HOME", str(tmp_path / "other-home"))

    assert await Session.find(work_dir, session.id) is None
    assert await Session.continue_(work_dir) is None


async def test_resume_command_reopens_the_session_from_where_it_is_typed(
    work_dir: Path, tmp_path: Path
) -> None:
    session = await Session.create(work_dir)
    assert session.resume_command(work_dir) == f"{program()} -S {session.id}"
    elsewhere = session.resume_command(tmp_path)
    assert elsewhere == f"{program()} -S {session.id} {canonical(work_dir)}"
    found = await Session.find(canonical(work_dir), session.id)
    assert found is not None and found.dir == session.dir


async def test_resume_command_of_a_folder_opened_by_path_names_the_folder(tmp_path: Path) -> None:
    # A Kimi CLI session, or any copied folder: `-S id` would not find it.
    folder = tmp_path / "copied session"
    shutil.copytree(KIMI_FIXTURE, folder)
    session = await Session.from_dir(folder)
    assert session.resume_command() == f"{program()} --session-dir '{folder}'"


def test_tilde_shortens_paths_under_the_home_dir_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from kode_tui.paths import tilde

    monkeypatch.setenv("HOME", "/home/al")
    assert tilde("/home/al/.kode-tui/config.toml") == "~/.kode-tui/config.toml"
    assert tilde("/home/al") == "~"
    assert tilde("/home/alice/project") == "/home/alice/project"
    assert tilde("/srv/home/al") == "/srv/home/al"


async def test_a_work_dir_given_with_a_tilde_is_under_the_home_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    session = await Session.create("~/src/app")
    assert session.work_dir == tmp_path / "src" / "app"


async def test_a_session_whose_every_file_holds_a_line_nested_a_thousand_deep_still_opens(
    work_dir: Path,
) -> None:
    from kode_tui.paths import Paths
    from kode_tui.session import Context
    from kode_tui.session.timetravel import read_snapshot
    from kode_tui.wire import read_wire

    deep = '{"x":' + "[" * 1000 + "]" * 1000 + "}"
    session = await Session.create(work_dir)
    folder = session.dir
    (folder / "context.jsonl").write_text(deep + '\n{"role":"user","content":"hello"}\n')
    (folder / "context_1.jsonl").write_text(deep + '\n{"role":"user","content":"old"}\n')
    (folder / "wire.jsonl").write_text(deep + "\n" + json.dumps(turn_begin("hello")) + "\n")
    (folder / "rotations.jsonl").write_text(deep + "\n")
    (folder / "state.json").write_text(deep)
    Paths.current().metadata_file.write_text(deep)

    assert [s.id for s in await Session.list(work_dir)] == [session.id]
    continued = await Session.continue_(work_dir)
    assert continued is not None and continued.title == "hello"
    context = Context(folder / "context.jsonl")
    await context.restore()
    assert [m.text for m in context.history] == ["hello"]
    assert [r.number for r in context.rotations()] == [1]
    await context.close()
    assert [m.text for m in read_snapshot(folder / "context_1.jsonl").messages] == ["old"]
    assert len(list(read_wire(folder / "wire.jsonl"))) == 1
