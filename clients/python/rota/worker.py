"""The blocking worker: Worker(client, concurrency=N), handlers registered
with @worker.handle(type), run() until SIGTERM, SIGINT or stop()."""

import heapq
import logging
import os
import queue
import signal
import socket
import threading
import time

from . import _models as m
from . import _ops
from ._runtime import (LOG_FLUSH_INTERVAL, MAX_DEFAULT_PREFETCH, MAX_FINISH_BATCH, RETRY_FIRST, RETRY_MAX, Cancel, JobLog,
                       Pace, Permanent, Snooze, ending, finish_body, lease_tag, retryable)

__all__ = ["Worker", "LeasedJob", "Permanent", "Snooze", "Cancel"]

_log = logging.getLogger("rota.worker")


class LeasedJob(m.Job):
    """A job as its handler sees it: the Job's fields, and what the worker
    knows of the run. stopping is a threading.Event set when the handler
    should stop: stop_reason then says why ("canceled": the job was
    cancelled or removed; "lease_lost": another worker may have it;
    "shutdown": the worker's shutdown timeout passed)."""

    def set_progress(self, percent, data=None):
        """Reports progress (0..100), and optionally new data; it also
        extends the lease. Raises CanceledError or WorkerConflictError when
        the job is no longer this run's."""
        r = self._run
        hr = r.worker.client.heartbeat(self.id, self.token, data=data, progress=percent)
        r.worker._extended(r, hr.lease_until)
        if hr.resubmit:
            self.resubmit_requested = True
        return hr

    @property
    def log(self):
        """The job's logger (a logging.Logger named rota.job.ID): its
        records at the worker's job_log_level and above are kept with the
        job's attempt (client.logs(id), rota logs ID, the job's dashboard
        page), at most 64 KiB an attempt (the rest are counted and
        dropped), and reach the worker's logger too. They are sent every
        second and before the job finishes; a worker killed outright loses
        what it had not sent."""
        return self._run.joblog().logger

    @property
    def stopping(self):
        return self._run.event()

    @property
    def stop_reason(self):
        return self._run.reason

    resubmit_requested = False


class _Run:
    __slots__ = ("worker", "job", "fn", "skew", "lease_until", "lease_len", "started", "ended", "stopped", "_event",
                 "reason", "settled", "log")

    def __init__(self, worker, job, fn, took):
        self.worker = worker
        self.job = job
        self.fn = fn
        # How far this machine's clock is ahead of the server's, measured
        # by the accept: lease ends on this machine's clock are the
        # server's plus skew, so clocks that disagree do not matter.
        self.skew = 0.0
        started = job.started_at.timestamp() if job.started_at else None
        until = job.lease_until.timestamp() if job.lease_until else took + 30
        if started is not None and started < until:
            self.skew = took - started
        self.lease_until = until + self.skew
        self.lease_len = max(self.lease_until - took, 0.01)
        self.started = False  # the handler runs or ran, or the job was held back before it could
        self.ended = False  # the handler returned, or the shutdown handed the job back
        self.stopped = False
        self._event = None  # made when a handler asks for it: most never do
        self.reason = None
        self.settled = False
        self.log = None  # the run's JobLog, made when the handler first logs

    def joblog(self):
        with _event_lock:
            if self.log is None:
                w = self.worker
                self.log = JobLog(self.job, w.log, w.job_log_level)
            return self.log

    def event(self):
        with _event_lock:
            if self._event is None:
                self._event = threading.Event()
                if self.stopped:
                    self._event.set()
            return self._event

    def stop(self, reason):
        if self.reason is None:
            self.reason = reason
        with _event_lock:
            self.stopped = True
            if self._event is not None:
                self._event.set()


_event_lock = threading.Lock()


