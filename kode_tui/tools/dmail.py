"""SendDMail and DenwaRenji: the model sends a message back to one of its own checkpoints.

The tool only leaves the D-Mail with the DenwaRenji; after the step the soul fetches it, reverts
the context to the checkpoint and appends the message (DESIGN.md §4, seed 000). Files are not
reverted: the D-Mail must tell the past what was already done.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

from typing import ClassVar

from pydantic import BaseModel, Field

from kode_tui.tools.base import Tool, ToolEnv, ToolError, ToolOutput


class DMail(BaseModel):
    message: str = Field(description="The message to send to your past self.")
    checkpoint_id: int = Field(description="The checkpoint to send the message back to.", ge=0)


class DenwaRenjiError(Exception):
    pass


class DenwaRenji:
    """Holds at most one pending D-Mail between the tool that sends it and the soul."""

    def __init__(self) -> None:
        self._pending: DMail | None = None
        self._n_checkpoints = 0

    def set_n_checkpoints(self, n_checkpoints: int) -> None:
        """How many checkpoints the live context has (the soul keeps this current)."""
        self._n_checkpoints = n_checkpoints

    def send(self, dmail: DMail) -> None:
        if self._pending is not None:
            raise DenwaRenjiError("only one D-Mail can be sent at a time")
        if not 0 <= dmail.checkpoint_id < self._n_checkpoints:
            raise DenwaRenjiError(
                f"there is no checkpoint {dmail.checkpoint_id} "
                f"(the context has checkpoints 0 to {self._n_checkpoints - 1})"
            )
        self._pending = dmail

    def fetch(self) -> DMail | None:
        """The pending D-Mail, which is then no longer pending."""
        dmail, self._pending = self._pending, None
        return dmail


class SendDMail(Tool[DMail]):
    name: ClassVar[str] = "SendDMail"
    description: ClassVar[str] = (
        "Send a message to the past: the context is reverted to an earlier checkpoint and your "
        "message is appended there, so everything after that checkpoint leaves your context. "
        "Checkpoints appear as user messages `<system>CHECKPOINT n</system>`. Use it to fold "
        "a long detour into what matters: after reading a large file of which little was "
        "relevant, after a search whose results are mostly noise, or after many steps of "
        "struggling with code that now works. Files and other external state are NOT reverted, "
        "so say exactly what you did, what you changed and what you learned, so your past self "
        "goes on without repeating it. Do not explain the D-Mail to the user."
    )
    params = DMail

    def __init__(self, denwa_renji: DenwaRenji) -> None:
        self._denwa_renji = denwa_renji

    async def run(self, params: DMail, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        try:
            self._denwa_renji.send(params)
        except DenwaRenjiError as error:
            raise ToolError(f"Failed to send D-Mail: {error}.", brief="D-Mail not sent") from None
        # The soul reverts before the model can read this; it only shows when that did not happen.
        return ToolOutput(
            message=(
                "If you see this message, the D-Mail was NOT sent successfully. "
                "This may be because some other tool that needs approval was rejected."
            ),
            brief=f"D-Mail to checkpoint {params.checkpoint_id}",
        )
