"""Time travel, as the user sees it: the question asked before a revert, and the read-only
preview of a rotated context with "restore this context".

Both screens only ask: they dismiss with the user's answer and the App does the revert or the
restore (DESIGN.md §10). What they show comes from `kode_tui.session.timetravel`: the file plan
of a revert, and a snapshot of a rotated file read without the session's lock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Static

from kode_tui.humanize import agrees, format_age, format_tokens, plural
from kode_tui.message import Message, shown_messages
from kode_tui.safetext import visible
from kode_tui.soul.facade import (
    CheckpointDiff,
    Comparison,
    ContextSnapshot,
    FileAction,
    FilePlan,
    PastResults,
    RestorePlan,
    RevertChoice,
    RevertPlan,
    Rotation,
    RotationPreview,
    WireBus,
)
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.history import reason_text
from kode_tui.ui.widgets.message_lines import message_line, messages_as_text, shorten
from kode_tui.wire.events import DiffBlock

PROMPT_TEXT_CHARS = 60
"""How much of the user's message the revert dialog quotes."""
COMPARED_SHOWN = 5
"""Messages listed under each side of the comparison."""

_RESTORABLE: frozenset[FileAction] = frozenset(("restore", "delete"))


def file_row(plan: FilePlan) -> Content:
    """One line of the revert dialog: what reverting does to a file, and why."""
    path = visible(plan.path, multiline=False)
    if plan.action == "restore":
        return Content.assemble(("✔ restore ", "$text-success"), " ", path)
    if plan.action == "delete":
        return Content.assemble(
            ("✔ delete  ", "$text-success"),
            " ",
            path,
            (" — the agent created it, so it will be deleted", "dim"),
        )
    if plan.action == "conflict":
        return Content.assemble(
            ("⚠ conflict", "$text-warning"),
            " ",
            path,
            (" — changed since the agent's edit: left as it is, unless restored anyway", "dim"),
        )
    if plan.action == "refused":
        return Content.assemble(
            ("⚠ refused ", "$text-warning"),
            " ",
            path,
            (" — outside the work dir or can make tools run code: left as it is", "dim"),
        )
    return Content.assemble(
        ("⚠ missing ", "$text-warning"),
        " ",
        path,
        (" — its earlier content was not saved", "dim"),
    )


# --- Revert ---------------------------------------------------------------------------------------

_REVERT = Binding.Group("Revert")


