"""How long a failed model call waits before it is tried again, and when it gives up
(DESIGN.md §7; `[loop_control]` of the config).

A server that says how long to wait (`Retry-After`, carried by `LLMStatusError.retry_after`) is
waited for exactly that long; otherwise the waits grow exponentially from half a second, with
some jitter, up to `max_wait`. The call gives up after `attempts` attempts, when the server asks
for a wait longer than `max_wait`, or when the next wait would take the waits of this call past
`max_total_wait`; `why_stop` says which, in words the user can act on.

Claude Code tries a request up to 10 times with waits growing to about half a minute; Codex up
to 5 times (`request_max_retries` 4). Both honour `Retry-After`. The defaults here are alike.

tenacity loads at the first failure (~5 ms): a call that succeeds at once, as the first request
of a session mostly does, never waits for it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import msgspec

from kode_tui.soul.llm import LLMError, LLMStatusError, is_retryable
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire.readings import seconds

if TYPE_CHECKING:
    import tenacity

__all__ = ["RetryPolicy", "server_wait"]

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_WAIT = 0.5
"""Seconds before the second attempt (when the server did not say)."""
JITTER = 0.25
"""Each wait is stretched by up to this fraction, so clients that failed together do not all
come back at the same moment."""


def server_wait(state: tenacity.RetryCallState) -> float | None:
    """The wait the server asked for with the failed attempt's error, if it did."""
    error = state.outcome.exception() if state.outcome is not None else None
    return error.retry_after if isinstance(error, LLMStatusError) else None


class RetryPolicy(msgspec.Struct, frozen=True):
    """How one model call is retried (`KodeSoul.retry`): tenacity's `wait` and `stop`."""

    attempts: int = 10
    """Attempts in all, the first one included (`loop_control.max_retries_per_step`)."""
    max_wait: float = 60
    """The longest single wait (`loop_control.max_retry_wait`)."""
    max_total_wait: float = 300
    """The longest the waits of one call may add up to (`loop_control.max_total_retry_wait`)."""

    def wait(self, state: tenacity.RetryCallState) -> float:
        """Seconds to wait after the failed attempt `state` describes."""
        asked = server_wait(state)
        if asked is not None:
            return asked
        grown = FIRST_WAIT * 2.0 ** min(state.attempt_number - 1, 30)
        return min(grown * (1 + random.uniform(0, JITTER)), self.max_wait)

    def stop(self, state: tenacity.RetryCallState) -> bool:
        """Whether to give up instead of waiting `state.upcoming_sleep` seconds."""
        return self.why_stop(state) is not None

    def why_stop(self, state: tenacity.RetryCallState) -> str | None:
        """Why the call gives up now, in a few words ("" when there was one attempt only);
        None while it goes on."""
        tried = state.attempt_number
        if tried >= self.attempts:
            if tried == 1:
                return ""
            limit = "the most loop_control.max_retries_per_step allows"
            return f"gave up after {tried} attempts, {limit}"
        upcoming = state.upcoming_sleep
        if upcoming > self.max_wait:
            return (
                f"the server asks to wait {seconds(upcoming)}, longer than "
                f"loop_control.max_retry_wait = {seconds(self.max_wait)}"
            )
        if state.idle_for + upcoming > self.max_total_wait:
            return (
                f"gave up after {tried} attempts: waiting {seconds(upcoming)} more would pass "
                f"loop_control.max_total_retry_wait = {seconds(self.max_total_wait)}"
            )
        return None

    async def run(
        self,
        call: Callable[[], Awaitable[T]],
        *,
        step: int,
        bus: WireBus,
        sleep: Callable[[float], Awaitable[None]],
    ) -> T:
        """`call()`, tried again on the errors `is_retryable` names, with a StepRetry event
        (for `step`) on `bus` before each wait; the error it gives up on ends with why."""
        first_failure: Exception | None
        try:
            return await call()
        except Exception as error:
            if not is_retryable(error):
                raise
            first_failure = error
        import tenacity

        async def attempt() -> T:
            # tenacity's first attempt is the one that failed: its error, as it came.
            nonlocal first_failure
            if first_failure is not None:
                failed, first_failure = first_failure, None
                raise failed
            return await call()

        def before_sleep(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            log.info("step %d attempt %d failed, retrying: %s", step, state.attempt_number, error)
            bus.send(
                ev.StepRetry(
                    n=step,
                    attempt=state.attempt_number,
                    max_attempts=self.attempts,
                    wait_s=round(float(wait), 3),
                    error=str(error),
                    error_type=type(error).__name__ if error else "unknown",
                    status_code=error.status_code if isinstance(error, LLMStatusError) else None,
                    server_wait=server_wait(state) is not None,
                )
            )

        def give_up(state: tenacity.RetryCallState) -> T:
            error = state.outcome.exception() if state.outcome else None
            assert isinstance(error, LLMError)  # only those are retried
            why = self.why_stop(state)
            if why:
                error.args = (f"{error} ({why})",)
            raise error

        retrying = tenacity.AsyncRetrying(
            sleep=sleep,
            retry=tenacity.retry_if_exception(is_retryable),
            wait=self.wait,
            stop=self.stop,
            before_sleep=before_sleep,
            retry_error_callback=give_up,
        )
        result: T = await retrying(attempt)
        return result
