"""state.json: our keys, Kimi CLI's keys kept, bad files survived."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from kode_tui.session.state import (
    KODE_KEYS,
    ApprovalGrant,
    ForkOrigin,
    Pin,
    SessionState,
    TodoItem,
    load_state,
    save_state,
)
from tests.conftest import KIMI_FIXTURE

# state.json of a real session folder written by Kimi CLI 1.52.
KIMI_STATE = KIMI_FIXTURE / "state.json"


@pytest.fixture
def kimi_state(tmp_path: Path) -> Path:
    path = tmp_path / "state.json"
    shutil.copyfile(KIMI_STATE, path)
    path.chmod(0o600)
    return path


def test_missing_state_file_gives_defaults(tmp_path: Path) -> None:
    state = load_state(tmp_path / "state.json")

    assert state == SessionState()
    assert state.version == 1
    assert state.custom_title is None
    assert state.approval_mode == "ask"
    assert state.session_approvals == []
    assert state.todos == []


def test_kimi_state_is_read(kimi_state: Path) -> None:
    state = load_state(kimi_state)

    assert state.custom_title == "Create hello.py"
    assert state.approval_mode == "ask"


def test_round_trip_keeps_every_kimi_key(kimi_state: Path) -> None:
    original = json.loads(kimi_state.read_text())
    state = load_state(kimi_state)

    state.approval_mode = "auto-edit"  # not yolo: Kimi's `approval.yolo` stays as it was
    state.session_approvals.append("shell:git status")
    save_state(state, kimi_state)

    saved = json.loads(kimi_state.read_text())
    assert {key: saved[key] for key in original} == original
    assert saved["approval_mode"] == "auto-edit"
    assert saved["session_approvals"] == ["shell:git status"]
    assert load_state(kimi_state) == state


def test_our_state_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    state = SessionState(
        custom_title="Refactor",
        approval_mode="auto-edit",
        session_approvals=["edit", "shell:git status"],
        todos=[TodoItem(title="a", status="pending"), TodoItem(title="b", status="done")],
    )

    save_state(state, path)

    assert load_state(path) == state


def test_unknown_keys_inside_todos_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"todos": [{"title": "a", "status": "done", "owner": "kimi"}]}))

    save_state(load_state(path), path)

    assert json.loads(path.read_text())["todos"] == [
        {"title": "a", "status": "done", "owner": "kimi"}
    ]


def test_saved_state_is_private_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"

    save_state(SessionState(custom_title="x"), path)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(child.name for child in tmp_path.iterdir()) == ["state.json", "state.kode.json"]


@pytest.mark.parametrize("content", [b'{"custom_title": "tor', b"\xff\xfe", b"[1, 2]", b"null"])
def test_unreadable_state_gives_defaults_with_a_warning(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)

    assert load_state(path) == SessionState()
    assert "state.json" in caplog.text


def test_a_bad_value_resets_only_its_own_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.json"
    path.write_text(
        json.dumps(
            {
                "custom_title": "Kept",
                "approval_mode": "sometimes",
                "todos": [{"title": "a", "status": "someday"}],
                "archived": True,
            }
        )
    )

    state = load_state(path)

    assert state.custom_title == "Kept"
    assert state.approval_mode == "ask"
    assert state.todos == []
    assert state.model_dump()["archived"] is True
    assert "approval_mode" in caplog.text and "todos" in caplog.text


def test_an_invalid_approval_mode_cannot_be_set() -> None:
    state = SessionState()

    with pytest.raises(ValidationError):
        state.approval_mode = "always"  # type: ignore[assignment]


def test_approvals_saved_without_grants_load_and_grants_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"session_approvals": ["edit", "shell:git status"]}))
    state = load_state(path)
    assert state.session_approvals == ["edit", "shell:git status"]
    assert state.session_approval_grants == {}

    state.session_approval_grants["edit"] = ApprovalGrant(
        label="all edits in the work dir", granted_at=1_790_000_000.5
    )
    save_state(state, path)
    saved = json.loads(path.read_text())
    # The list stays plain strings, as an older kode-tui reads it.
    assert saved["session_approvals"] == ["edit", "shell:git status"]
    assert load_state(path) == state


def test_a_bad_grants_value_falls_back_alone(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"session_approvals": ["edit"], "session_approval_grants": [1]}))
    state = load_state(path)
    assert state.session_approvals == ["edit"] and state.session_approval_grants == {}


def test_kimis_yolo_is_our_mode_when_the_file_has_none_of_ours(tmp_path: Path) -> None:
    # What Kimi CLI leaves: its writer drops the keys it does not know (`approval_mode`).
    path = tmp_path / "state.json"
    kimi = json.loads(KIMI_STATE.read_text())
    kimi["approval"] = {"yolo": True, "afk": False, "auto_approve_actions": ["run command"]}
    path.write_text(json.dumps(kimi))

    state = load_state(path)

    assert state.approval_mode == "yolo"
    save_state(state, path)
    assert json.loads(path.read_text())["approval"] == kimi["approval"]


def test_our_mode_is_written_as_kimis_yolo_and_ours_wins_when_both_are_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.json"
    save_state(SessionState(approval_mode="yolo"), path)
    assert json.loads(path.read_text())["approval"] == {"yolo": True}
    assert load_state(path) == SessionState(approval_mode="yolo")

    save_state(SessionState(approval_mode="auto-edit"), path)
    assert json.loads(path.read_text())["approval"] == {"yolo": False}
    assert load_state(path).approval_mode == "auto-edit"


def kimi_rewrites(path: Path, **change: object) -> None:
    """What Kimi CLI's writer does to a state.json: it keeps only the keys it knows."""
    data = {key: value for key, value in json.loads(path.read_text()).items()}
    for key in KODE_KEYS:
        data.pop(key)
    path.write_text(json.dumps({**data, **change}))


def test_pins_fork_origin_thinking_and_auto_edit_survive_kimis_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    ours = SessionState(
        approval_mode="auto-edit",
        session_approvals=["edit"],
        thinking="high",
        pins=[Pin(text="use uv, not pip", pinned_at=1.0)],
        forked_from=ForkOrigin(session="abc", file="context_2.jsonl", checkpoint=3),
    )
    save_state(ours, path)
    kimi_rewrites(path, custom_title="Named by Kimi")

    state = load_state(path)

    assert state == ours.model_copy(update={"custom_title": "Named by Kimi"})


@pytest.mark.parametrize(
    ("ours", "kimi_yolo", "mode"), [("yolo", False, "ask"), ("ask", True, "yolo")]
)
def test_a_mode_switched_in_kimi_wins_over_the_sidecars(
    tmp_path: Path, ours: str, kimi_yolo: bool, mode: str
) -> None:
    path = tmp_path / "state.json"
    save_state(SessionState(approval_mode=ours), path)  # type: ignore[arg-type]
    kimi_rewrites(path, approval={"yolo": kimi_yolo})

    assert load_state(path).approval_mode == mode