class RevertDialog(ModalScreen[RevertChoice | None]):
    """Ask how to revert to a checkpoint; dismissed with "conversation", "files", "anyway"
    or None.

    `files` is the plan of the files the agent changed after the checkpoint
    (`plan_file_revert`); "files" is offered only when some of them can be restored, and
    "anyway" (the conflicts overwritten too, what they hold kept) only when some conflict.
    """

    HELP: ClassVar[str] = """\
## Revert

Going back to a checkpoint takes the messages after it out of the live context. They are not
deleted: the whole context is kept as a rotated `context_N.jsonl` (see History), and your
message from that point goes back into the prompt to edit and send again.

- **c** reverts the conversation only: files stay as they are.
- **f** also puts back the files the agent changed after the checkpoint. A file changed since
  the agent's edit is a *conflict*: it is left alone, never overwritten.
- **a** restores anyway: the conflicts are put back too. What they hold now is kept first,
  in the rotated context, so restoring that context with its files brings it back.
- **d** shows the conflicts: the agent's version of each file against what it holds now.
- **Esc** cancels.
"""

    CSS_PATH = "timetravel.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c",
            "choose('conversation')",
            "Conversation only",
            id="revert.conversation",
            group=_REVERT,
        ),
        Binding("f", "choose('files')", "Conversation and files", id="revert.files", group=_REVERT),
        Binding("a", "choose('anyway')", "Restore anyway", id="revert.anyway", group=_REVERT),
        Binding("escape", "cancel", "Cancel", id="revert.cancel", group=_REVERT),
        Binding("d", "conflicts", "Conflict diffs", id="revert.conflicts", group=_REVERT),
    ]

    def __init__(
        self,
        checkpoint_id: int,
        label: str,
        messages_leaving: int,
        tokens_freed: int,
        files: Sequence[FilePlan],
        next_user_text: str,
        conflict_diffs: Sequence[DiffBlock] = (),
        untracked: Sequence[str] = (),
        kept_in: str = "",
    ) -> None:
        """`conflict_diffs`: for each conflict, the agent's version against the file now;
        `untracked`: files whose Shell edits are not tracked (too large, ignored); `kept_in`:
        the rotated file that will keep what a conflict restored anyway holds."""
        super().__init__()
        self.kept_in = kept_in
        self.untracked = list(untracked)
        self.conflict_diffs = list(conflict_diffs)
        self.checkpoint_id = checkpoint_id
        self.label = label
        self.messages_leaving = messages_leaving
        self.tokens_freed = tokens_freed
        self.files = list(files)
        self.next_user_text = next_user_text

    @classmethod
    def from_plan(cls, plan: RevertPlan) -> RevertDialog:
        preview = plan.preview
        return cls(
            preview.checkpoint_id,
            plan.label,
            preview.messages_leaving,
            preview.tokens_freed,
            preview.files,
            preview.next_user_text,
            plan.conflict_diffs,
            preview.untracked,
            plan.kept_in,
        )

    @property
    def can_restore_files(self) -> bool:
        """Whether any file would be restored or deleted (else there is no "files" choice)."""
        return any(plan.action in _RESTORABLE for plan in self.files)

    @property
    def has_conflicts(self) -> bool:
        """Whether a file was changed since (else there is no "anyway" choice)."""
        return any(plan.action == "conflict" for plan in self.files)

    VERB = "revert"
    FILES_KEY = "revert the conversation and restore the files"
    ANYWAY_KEY = "restore anyway: the conflicts too; what they hold now is kept in {kept_in}"
    CONFLICTS_KEY = "show the conflicts: the agent's version of each file against what it holds now"

    def _title(self) -> str:
        return f"Revert to checkpoint {self.checkpoint_id}: " + visible(self.label, multiline=False)

    def _summary(self) -> str:
        return (
            f"{plural(self.messages_leaving, 'message')} "
            f"(~{format_tokens(self.tokens_freed)} tokens) "
            f"{agrees(self.messages_leaving, 'leave')} the live context. "
            "They are kept in a rotated file: nothing is lost."
        )

    def _files_heading(self) -> str:
        return f"The agent changed {plural(len(self.files), 'file')} after this checkpoint:"

    def compose(self) -> ComposeResult:
        with Vertical(id="revert-dialog"):
            yield Static(Content(self._title()), id="revert-title")
            yield Static(self._summary(), id="revert-summary", markup=False)
            if prompt_text := shorten(self.next_user_text, PROMPT_TEXT_CHARS):
                yield Static(
                    f"Your message from that point ('{prompt_text}') goes back into the prompt "
                    "to edit and resend.",
                    id="revert-prompt",
                    markup=False,
                )
            if self.files:
                yield Static(self._files_heading(), id="revert-files-heading", markup=False)
                yield Static(
                    Content("\n").join(file_row(plan) for plan in self.files), id="revert-files"
                )
            if not self.can_restore_files and not self.has_conflicts:
                yield Static("No files to restore.", id="revert-no-files")
            if self.untracked:
                yield Static(
                    "Not tracked, so not restored:\n" + "\n".join(self.untracked),
                    id="revert-untracked",
                    markup=False,
                )
            yield Static(self._keys_text(), id="revert-keys")
            with Horizontal(id="revert-buttons"):
                yield Button(
                    "Conversation only", variant="primary", id="revert-conversation", compact=True
                )
                if self.can_restore_files:
                    yield Button(
                        "Conversation and files",
                        variant="warning",
                        id="revert-with-files",
                        compact=True,
                    )
                if self.has_conflicts:
                    yield Button(
                        "Restore anyway", variant="error", id="revert-anyway", compact=True
                    )
                yield Button("Cancel", id="revert-cancel", compact=True)

    def on_mount(self) -> None:
        # The first button takes the focus and scrolls a tall dialog (80x24) down to itself:
        # the title and the files come first.
        self.call_after_refresh(self.query_one("#revert-dialog").scroll_home, animate=False)

    def _keys_text(self) -> Content:
        keys = [("c", f"{self.VERB} the conversation only (files stay as they are)")]
        if self.can_restore_files:
            deletes = any(plan.action == "delete" for plan in self.files)
            also = "; created ones are deleted" if deletes else ""
            keys.append(("f", self.FILES_KEY + also))
        if self.has_conflicts:
            kept_in = self.kept_in or "the rotated context"
            keys.append(("a", self.ANYWAY_KEY.format(kept_in=kept_in)))
        if self.conflict_diffs:
            keys.append(("d", self.CONFLICTS_KEY))
        keys.append(("Esc", "cancel"))
        return Content("\n").join(
            Content.assemble((f"{key:<4}", "bold $text-accent"), text) for key, text in keys
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose" and parameters == ("files",):
            return self.can_restore_files
        if action == "choose" and parameters == ("anyway",):
            return self.has_conflicts
        if action == "conflicts":
            return bool(self.conflict_diffs)
        return True

    def action_conflicts(self) -> None:
        """Show how each conflicting file differs from what the agent left in it."""
        from kode_tui.ui.screens.diff import DiffScreen

        self.app.push_screen(
            DiffScreen("Changed since the agent's edit (agent → now)", self.conflict_diffs)
        )

    def action_choose(self, choice: RevertChoice) -> None:
        """Revert the conversation only, with the files, or with the conflicts too."""
        self.dismiss(choice)

    def action_cancel(self) -> None:
        """Leave the context as it is."""
        self.dismiss(None)

    @on(Button.Pressed, "#revert-conversation")
    def _conversation_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose("conversation")

    @on(Button.Pressed, "#revert-with-files")
    def _files_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose("files")

    @on(Button.Pressed, "#revert-anyway")
    def _anyway_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose("anyway")

    @on(Button.Pressed, "#revert-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()


class RestoreDialog(RevertDialog):
    """Ask how to restore a rotated context; dismissed with "conversation", "files" or None.

    `files` is the plan of the files the two conversations leave differently
    (`plan_file_restore`): with "files" each is put back as the restored conversation left it.
    """

    HELP: ClassVar[str] = """\
## Restore

Making a rotated context live again keeps the live one as a new rotated file: nothing is lost.

- **c** restores the conversation only: files stay as they are.
- **f** also puts the files back as the restored conversation left them. A file changed since
  the live conversation's edit is a *conflict*: it is left alone, never overwritten.
- **a** restores anyway: the conflicts are put back too. What they hold now is kept first, in
  the live context's rotated file, so restoring that file with its files brings it back.
- **d** shows the conflicts: the live conversation's version of each file against what it
  holds now.
- **Esc** cancels.
"""

    VERB = "restore"
    FILES_KEY = "restore the conversation and put the files back as it left them"
    CONFLICTS_KEY = "show the conflicts: the live conversation's version against the file now"

    def __init__(self, name: str, plan: RestorePlan) -> None:
        preview = plan.preview
        super().__init__(
            0,
            name,
            preview.messages_leaving,
            0,
            preview.files,
            "",
            plan.conflict_diffs,
            preview.untracked,
            plan.kept_in,
        )
        self.messages_back = preview.messages_back

    def _title(self) -> str:
        return f"Restore {visible(self.label, multiline=False)}"

    def _summary(self) -> str:
        return (
            f"{plural(self.messages_back, 'message')} {agrees(self.messages_back, 'come')} back; "
            f"{plural(self.messages_leaving, 'message')} of the live context leave it. "
            "They are kept in a rotated file: nothing is lost."
        )

    def _files_heading(self) -> str:
        verb = "differs" if len(self.files) == 1 else "differ"
        return f"{plural(len(self.files), 'file')} {verb} between the two conversations:"


# --- Preview --------------------------------------------------------------------------------------


def _compared_lines(messages: Sequence[Message]) -> list[Content]:
    messages = shown_messages(messages)
    lines = [Content.assemble("  ", message_line(m)) for m in messages[:COMPARED_SHOWN]]
    if len(messages) > COMPARED_SHOWN:
        more = f"… {len(messages) - COMPARED_SHOWN} more"
        lines.append(Content.assemble("  ", (more, "dim italic")))
    return lines


PreviewResult = bool | str | RevertChoice
"""What a preview is dismissed with: False (closed), True (restore the conversation, no file
differs), "conversation", "files" or "anyway" (the restore dialog's choice), or any other
text: messages for the prompt."""


class PreviewScreen(Screen[PreviewResult]):
    """A rotated context, read-only: its conversation and how it differs from the live one.

    `rotation` is what rotations.jsonl says of the file (None: nothing known); `now` fixes
    the clock its age is measured against (tests); `results` lets tool calls show their
    diffs and briefs; `plan` is what restoring would do, files included (None: the
    conversation alone comes back, after a y/n question).
    """

    HELP: ClassVar[str] = """\
## Preview of a rotated context

An earlier generation of this session's context, as it is on disk; nothing here changes it.
The panel on the right compares it with the live context: the messages both start with, and
what only each of them holds.

- **r** restores this context: it becomes the live one again, and the live context is kept as
  a new rotated file, so nothing is lost. **y** confirms, **n** thinks again.
- **v** lists the messages only this file has and only the live context has.
- **p** copies the messages only this file has (what a compaction summarised away, say) into
  the prompt, to bring them back into the conversation.
- **Esc** or **q** closes the preview.
"""

    CSS_PATH = "timetravel.tcss"

    # Not `group=`: the footer shows a group's keys under one label, and each of these keys
    # needs its own words. F1 help groups them under this title instead.
    BINDING_GROUP_TITLE = "Preview"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "restore", "Restore this context", id="preview.restore"),
        Binding("p", "to_prompt", "Copy to the prompt", id="preview.to_prompt"),
        Binding("v", "diff", "Diff with live", id="preview.diff"),
        Binding("y", "confirm", "Yes, restore", id="preview.confirm"),
        Binding("n", "cancel_restore", "No", id="preview.cancel"),
        Binding("escape,q", "close", "Close", id="preview.close"),
    ]

    confirming: reactive[bool] = reactive(False, bindings=True)
    """Whether the screen is asking "restore this context?"."""

    def __init__(
        self,
        snapshot: ContextSnapshot,
        rotation: Rotation | None,
        comparison: Comparison,
        *,
        now: float | None = None,
        results: PastResults | None = None,
        plan: RestorePlan | None = None,
        at: int | None = None,
        tokens: int | None = None,
        tokens_estimated: bool = False,
        subagent: bool = False,
    ) -> None:
        """`comparison`: the live context against `snapshot` (the facade's preview has it);
        `at`: the message to open at (a search match), else the end; `tokens`: its size as
        History's row says it (else the file's last count)."""
        super().__init__()
        self.snapshot = snapshot
        self.rotation = rotation
        self.comparison = comparison
        self._tokens = tokens if tokens is not None else snapshot.token_count
        self._tokens_estimated = tokens_estimated and tokens is not None
        self._now = now
        self._results = results
        self.plan = plan
        self._at = at
        self.subagent = subagent
        """A subagent's context: read only, never restored or compared with the live one."""

    @classmethod
    def from_preview(cls, preview: RotationPreview, at: int | None = None) -> PreviewScreen:
        return cls(
            preview.snapshot,
            preview.rotation,
            preview.comparison,
            results=preview.results,
            plan=preview.plan,
            at=at,
            tokens=preview.tokens,
            tokens_estimated=preview.tokens_estimated,
            subagent=preview.subagent,
        )

    @property
    def name_shown(self) -> str:
        """The file's name, as the screen calls it (a subagent's: its folder's)."""
        path = self.snapshot.path
        name = f"subagent {path.parent.name}" if self.subagent else path.name
        return visible(name, multiline=False)

    def compose(self) -> ComposeResult:
        with Vertical(id="preview-top"):
            yield Static(Content(self._header_text()), id="preview-header")
            if compacted := self._compaction_text():
                yield Static(Content(compacted), id="preview-compaction")
        with Horizontal(id="preview-body"):
            yield Conversation(WireBus(), id="preview-conversation")
            if not self.subagent:  # its own context: it would only be compared with itself
                with VerticalScroll(id="preview-compare") as panel:
                    panel.border_title = "Compared with the live context"
                    yield Static(self._comparison_text(), id="preview-comparison")
        yield Static(
            Content.assemble(
                f"Restore {self.name_shown}? The live context is kept as a new rotated file.  ",
                ("y", "bold"),
                " restore · ",
                ("n", "bold"),
                " cancel",
            ),
            id="preview-confirm",
        )
        yield Footer()

    async def on_mount(self) -> None:
        conversation = self.query_one(Conversation)
        conversation.border_title = "Conversation (read-only)"
        conversation.focus()
        await conversation.load_history(self.snapshot.messages, self._results, at=self._at)

    def _header_text(self) -> str:
        snapshot, rotation = self.snapshot, self.rotation
        facts = [self.name_shown]
        if rotation is not None:
            facts.append(reason_text(rotation))
            when = rotation.time if rotation.time is not None else rotation.mtime
            now = self._now if self._now is not None else time.time()
            facts.append(format_age(when, now))
        facts += [
            plural(snapshot.n_checkpoints, "checkpoint"),
            f"{'~' if self._tokens_estimated else ''}{format_tokens(self._tokens)} tokens",
            plural(len(shown_messages(snapshot.messages)), "message"),
        ]
        return visible(" · ".join(facts), multiline=False)

    def _compaction_text(self) -> str | None:
        rotation = self.rotation
        if rotation is None or rotation.reason != "compaction":
            return None
        before = rotation.info.get("tokens_before", rotation.tokens)
        after = rotation.info.get("tokens_after")
        if not isinstance(before, int) or not isinstance(after, int):
            return None
        strategy = rotation.info.get("strategy")
        by = (
            f" by {visible(strategy, multiline=False)}"
            if isinstance(strategy, str) and strategy
            else ""
        )
        return f"compacted {format_tokens(before)} → {format_tokens(after)}{by}"

    def _comparison_text(self) -> Content:
        comparison = self.comparison
        counts = comparison.counts  # as a restore's dialog counts and words them
        lines = [
            Content.styled(f"{plural(counts.in_both, 'message')} in both", "bold"),
            Content(""),
            Content.styled(
                f"{plural(counts.only_there, 'message')} "
                f"{agrees(counts.only_there, 'come')} back from this file",
                "bold",
            ),
            *_compared_lines(comparison.only_there),
            Content(""),
            Content.styled(
                f"{plural(counts.only_here, 'message')} "
                f"{agrees(counts.only_here, 'leave')} the live context",
                "bold",
            ),
            *_compared_lines(comparison.only_here),
        ]
        return Content("\n").join(lines)

    def watch_confirming(self, confirming: bool) -> None:
        self.set_class(confirming, "-confirming")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.subagent and action in ("restore", "confirm", "to_prompt", "diff"):
            return False
        if action == "restore":
            return not self.confirming
        if action in ("confirm", "cancel_restore"):
            return self.confirming
        if action == "to_prompt":
            return not self.confirming and bool(self.comparison.only_there)
        return True

    def action_restore(self) -> None:
        """Ask whether to restore this context, and with files that differ, how."""
        if self.plan is None or not self.plan.preview.files:
            self.confirming = True
            return

        def chosen(choice: RevertChoice | None) -> None:
            if choice is not None:
                self.dismiss(choice)

        self.app.push_screen(RestoreDialog(self.name_shown, self.plan), chosen)

    def action_confirm(self) -> None:
        """Restore it: the App makes this file the live context."""
        self.dismiss(True)

    def action_cancel_restore(self) -> None:
        """Keep looking instead of restoring."""
        self.confirming = False

    def action_diff(self) -> None:
        """The messages only this file has, and only the live context has, side by side."""
        from kode_tui.ui.screens.compare import CompareScreen

        diff = CheckpointDiff(self.comparison.only_here, self.comparison.only_there, [])
        self.app.push_screen(CompareScreen(f"{self.name_shown} → the live context", diff))

    def action_to_prompt(self) -> None:
        """Close with the text of the messages only this file has, for the prompt."""
        self.dismiss(messages_as_text(self.comparison.only_there))

    def action_close(self) -> None:
        """Close the preview; while asking, Esc and q only take the question back."""
        if self.confirming:
            self.confirming = False
        else:
            self.dismiss(False)


