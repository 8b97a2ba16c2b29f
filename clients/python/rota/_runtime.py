"""What the blocking and the asyncio workers share: how a handler's
outcome ends its job, which errors are worth trying again, how far to lease
ahead, and the lease fingerprint of the event stream."""

import datetime as _dt
import traceback

from . import _models as m
from . import _ops
from ._base import format_time


class Permanent(Exception):
    """Raise it from a handler to fail the job for good: no retries."""


class Snooze(Exception):
    """Raise Snooze(delay) from a handler to run the job again after delay
    (seconds or a timedelta) without using up an attempt; rename gives the
    job a new type for its next run."""

    def __init__(self, delay, rename=None):
        super().__init__("snooze for %s" % (delay,))
        if isinstance(delay, _dt.timedelta):
            delay = delay.total_seconds()
        if delay < 0:
            raise ValueError("a snooze's delay must not be negative, got %r" % (delay,))
        self.delay = float(delay)
        self.rename = rename


class Cancel(Exception):
    """Raise it from a handler to cancel the job (it does not run again)."""


def error_text(e):
    """What a failed attempt records: the exception's type and message."""
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def ending(run_result, exc, shutdown):
    """The batch finish item's fields (without id and token), in the API's
    JSON form, for a
    handler that returned run_result or raised exc. A handler stopped by
    the shutdown that raised hands its job back (release) without using up
    the attempt."""
    if exc is None:
        item = {"as": "complete"}
        if run_result is not None:
            item["result"] = run_result
        return item
    if shutdown:
        return {"as": "release"}
    if isinstance(exc, Snooze):
        run_at = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=exc.delay)
        item = {"as": "snooze", "run_at": format_time(run_at)}
        if exc.rename:
            item["rename"] = exc.rename
        return item
    if isinstance(exc, Cancel):
        return {"as": "cancel", "error": error_text(exc)}
    if isinstance(exc, Permanent):
        return {"as": "fail", "error": error_text(exc), "permanent": True}
    return {"as": "fail", "error": error_text(exc)}


def finish_body(items):
    """The JSON body of a worker's batch finish. An item whose result is
    not JSON (a handler returned a set, say) fails its job, with an error
    that says so, rather than the whole batch."""
    try:
        return _ops.finish_body(items, checked=True)
    except (TypeError, ValueError):
        for it in items:
            try:
                _ops.finish_body([it], checked=True)
            except (TypeError, ValueError) as e:
                error = "the handler's result is not JSON: %s" % (e,)
                for k in ("result", "run_at", "rename"):
                    it.pop(k, None)
                it.update({"as": "fail", "error": error, "permanent": True})
        return _ops.finish_body(items, checked=True)


_FINAL = (m.WorkerConflictError, m.CanceledError, m.NotFoundError, m.FinishedError, m.InvalidInputError,
          m.ForbiddenError, m.UnauthorizedError, m.TooLargeError)


def retryable(err):
    """Whether a failed heartbeat or finish may succeed if sent again:
    answers about the job itself (lease lost, cancelled, gone, malformed)
    will not change; a server restarting or unreachable may."""
    return not isinstance(err, _FINAL)


def lease_tag(token):
    """The fingerprint the event stream gives a lease (store.LeaseTag:
    FNV-1a, 64 bits, in hex), so that a worker acts only on changes about
    its own lease."""
    if not token:
        return ""
    h = 14695981039346656037
    for c in token.encode("utf-8"):
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%x" % h


class Pace:
    """Moving averages of how long handlers run and how long an accept that
    does not wait for work takes, for ahead (as the Go worker keeps)."""

    AHEAD_TRIPS = 4

    def __init__(self):
        self.run = 0.0
        self.accept = 0.0

    @staticmethod
    def _avg(old, d):
        return d if old == 0 else old + (d - old) / 8

    def ran(self, d):
        self.run = max(self._avg(self.run, d), 1e-9)

    def accepted(self, d):
        self.accept = max(self._avg(self.accept, d), 1e-9)

    def ahead(self, concurrency, prefetch):
        """How many jobs to lease beyond the free slots: as many as the
        slots are expected to free during four accepts' round trips, at
        most prefetch; none until both have been timed, and none when
        fewer than two (one hides little of an accept)."""
        if prefetch <= 0 or self.run == 0 or self.accept == 0:
            return 0
        n = int(self.AHEAD_TRIPS * concurrency * self.accept / self.run)
        if n < 2:
            return 0
        return min(n, prefetch)


# Back-off of heartbeats and finishes that failed for a reason that may
# pass, and how many finishes share one request.
RETRY_FIRST = 0.1
RETRY_MAX = 5.0
MAX_FINISH_BATCH = 1000
MAX_DEFAULT_PREFETCH = 256
