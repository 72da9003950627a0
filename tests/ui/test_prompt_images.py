"""Images in the prompt: a dropped (pasted) file path, Ctrl+V, `@shot.png`; their chips above the
prompt, removed by Backspace or their ✕; sent with the message (the loopback server's request
holds the image part), queued with it, and kept with the text when the model takes no images.
Real PNG and JPEG files made with Pillow; the clipboard tool is a stub script on PATH."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, ClassVar

import pytest
from PIL import Image
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import Static

from kode_tui.config import Config, ModelConfig
from kode_tui.humanize import format_size
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.widgets import prompt as prompt_module
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.prompt_images import ImageChips
from tests.llm_server import KEY_ENV, LLMServer
from tests.ui.test_clipboard import install
from tests.ui_helpers import Host, make_app, ready, screen_text, turn_running, wait_for

ESC = "\x1b"


class ImagesHost(Host):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "noop", "")]

    def __init__(self, work_dir: Path) -> None:
        super().__init__(
            Static("conversation", id="conversation"),
            PromptInput(work_dir, id="prompt"),
            css_path=Path(prompt_module.__file__).with_name("prompt.tcss"),
        )
        self.submitted: list[tuple[str, list[str]]] = []

    def on_mount(self) -> None:
        self.query_one(PromptInput).cursor_blink = False
        self.query_one(PromptInput).focus()

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.submitted.append((message.text, [image.path.name for image in message.images]))


def picture(path: Path, size: tuple[int, int] = (1280, 720)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, "navy").save(path)
    return path


def chips_of(app: Any) -> list[str]:
    return app.screen.query_one(ImageChips).chips


def notices(app: Any) -> list[str]:
    return [str(notice.message) for notice in app._notifications]


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    picture(root / "shot.png")
    picture(root / "docs" / "other.jpg", (640, 480))
    (root / "notes.txt").write_text("plain text\n")
    return root


async def test_a_pasted_image_path_quoted_escaped_or_a_file_uri_becomes_a_chip_else_text(
    work_dir: Path, tmp_path: Path
) -> None:
    spaced = picture(tmp_path / "Desktop" / "my shot.png", (800, 600))
    photo = picture(tmp_path / "Desktop" / "photo.jpeg", (300, 200))
    escaped = picture(tmp_path / "Desktop" / "two  spaces.png", (20, 10))
    app = ImagesHost(work_dir)
    async with app.run_test() as pilot:
        prompt = app.query_one(PromptInput)
        prompt.post_message(events.Paste(shlex.quote(str(spaced)) + "\n"))
        await wait_for(pilot, lambda: len(chips_of(app)) == 1)
        size = format_size(spaced.stat().st_size)
        assert chips_of(app) == [f"[image 1 · my shot.png · 800x600 · {size}]"]
        # Two drops in a row keep their order.
        prompt.post_message(events.Paste(photo.as_uri()))
        prompt.post_message(events.Paste(str(escaped).replace(" ", "\\ ")))
        await wait_for(pilot, lambda: len(chips_of(app)) == 3)
        assert [chip.split(" · ")[1] for chip in chips_of(app)] == [
            "my shot.png",
            "photo.jpeg",
            "two  spaces.png",
        ]
        assert prompt.text == ""  # no path went in as text
        await wait_for(pilot, lambda: "[image 2 · photo.jpeg · 300x200" in screen_text(app))

        # An image beside a text file, and a path in a sentence: text, as before.
        prompt.post_message(events.Paste(f"{work_dir / 'shot.png'} {work_dir / 'notes.txt'}"))
        await wait_for(pilot, lambda: "notes.txt" in prompt.text)
        prompt.post_message(events.Paste(" see shot.png"))
        await wait_for(pilot, lambda: prompt.text.endswith(" see shot.png"))
        assert len(chips_of(app)) == 3


async def test_chips_go_by_backspace_at_the_start_or_their_cross_renumbered_names_shown_literally(
    work_dir: Path, tmp_path: Path
) -> None:
    hostile = [
        picture(tmp_path / "[bold red]alarm.png", (10, 10)),
        picture(tmp_path / f"{ESC}[8mhidden.png", (10, 10)),
        picture(tmp_path / "third.png", (10, 10)),
    ]
    app = ImagesHost(work_dir)
    async with app.run_test(size=(100, 24)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.post_message(events.Paste(" ".join(shlex.quote(str(p)) for p in hostile)))
        await wait_for(pilot, lambda: len(chips_of(app)) == 3)
        await pilot.pause()
        shown = screen_text(app)
        assert "[image 1 · [bold red]alarm.png · 10x10" in shown
        assert "[8mhidden.png" in shown and ESC not in shown
        assert shown.count("✕") == 3

        # Backspace deletes text first; at the start of the prompt it takes the last chip.
        await pilot.press("o", "k", "backspace")
        assert prompt.text == "o" and len(chips_of(app)) == 3
        await pilot.press("home", "backspace")
        assert prompt.text == "o"
        assert [chip.split(" · ")[1] for chip in chips_of(app)] == [
            "[bold red]alarm.png",
            "\x1b[8mhidden.png",
        ]
        # A click on the first chip's ✕: the other is image 1 now.
        await pilot.click("ImageChips .remove")
        await wait_for(pilot, lambda: len(chips_of(app)) == 1)
        assert chips_of(app)[0].startswith("[image 1 · \x1b[8mhidden.png")
        assert app.focused is prompt
        await pilot.press("backspace")
        assert chips_of(app) == [] and prompt.text == "o"
        assert not app.query_one(ImageChips).display  # the row takes no room when empty


async def test_ctrl_v_attaches_the_clipboards_image_or_says_in_one_line_why_not(
    work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clip = picture(tmp_path / "clip.png", (12, 7))
    install(tmp_path / "bin", "wl-paste")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("TYPES", "text/plain image/png")
    monkeypatch.setenv("PNG", str(clip))
    app = ImagesHost(work_dir)
    async with app.run_test(notifications=True) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.press("ctrl+v")
        await wait_for(pilot, lambda: chips_of(app))
        assert chips_of(app)[0].startswith("[image 1 · ") and " · 12x7 · " in chips_of(app)[0]
        assert prompt.text == ""

        # The clipboard holds text only: one line, nothing attached.
        monkeypatch.setenv("TYPES", "text/plain")
        await pilot.press("ctrl+v")
        await wait_for(pilot, lambda: notices(app))
        assert notices(app) == ["The clipboard holds no image."]

        # No tool at all: one line saying what to install.
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        monkeypatch.delenv("WAYLAND_DISPLAY")
        await pilot.press("ctrl+v")
        await wait_for(pilot, lambda: len(notices(app)) == 2)
        assert "install wl-clipboard or xclip" in notices(app)[1]
        assert "\n" not in notices(app)[1]
        assert len(chips_of(app)) == 1

        # Text copied in the app itself still pastes with Ctrl+V (TextArea's own paste).
        app.copy_to_clipboard("copied words")
        await pilot.press("ctrl+v")
        await wait_for(pilot, lambda: prompt.text == "copied words")
        assert len(notices(app)) == 2


async def test_an_at_image_is_attached_when_taken_or_sent_and_one_outside_is_refused(
    work_dir: Path, tmp_path: Path
) -> None:
    picture(tmp_path / "outside.png", (10, 10))
    app = ImagesHost(work_dir)
    async with app.run_test(notifications=True) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.press(*"@sho")
        await wait_for(pilot, lambda: "shot.png" in prompt.completion_labels)
        await pilot.press("tab")
        await wait_for(pilot, lambda: chips_of(app))
        assert chips_of(app)[0].startswith("[image 1 · shot.png · 1280x720")
        assert prompt.text == ""  # a chip, not the name

        # A mention left in the text is attached on send, the text keeping it; a text file's
        # mention stays a mention.
        prompt.text = "compare with @docs/other.jpg, and @notes.txt"
        await pilot.press("end", "enter")
        await wait_for(pilot, lambda: app.submitted)
        assert app.submitted == [
            ("compare with @docs/other.jpg, and @notes.txt", ["shot.png", "other.jpg"])
        ]
        assert chips_of(app) == [] and prompt.text == ""

        # An image outside the work dir: refused in one line, the prompt kept as it was.
        await pilot.press(*"@sho", "tab")
        await wait_for(pilot, lambda: chips_of(app))
        prompt.text = "and @../outside.png"
        await pilot.press("end", "enter")
        await wait_for(pilot, lambda: notices(app))
        assert notices(app) == [
            "@../outside.png is outside the work dir: not attached (paste or drop the file "
            "to attach it, or take the @ off)."
        ]
        assert prompt.text == "and @../outside.png" and len(chips_of(app)) == 1
        assert len(app.submitted) == 1


def vision_config(server: LLMServer) -> Config:
    return Config(
        default_model="loop",
        models={
            "loop": ModelConfig(
                model="openai/test-model", api_base=server.url, api_key_env=KEY_ENV, vision=True
            )
        },
    )


def image_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part
        for message in request["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]


async def test_images_go_with_the_message_also_when_queued_and_show_in_the_conversation(
    project: Path, server: LLMServer
) -> None:
    shot = picture(project / "shot.png", (64, 48))
    held = server.reply_hang("Looking")
    server.reply_text("A navy rectangle.")
    app = make_app(project, config=vision_config(server))
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        prompt.text = "first"
        await pilot.press("end", "enter")
        await held.wait_started()
        # Typed while the turn runs: queued with its image, shown with it.
        prompt.post_message(events.Paste(str(shot)))
        await wait_for(pilot, lambda: chips_of(app))
        prompt.text = "What is this?"
        await pilot.press("end", "enter")
        await wait_for(pilot, lambda: "⧗ What is this? [+1 image]" in screen_text(app))
        assert chips_of(app) == []
        held.release()
        await wait_for(pilot, lambda: len(server.requests) == 2 and not turn_running(app))
        await wait_for(pilot, lambda: "A navy rectangle." in screen_text(app))
        # The message shows its image as a chip, as a message loaded from the context does.
        await wait_for(pilot, lambda: f"What is this? [image · {shot}" in screen_text(app))
    assert image_parts(server.requests[0]) == []
    (sent,) = image_parts(server.requests[1])
    assert sent["image_url"]["url"].startswith("data:image/png;base64,")


async def test_a_model_without_vision_keeps_the_prompt_and_its_chips(project: Path) -> None:
    shot = picture(project / "shot.png", (64, 48))
    provider = ScriptedProvider([{"text": "never asked"}])
    app = make_app(project, provider)
    async with app.run_test(size=(160, 30)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        prompt.post_message(events.Paste(str(shot)))
        await wait_for(pilot, lambda: chips_of(app))
        prompt.text = "What is this?"
        await pilot.press("end", "enter")
        await wait_for(pilot, lambda: prompt.text == "What is this?" and not turn_running(app))
        assert len(chips_of(app)) == 1 and chips_of(app)[0].startswith("[image 1 · shot.png")
        await wait_for(pilot, lambda: "does not take images: remove them" in screen_text(app))
        assert provider.requests == []


async def test_enter_right_after_a_drop_waits_for_its_image_and_sends_it(
    work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The paste is still being read when Enter comes: the message waits and takes it along,
    with text and without (a drop, then Enter at once)."""
    import threading

    from kode_tui.soul import facade

    reading, go_on = threading.Event(), threading.Event()
    real = facade.pasted_paths

    def slow_pasted_paths(text: str, work: Path) -> list[Path] | None:
        reading.set()
        go_on.wait(timeout=30)
        return real(text, work)

    monkeypatch.setattr(facade, "pasted_paths", slow_pasted_paths)
    dropped = picture(tmp_path / "Desktop" / "dropped.png", (40, 30))
    app = ImagesHost(work_dir)
    async with app.run_test() as pilot:
        prompt = app.query_one(PromptInput)
        for sent, typed in enumerate(("what is this?", ""), start=1):
            reading.clear()
            go_on.clear()
            prompt.text = typed
            prompt.post_message(events.Paste(str(dropped)))
            await wait_for(pilot, reading.is_set)
            await pilot.press("end", "enter")
            go_on.set()
            await wait_for(pilot, lambda n=sent: len(app.submitted) == n)
            assert app.submitted[-1] == (typed, ["dropped.png"])
            assert prompt.text == "" and chips_of(app) == []