class Worker:
    """Runs jobs of the registered types against a rota server.

        worker = rota.Worker(client, concurrency=8)

        @worker.handle("email.send")
        def send(job):
            ...              # job.data is the job's input
            return {"sent": True}   # the job's result

        worker.run()         # until SIGTERM, SIGINT or worker.stop()

    A handler's return value completes the job with it as the result;
    raising fails the attempt (the job retries with back-off until it runs
    out of attempts), raising rota.Permanent fails it for good,
    rota.Snooze(seconds) runs it again later without using up an attempt,
    rota.Cancel cancels it.

    As the Go worker does, it leases jobs ahead of its free slots (up to
    prefetch, from how long handlers and accepts take) in one accept,
    extends the leases of running jobs by batched heartbeats, sends
    finishes in batches (one request while the previous is in flight),
    trying a finish again while its lease holds when the server could not
    take it, and follows the event stream to learn at once of cancelled
    jobs (a handler sees job.stopping). On stop it leases no more, hands
    back jobs leased ahead, waits shutdown_timeout for running handlers,
    then sets their job.stopping (reason "shutdown") and hands back the
    jobs of those that raise or are still running after shutdown_grace,
    without using up an attempt."""

    def __init__(self, client, concurrency=10, name=None, prefetch=None, lease_timeout=None, poll_wait=30.0,
                 shutdown_timeout=10.0, shutdown_grace=5.0, watch=True, on_finish=None, logger=None,
                 job_log_level=logging.INFO):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1, got %r" % (concurrency,))
        self.client = client
        self.concurrency = concurrency
        self.name = name or "%s:%d" % (socket.gethostname(), os.getpid())
        if prefetch is None:
            prefetch = min(concurrency, MAX_DEFAULT_PREFETCH)
        self.prefetch = max(prefetch, 0)
        self.lease_timeout = lease_timeout
        self.poll_wait = poll_wait
        self.shutdown_timeout = shutdown_timeout
        self.shutdown_grace = shutdown_grace
        self.watch = watch
        self.on_finish = on_finish
        self.log = logger or _log
        self.job_log_level = job_log_level
        self.handlers = {}
        # What the worker has done: jobs completed, failed, snoozed,
        # cancelled, released (handed back), finishes refused (the lease was
        # lost or the job cancelled meanwhile) and given up.
        self.stats = {"completed": 0, "failed": 0, "snoozed": 0, "cancelled": 0, "released": 0, "refused": 0,
                      "given_up": 0}

        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._running = {}  # job id -> _Run, from accept until settled
        self._held = 0  # jobs holding a lease slot: accepted, handler not yet returned
        self._want = 0  # the accept loop waits until _held is at most this
        self._unsettled = 0
        self._settled = threading.Condition(self._lock)
        self._ready = queue.Queue()
        self._pace = Pace()
        self._stop = threading.Event()
        self._started = False
        self._accept_conn = None
        self._events_conn = None
        self._finishes = []  # (run, item) waiting for the finisher
        self._finish_cv = threading.Condition(threading.Lock())
        self._finisher_stop = False
        self._kick = threading.Event()
        self._kick_logs = threading.Event()  # set when the worker stops

    # ---- registration ----

    def handle(self, type):
        """Registers the decorated function for jobs of type: it gets the
        job (a LeasedJob) and returns the result."""
        if not type or any(c in type for c in "*?[]{}\\"):
            raise ValueError("handle: %r is not a job type (GLOB characters are for accept patterns)" % (type,))

        def register(fn):
            if self._started:
                raise RuntimeError("handle: the worker is running")
            if type in self.handlers:
                raise ValueError("handle: type %r already has a handler" % (type,))
            self.handlers[type] = fn
            return fn

        return register

    # ---- running ----

    def stop(self):
        """Begins a graceful stop; run() returns once it is done. Safe from
        any thread and from signal handlers."""
        self._stop.set()
        with self._lock:
            self._freed.notify_all()
        for c in (self._accept_conn, self._events_conn):
            _interrupt(c)

    def run(self, signals=True):
        """Accepts and runs jobs until stop(), or SIGTERM or SIGINT when
        signals is true (and run is called from the main thread)."""
        if not self.handlers:
            raise RuntimeError("the worker has no handlers")
        if self._started:
            raise RuntimeError("the worker already ran")
        self._started = True
        old = {}
        if signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, lambda *_: self.stop())
        threads = [threading.Thread(target=self._handler_loop, name="rota-handler-%d" % i, daemon=True)
                   for i in range(self.concurrency)]
        finisher = threading.Thread(target=self._finisher_loop, name="rota-finisher", daemon=True)
        beats = threading.Thread(target=self._heartbeat_loop, name="rota-heartbeats", daemon=True)
        logs = threading.Thread(target=self._log_loop, name="rota-logs", daemon=True)
        threads += [finisher, beats, logs]
        if self.watch:
            threads.append(threading.Thread(target=self._events_loop, name="rota-events", daemon=True))
        for t in threads:
            t.start()
        try:
            self._accept_loop()
        finally:
            self._shutdown()
            for sig, h in old.items():
                signal.signal(sig, h)

    def _accept_loop(self):
        types = sorted(self.handlers)
        backlog = False
        while not self._stop.is_set():
            ahead = self._pace.ahead(self.concurrency, self.prefetch)
            limit = self.concurrency + ahead
            with self._lock:
                # Wait until enough lease slots are free (with jobs leased
                # ahead, half of them), so that accepts stay large.
                self._want = limit - max(1, ahead // 2)
                if self._held > self._want:
                    self._freed.wait(1.0)
                    continue
                n = limit - self._held
                self._held += n  # the slots this accept may fill
            wait = 0 if backlog else self.poll_wait
            sent = time.monotonic()
            try:
                jobs = self._accept(types, n, wait)
            except Exception as e:
                with self._lock:
                    self._held -= n
                if self._stop.is_set():
                    break
                self.log.error("accept failed: %s", e)
                self._stop.wait(1.0)
                continue
            took_mono = time.monotonic()
            took = time.time()
            if wait == 0 and jobs:
                self._pace.accepted(took_mono - sent)
            backlog = len(jobs) == n
            runs = [_Run(self, j, self.handlers[j.type], took) for j in jobs]
            with self._lock:
                self._held -= n - len(jobs)
                for r in runs:
                    old = self._running.get(r.job.id)
                    if old is not None:  # taken back from an earlier run and leased here again
                        old.stop("lease_lost")
                    self._running[r.job.id] = r
                    self._unsettled += 1
            for r in runs:
                r.job._run = r
                self._ready.put(r)
            if runs:
                self._kick.set()

    def _accept(self, types, n, wait):
        """One accept, on a connection of its own that stop() can break
        off (a long poll waits up to poll_wait)."""
        req = _ops.accept(types, limit=n, wait=wait, worker=self.name, lease_timeout=self.lease_timeout)
        t = self.client._t
        if self._accept_conn is None:
            self._accept_conn = t.connect(t.timeout + self.poll_wait)
        c = self._accept_conn
        headers = dict(t.headers)
        headers["Content-Type"] = "application/json"
        try:
            c.request(req.method, t.prefix + req.path, req.body, headers)
            resp = c.getresponse()
            body = resp.read()
        except Exception:
            self._accept_conn = None
            c.close()
            raise
        if resp.will_close:
            self._accept_conn = None
            c.close()
        if resp.status >= 300:
            raise _ops.error_from(resp.status, body)
        from_json = LeasedJob.from_json
        return [from_json(j) for j in _ops._loads(body)["jobs"]]

    def _handler_loop(self):
        while True:
            r = self._ready.get()
            if r is None:
                return
            self._execute(r)

    def _execute(self, r):
        with self._lock:
            run = not r.stopped
            r.started = True
        result, exc = None, None
        began = time.monotonic()
        if run:
            try:
                result = r.fn(r.job)
            except BaseException as e:  # a handler's exit, too, is its job's failure, not the worker's
                exc = e
                if not isinstance(e, (Permanent, Snooze, Cancel)):
                    self.log.warning("job %d (%s) failed: %s", r.job.id, r.job.type, e,
                                     exc_info=not isinstance(e, Exception))
            self._pace.ran(time.monotonic() - began)
        with self._lock:
            released = r.ended
            r.ended = True
            reason = r.reason
            self._held -= 1
            if self._held <= self._want:  # wake the accept loop only when it will accept
                self._freed.notify()
        if released:
            return  # the shutdown handed it back already
        if not run:
            if reason == "shutdown":
                self._queue_finish(r, {"as": "release"})
            else:
                self.log.info("job %d (%s) not run: %s", r.job.id, r.job.type, reason)
                self._settle(r)
            return
        if reason in ("canceled", "lease_lost") and exc is not None:
            self.log.info("job %d (%s) abandoned: %s", r.job.id, r.job.type, reason)
            self._settle(r)
            return
        try:
            item = ending(result, exc, reason == "shutdown")
        except Exception as e:
            item = {"as": "fail", "error": "the ending could not be made: %s" % (e,)}
        self._close_log(r)
        self._queue_finish(r, item)

    # ---- logs ----

    def _send_log(self, r, last):
        """Sends what r's log holds (all of it, and closes the log, when
        last); returns at once when another send of it is under way and
        not last."""
        jl = r.log
        if jl is None or not jl.send_lock.acquire(blocking=last):
            return
        try:
            got = jl.take(last)
            if got is None:
                return
            recs, dropped = got
            try:
                self.client.append_logs(r.job.id, r.job.token, recs, dropped=dropped)
            except Exception as e:
                if not last and retryable(e):
                    jl.give_back(recs, dropped)
                self.log.warning("job %d (%s): sending its log records failed: %s", r.job.id, r.job.type, e)
        finally:
            jl.send_lock.release()

    def _close_log(self, r):
        self._send_log(r, True)

    def _log_loop(self):
        while not self._hb_stopped():
            self._kick_logs.wait(LOG_FLUSH_INTERVAL)
            with self._lock:
                runs = [r for r in self._running.values() if r.log is not None and not r.ended]
            for r in runs:
                self._send_log(r, False)

    # ---- finishes ----

    def _queue_finish(self, r, item):
        item["id"] = r.job.id
        item["token"] = r.job.token
        with self._finish_cv:
            self._finishes.append((r, item, RETRY_FIRST))
            self._finish_cv.notify()

    def _finisher_loop(self):
        retries = []  # heap of (when, seq, run, item, backoff)
        seq = 0
        while True:
            with self._finish_cv:
                while True:
                    now = time.monotonic()
                    while retries and retries[0][0] <= now:
                        _, _, r, item, wait = heapq.heappop(retries)
                        self._finishes.append((r, item, wait))
                    if self._finishes:
                        break
                    if self._finisher_stop and not retries:
                        return
                    self._finish_cv.wait(min(retries[0][0] - now, 1.0) if retries else 1.0)
                batch = self._finishes[:MAX_FINISH_BATCH]
                del self._finishes[:MAX_FINISH_BATCH]
            try:
                body = finish_body([it for _, it, _ in batch])
                errs = self.client._do(_ops.Request("POST", m.ROUTES["finishBatch"][1], body,
                                                    _ops.make_finish_reader(len(batch))))
            except Exception as e:
                errs = [e] * len(batch)
            for (r, item, wait), err in zip(batch, errs):
                if err is None:
                    self._finished(r, item, None)
                    continue
                left = r.lease_until - time.time()
                if isinstance(err, m.CanceledError):
                    self.log.info("job %d (%s): finish refused: the job was cancelled or removed: %s", r.job.id, r.job.type, err)
                elif isinstance(err, m.WorkerConflictError):
                    self.log.warning("job %d (%s): finish refused: the lease was lost, so the job runs again (or already has): %s",
                                     r.job.id, r.job.type, err)
                elif not retryable(err):
                    self.log.error("job %d (%s): finish failed: %s", r.job.id, r.job.type, err)
                elif left <= 0:
                    self.log.error("job %d (%s): finish failed, and the lease has run out: giving up; the job runs again: %s",
                                   r.job.id, r.job.type, err)
                    err.given_up = True
                else:
                    d = min(wait, max(r.lease_len / 4, 0.005), left)
                    self.log.warning("job %d (%s): finish failed; trying again in %.2fs while the lease holds (%.1fs left): %s",
                                     r.job.id, r.job.type, d, left, err)
                    seq += 1
                    heapq.heappush(retries, (time.monotonic() + d, seq, r, item, min(2 * wait, RETRY_MAX)))
                    continue
                self._finished(r, item, err)

    def _finished(self, r, item, err):
        with self._lock:
            if err is None:
                key = {"complete": "completed", "fail": "failed", "snooze": "snoozed", "cancel": "cancelled",
                       "release": "released"}[item["as"]]
                self.stats[key] += 1
            elif getattr(err, "given_up", False):
                self.stats["given_up"] += 1
            else:
                self.stats["refused"] += 1
        self._settle(r)
        if self.on_finish is not None:
            try:
                self.on_finish(r.job, item["as"], err)
            except Exception:
                self.log.exception("on_finish raised")

    def _settle(self, r):
        with self._lock:
            if r.settled:
                return
            r.settled = True
            if self._running.get(r.job.id) is r:
                del self._running[r.job.id]
            self._unsettled -= 1
            self._settled.notify_all()

    # ---- heartbeats ----

    def _extended(self, r, server_until):
        if server_until is not None:
            with self._lock:
                r.lease_until = server_until.timestamp() + r.skew

    def _heartbeat_loop(self):
        backoff = 0.0
        retry_at = 0.0
        while not self._hb_stopped():
            now = time.time()
            nxt = 1.0
            due, lost = [], []
            with self._lock:
                for r in self._running.values():
                    if r.ended:
                        continue
                    left = r.lease_until - now
                    if left <= 0:
                        lost.append(r)
                    elif left < r.lease_len * 2 / 3:
                        due.append(r)
                    if left > 0:
                        nxt = min(nxt, max(r.lease_len / 4, 0.005), left)
            for r in lost:
                if not r.stopped:
                    self.log.error("job %d (%s): lease lost: it ran out before a heartbeat extended it", r.job.id, r.job.type)
                    r.stop("lease_lost")
            if not due:
                backoff = 0.0
            elif time.monotonic() >= retry_at:
                if self._beat(due):
                    backoff = 0.0
                else:
                    backoff = min(max(2 * backoff, RETRY_FIRST), RETRY_MAX)
                    for r in due:
                        backoff = min(backoff, max(r.lease_len / 4, 0.005))
                    retry_at = time.monotonic() + backoff
            if backoff > 0:
                nxt = min(nxt, max(retry_at - time.monotonic(), 0.005))
            self._kick.wait(nxt)
            self._kick.clear()

    def _hb_stopped(self):
        return getattr(self, "_hb_stop", False)

    def _beat(self, rs):
        """Sends the heartbeats of rs in one request; reports whether they
        all got an answer that needs no retry."""
        try:
            res = self.client.heartbeat_many([{"id": r.job.id, "token": r.job.token} for r in rs])
        except Exception as e:
            self.log.warning("heartbeat failed; trying again while the leases hold (%d jobs): %s", len(rs), e)
            return False
        ok = True
        for r, hr in zip(rs, res):
            err = hr.error
            if err is None:
                self._extended(r, hr.lease_until)
                if hr.resubmit:
                    r.job.resubmit_requested = True
            elif isinstance(err, m.CanceledError):
                r.stop("canceled")
            elif retryable(err):
                self.log.warning("job %d (%s): heartbeat failed; trying again while the lease holds: %s", r.job.id, r.job.type, err)
                ok = False
            else:
                r.stop("lease_lost")
        return ok

    # ---- the event stream: cancellations at once ----

    def _events_loop(self):
        def on_connect(c):
            self._events_conn = c
            if self._stop.is_set():
                _interrupt(c)

        try:
            for ev in self.client.subscribe(types=sorted(self.handlers), running=False, completed=False,
                                            _on_connect=on_connect, _stop=self._stop):
                if not hasattr(ev, "id") or (not ev.removed and ev.state == "running"):
                    continue
                with self._lock:
                    r = self._running.get(ev.id)
                    if r is None or ev.lease != lease_tag(r.job.token):
                        continue
                    if ev.removed or ev.state == "cancelled":
                        r.stop("canceled")
                    elif not r.ended:
                        r.stop("lease_lost")
        except Exception as e:
            if not self._stop.is_set():
                self.log.warning("the event stream ended: %s (cancellations are seen at the next heartbeat)", e)

    # ---- shutdown ----

    def _shutdown(self):
        # Jobs leased ahead that have not started go back now, without
        # using up an attempt, rather than start after the stop began.
        with self._lock:
            for r in self._running.values():
                if not r.started:
                    r.stop("shutdown")
        for _ in range(self.concurrency):
            self._ready.put(None)
        deadline = time.monotonic() + self.shutdown_timeout
        with self._lock:
            while self._unsettled > 0 and time.monotonic() < deadline:
                self._settled.wait(deadline - time.monotonic())
            if self._unsettled > 0:
                for r in self._running.values():
                    if not r.ended:
                        r.stop("shutdown")
                grace = time.monotonic() + self.shutdown_grace
                while self._unsettled > 0 and time.monotonic() < grace and any(not r.ended for r in self._running.values()):
                    self._settled.wait(min(grace - time.monotonic(), 0.05))
            stuck = [r for r in self._running.values() if not r.ended]
            for r in stuck:
                r.ended = True
        if stuck:
            self.log.warning("%d handlers still running after the shutdown grace period; handing their jobs back anyway", len(stuck))
            for r in stuck:
                self._queue_finish(r, {"as": "release"})
        # Finishes still being tried again end with their leases at the latest.
        with self._lock:
            while self._unsettled > 0:
                self._settled.wait(0.1)
        with self._finish_cv:
            self._finisher_stop = True
            self._finish_cv.notify()
        self._hb_stop = True
        self._kick.set()
        self._kick_logs.set()
        _interrupt(self._events_conn)
        if self._accept_conn is not None:
            self._accept_conn.close()


def _interrupt(c):
    """Breaks off a blocking read on connection c from another thread."""
    if c is None:
        return
    try:
        if c.sock is not None:
            c.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