if __name__ == "__main__":
    import asyncio
    import sys

    from textual.app import App

    from kode_tui.soul.facade import AgentSession, Session

    class _Demo(App[None]):
        """`python -m kode_tui.ui.screens.timetravel [SESSION_DIR]`: the revert dialog, then
        a preview of the session's first rotated context."""

        def on_mount(self) -> None:
            files = [
                FilePlan("hello.py", Path("hello.py"), "restore", None, "a"),
                FilePlan("greet.py", Path("greet.py"), "delete", None, None),
                FilePlan("README.md", Path("README.md"), "conflict", None, "b"),
            ]
            dialog = RevertDialog(
                3, "WriteFile hello.py", 12, 4100, files, "Create hello.py with a greeting"
            )
            self.push_screen(dialog, self._preview)

        async def _preview(self, choice: RevertChoice | None) -> None:
            self.notify(f"revert: {choice}")
            folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/fixtures/kimi-session")
            # A read-only view: the demo reads copies, whoever writes the session.
            opened = await AgentSession.view(await Session.from_dir(folder.resolve(), Path.cwd()))
            rotations = await asyncio.to_thread(opened.travel.rotations)
            if rotations:
                preview = await opened.travel.preview(rotations[-1].rotation.path.name)
                screen = PreviewScreen.from_preview(preview)
                self.push_screen(screen, lambda restore: self.notify(f"restore: {restore}"))

    _Demo().run()
