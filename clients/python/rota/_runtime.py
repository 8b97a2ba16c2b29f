"""What the blocking and the asyncio workers share: how a handler's
outcome ends its job, which errors are worth trying again, how far to lease
ahead, and the lease fingerprint of the event stream."""

import datetime as _dt
import json as _json
import logging as _logging
import threading as _threading
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


# ---- per-job logs (job.log) ----

# What one attempt of a job keeps of its log, as the server bounds it: a
# record counts its message and attributes plus LOG_RECORD_OVERHEAD bytes;
# past MAX_LOG_BYTES records are counted and dropped, every later one too.
MAX_LOG_BYTES = 64 << 10
LOG_RECORD_OVERHEAD = 32
# How often a worker sends its running jobs' records (and before each
# finish).
LOG_FLUSH_INTERVAL = 1.0

_STANDARD_ATTRS = set(vars(_logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_compact = _json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=repr).encode


def slog_level(levelno):
    """The server's name (Go's log/slog) of a Python logging level: DEBUG,
    INFO, WARNING and ERROR are DEBUG, INFO, WARN and ERROR, CRITICAL is
    ERROR+4, and levels between are offsets (slog's levels are 4 apart
    where Python's are 10)."""
    v = int(round((levelno - _logging.INFO) * 0.4))
    for base, name in ((8, "ERROR"), (4, "WARN"), (0, "INFO"), (-4, "DEBUG")):
        if v >= base:
            break
    off = v - base
    return name + ("+%d" % off if off > 0 else "-%d" % -off if off < 0 else "")


def _text(s):
    """s as text the server keeps: UTF-8, no NUL."""
    return s.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


class JobLog:
    """A run's log: the records its handler logs with job.log (a
    logging.Logger named rota.job.ID whose records also reach the worker's
    logger), buffered to send, bounded as the server bounds the attempt's.
    Records below level are not kept."""

    def __init__(self, job, parent, level):
        self.job = job
        self.lock = _threading.Lock()
        self.send_lock = _threading.Lock()  # one send of the run at a time, in order
        self.pending = []
        self.bytes = 0
        self.dropped = 0
        self.full = False
        self.closed = False
        log = _logging.Logger("rota.job.%d" % job.id, level)  # not registered: one per run
        log.parent = parent
        log.addHandler(_KeepHandler(self))
        self.logger = log

    def add(self, record):
        msg = _text(record.getMessage())
        if record.exc_info:
            msg += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        attrs = {k: v for k, v in record.__dict__.items() if k not in _STANDARD_ATTRS}
        rec = {"time": _dt.datetime.fromtimestamp(record.created, _dt.timezone.utc), "level": slog_level(record.levelno),
               "message": msg}
        size = len(msg.encode("utf-8")) + LOG_RECORD_OVERHEAD
        if attrs:
            enc = _text(_compact(attrs))
            rec["attrs"] = _json.loads(enc)
            size += len(enc.encode("utf-8"))
        with self.lock:
            if self.closed:
                return
            if self.full or self.bytes + size > MAX_LOG_BYTES:
                self.full = True
                self.dropped += 1
                return
            self.bytes += size
            self.pending.append(rec)

    def take(self, last):
        """The records and drop count to send (None: nothing); last closes
        the log: the run ends, and its lease appends no more."""
        with self.lock:
            if self.closed:
                return None
            self.closed = last
            recs, dropped = self.pending, self.dropped
            self.pending, self.dropped = [], 0
        if not recs and not dropped:
            return None
        return recs, dropped

    def give_back(self, recs, dropped):
        """Puts records that could not be sent back, before later ones."""
        with self.lock:
            if not self.closed:
                self.pending[:0] = recs
                self.dropped += dropped


class _KeepHandler(_logging.Handler):
    def __init__(self, log):
        super().__init__()
        self._log = log

    def emit(self, record):
        try:
            self._log.add(record)
        except Exception:
            self.handleError(record)
