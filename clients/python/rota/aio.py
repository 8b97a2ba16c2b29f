"""The asyncio forms: AsyncClient (the same calls as Client, as
coroutines) and AsyncWorker (async handlers).

They speak HTTP/1.1 themselves over asyncio streams rather than run the
blocking client in a thread pool: a worker's long poll and event stream
then hold no thread, and cancelling a call (stop, a timeout, a cancelled
task) closes its connection at once instead of leaving a thread blocked
in a read until the server answers. The requests they send are the
blocking client's (rota/_ops.py), so the two forms cannot differ."""

import asyncio
import email.utils
import functools
import logging
import os
import signal
import socket
import time

from . import _models as m
from . import _ops
from ._base import RotaError
from ._http import RotaConnectionError, base_headers, parse_url, ssl_context
from ._runtime import (LOG_FLUSH_INTERVAL, MAX_DEFAULT_PREFETCH, MAX_FINISH_BATCH, RETRY_FIRST, RETRY_MAX, Cancel, JobLog,
                       Pace, Permanent, Snooze,
                       ending, finish_body, lease_tag, retryable)
from ._sse import END, RECONNECT, Decoder, StreamReset, events_path, meaning, settled, wait_states
from .client import READ_RETRIES, from_env, READ_RETRY_FIRST, READ_RETRY_MAX, STREAM_IDLE

__all__ = ["AsyncClient", "AsyncWorker", "AsyncLeasedJob"]

_log = logging.getLogger("rota.worker")


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer

    def close(self):
        try:
            self.writer.close()
        except Exception:
            pass


class _Response:
    __slots__ = ("status", "headers", "conn", "chunked", "length", "keep_alive")


class _AsyncTransport:
    def __init__(self, url, token=None, ca=None, timeout=60.0, max_idle=16):
        self.scheme, self.host, self.port, self.prefix = parse_url(url)
        self.url = url
        self.timeout = timeout
        self.headers = base_headers(token)
        self.ssl = ssl_context(ca) if self.scheme == "https" else None
        self.max_idle = max_idle
        self._idle = []
        self._closed = False
        hostport = self.host if self.port in (80, 443) else "%s:%d" % (self.host, self.port)
        if ":" in self.host:
            hostport = "[%s]:%d" % (self.host, self.port)
        self.host_header = hostport

    async def connect(self):
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.ssl, server_hostname=self.host if self.ssl else None, limit=1 << 20)
        except (OSError, asyncio.TimeoutError) as e:
            raise RotaConnectionError("cannot reach the rota server at %s: %s" % (self.url, e)) from e
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        return _Conn(reader, writer)

    def _head(self, method, path, body, extra):
        lines = ["%s %s%s HTTP/1.1" % (method, self.prefix, path), "Host: " + self.host_header]
        h = dict(self.headers)
        if extra:
            h.update(extra)
        if body is not None:
            h["Content-Type"] = "application/json"
            h["Content-Length"] = str(len(body))
        elif method in ("POST", "PUT", "PATCH"):
            h["Content-Length"] = "0"
        lines += ["%s: %s" % kv for kv in h.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def start(self, conn, method, path, body=None, extra=None):
        """Sends a request on conn and reads its status and headers."""
        w = conn.writer
        w.write(self._head(method, path, body, extra) + (body or b""))
        await w.drain()
        r = conn.reader
        line = await r.readline()
        if not line:
            raise ConnectionResetError("the server closed the connection")
        parts = line.decode("latin-1").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise RotaConnectionError("not an HTTP answer: %r" % (line[:100],))
        resp = _Response()
        resp.status = int(parts[1])
        resp.conn = conn
        headers = {}
        while True:
            line = await r.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        resp.headers = headers
        resp.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        resp.length = int(headers["content-length"]) if "content-length" in headers else None
        resp.keep_alive = headers.get("connection", "").lower() != "close" and parts[0] == "HTTP/1.1"
        if resp.status in (204, 304) or resp.status < 200 or method == "HEAD":
            resp.chunked, resp.length = False, 0  # no body, whatever the headers say
        elif resp.length is None and not resp.chunked:
            resp.keep_alive = False
        return resp

    async def chunks(self, resp):
        """The body's pieces as they come."""
        r = resp.conn.reader
        if resp.chunked:
            while True:
                size = int((await r.readline()).split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await r.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                yield await r.readexactly(size)
                await r.readline()
        elif resp.length is not None:
            if resp.length:
                yield await r.readexactly(resp.length)
        else:
            while True:
                b = await r.read(65536)
                if not b:
                    return
                yield b

    async def _roundtrip(self, conn, method, path, body):
        resp = await self.start(conn, method, path, body)
        data = b"".join([c async for c in self.chunks(resp)])
        return resp, data

    async def request(self, method, path, body=None, extra_wait=0.0):
        timeout = self.timeout + extra_wait
        for attempt in (0, 1):
            if self._closed:
                raise RotaError("the client is closed")
            reused = bool(self._idle)
            conn = self._idle.pop() if reused else await self.connect()
            try:
                resp, data = await asyncio.wait_for(self._roundtrip(conn, method, path, body), timeout)
            except (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError) as e:
                conn.close()
                if reused and attempt == 0:
                    continue
                raise RotaConnectionError("%s %s: the connection broke: %s" % (method, path, e)) from e
            except asyncio.TimeoutError as e:
                conn.close()
                raise RotaConnectionError("%s %s: no answer in %.0fs" % (method, path, timeout)) from e
            except OSError as e:
                conn.close()
                raise RotaConnectionError("%s %s: %s" % (method, path, e)) from e
            except BaseException:  # cancelled: the answer is not read, so the connection cannot be reused
                conn.close()
                raise
            if resp.keep_alive and len(self._idle) < self.max_idle and not self._closed:
                self._idle.append(conn)
            else:
                conn.close()
            return resp.status, resp.headers, data
        raise AssertionError("unreachable")

    def close(self):
        self._closed = True
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()


def _acall(op, name):
    async def method(self, *args, **kwargs):
        return await self._do(op(*args, **kwargs))

    functools.update_wrapper(method, op)
    method.__name__ = method.__qualname__ = name
    return method


class AsyncClient:
    """Client's calls as coroutines: await client.add(...). Use it from one
    event loop."""

    def __init__(self, url=None, token=None, ca=None, timeout=60.0):
        url, token, ca = from_env(url, token, ca)
        self.url = url.rstrip("/")
        self.token = token
        self.ca = ca
        self.timeout = timeout
        self._t = _AsyncTransport(url, token=token, ca=ca, timeout=timeout)

    async def close(self):
        self._t.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def __repr__(self):
        return "AsyncClient(%r)" % (self.url,)

    async def _do(self, req):
        wait = READ_RETRY_FIRST
        for attempt in range(READ_RETRIES + 1):
            status, headers, body = await self._t.request(req.method, req.path, req.body, req.wait)
            if status < 300:
                return req.read(status, body)
            retry_after = None
            if status in (429, 503):
                try:
                    retry_after = float(headers.get("retry-after") or "")
                except ValueError:
                    pass
            err = _ops.error_from(status, body, retry_after)
            if req.method != "GET" or status not in (429, 503) or attempt == READ_RETRIES:
                raise err
            await asyncio.sleep(min(retry_after, READ_RETRY_MAX) if retry_after else wait)
            wait = min(wait * 2, READ_RETRY_MAX)
        raise AssertionError("unreachable")

    add = _acall(_ops.add, "add")
    add_many = _acall(_ops.add_many, "add_many")
    get = _acall(_ops.get, "get")
    history = _acall(_ops.history, "history")
    get_by_key = _acall(_ops.get_by_key, "get_by_key")
    deps = _acall(_ops.deps, "deps")
    get_many = _acall(_ops.get_many, "get_many")
    list = _acall(_ops.list_jobs, "list")
    update = _acall(_ops.update, "update")
    cancel = _acall(_ops.cancel, "cancel")
    resubmit = _acall(_ops.resubmit, "resubmit")
    remove = _acall(_ops.remove, "remove")
    stats = _acall(_ops.stats, "stats")
    types = _acall(_ops.types, "types")
    set_type = _acall(_ops.set_type, "set_type")
    groups = _acall(_ops.groups, "groups")
    set_group = _acall(_ops.set_group, "set_group")
    tokens = _acall(_ops.tokens, "tokens")
    create_token = _acall(_ops.create_token, "create_token")
    revoke_token = _acall(_ops.revoke_token, "revoke_token")
    health = _acall(_ops.health, "health")
    openapi = _acall(_ops.openapi, "openapi")
    metrics = _acall(_ops.metrics, "metrics")
    logs = _acall(_ops.logs, "logs")
    add_batch = _acall(_ops.add_batch, "add_batch")
    add_batch_jobs = _acall(_ops.add_batch_jobs, "add_batch_jobs")
    get_batch = _acall(_ops.get_batch, "get_batch")
    list_batches = _acall(_ops.list_batches, "list_batches")
    close_batch = _acall(_ops.close_batch, "close_batch")
    accept = _acall(_ops.accept, "accept")
    heartbeat = _acall(_ops.heartbeat, "heartbeat")
    heartbeat_many = _acall(_ops.heartbeat_many, "heartbeat_many")
    finish = _acall(_ops.finish, "finish")
    fail = _acall(_ops.fail, "fail")
    snooze = _acall(_ops.snooze, "snooze")
    release = _acall(_ops.release, "release")
    finish_many = _acall(_ops.finish_many, "finish_many")
    append_logs = _acall(_ops.append_logs, "append_logs")

    async def iter_jobs(self, **filters):
        """Every job list(**filters) finds, page after page."""
        cursor = filters.pop("cursor", None)
        while True:
            page = await self.list(cursor=cursor, **filters)
            for j in page.jobs:
                yield j
            cursor = page.next_cursor
            if not cursor:
                return

    async def subscribe(self, job=None, types=None, running=True, completed=True, last_event_id=None, reconnect=True):
        """Client.subscribe as an async iterator: async for ev in
        client.subscribe(job=id). Resumed with Last-Event-ID after a dropped
        connection; errors the server answers with are raised."""
        path = events_path(job, types, running, completed)
        last = last_event_id
        backoff = 0.1
        t = self._t
        while True:
            conn = None
            try:
                conn = await t.connect()
                extra = {"Accept": "text/event-stream"}
                if last:
                    extra["Last-Event-ID"] = last
                resp = await asyncio.wait_for(t.start(conn, "GET", path, None, extra), t.timeout)
                if resp.status != 200:
                    body = b"".join([c async for c in t.chunks(resp)])
                    raise _ops.error_from(resp.status, body)
                if last is None and job is None:
                    try:
                        d = email.utils.parsedate_to_datetime(resp.headers.get("date"))
                        last = str(int((d.timestamp() - 1) * 1000000))
                    except Exception:
                        pass
                dec = Decoder()
                buf = b""
                pieces = t.chunks(resp)
                done = False
                while not done:
                    try:
                        piece = await asyncio.wait_for(pieces.__anext__(), STREAM_IDLE)
                    except StopAsyncIteration:
                        break
                    buf += piece
                    *lines, buf = buf.split(b"\n")
                    for raw in lines:
                        msg = dec.feed(raw.decode("utf-8").rstrip("\r"))
                        if msg is None:
                            continue
                        event, eid, data = msg
                        if eid:
                            last = eid
                        what = meaning(event, eid, data)
                        if what is END:
                            return
                        if what is RECONNECT:
                            done = True
                            break
                        if what is not None:
                            if not isinstance(what, StreamReset):
                                backoff = 0.1
                            yield what
            except RotaError as e:
                if not isinstance(e, (RotaConnectionError, m.UnavailableError, m.TooManyRequestsError)) or not reconnect:
                    raise
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                if not reconnect:
                    raise RotaConnectionError("event stream: %s" % (e,)) from e
            finally:
                if conn is not None:
                    conn.close()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    async def wait(self, id, timeout=None, states=None):
        """Waits until job id is in one of states (by default: once it has
        ended) and returns it; raises asyncio.TimeoutError after timeout
        seconds, NotFoundError if there is no such job or it is removed,
        FinishedError if it ends in a state not asked for."""
        want = wait_states(states)

        async def follow():
            async for ev in self.subscribe(job=id):
                if ev.removed:
                    raise m.NotFoundError("job %d was removed" % id, 404)
                if settled(id, ev.state, want, m.FinishedError):
                    return

        await asyncio.wait_for(follow(), timeout)
        return await self.get(id)


class AsyncLeasedJob(m.Job):
    """A job as its async handler sees it: stopping is an asyncio.Event
    set when the handler should stop (stop_reason: "canceled",
    "lease_lost" or "shutdown"); the handler's task is also cancelled
    then, as the Go worker cancels a handler's context."""

    async def set_progress(self, percent, data=None):
        """Reports progress (0..100) and optionally new data; it also
        extends the lease."""
        r = self._run
        hr = await r.worker.client.heartbeat(self.id, self.token, data=data, progress=percent)
        r.extended(hr.lease_until)
        if hr.resubmit:
            self.resubmit_requested = True
        return hr

    @property
    def log(self):
        """The job's logger, as Worker's job.log: its records are kept with
        the job's attempt (at most 64 KiB; the rest are counted and
        dropped) and reach the worker's logger too."""
        return self._run.joblog().logger

    @property
    def stopping(self):
        return self._run.event()

    @property
    def stop_reason(self):
        return self._run.reason

    resubmit_requested = False


class _ARun:
    __slots__ = ("worker", "job", "fn", "skew", "lease_until", "lease_len", "started", "ended", "stopped", "_event", "reason",
                 "task", "settled", "log", "log_lock")

    def __init__(self, worker, job, fn, took):
        self.worker = worker
        self.job = job
        self.fn = fn
        self.skew = 0.0
        started = job.started_at.timestamp() if job.started_at else None
        until = job.lease_until.timestamp() if job.lease_until else took + 30
        if started is not None and started < until:
            self.skew = took - started
        self.lease_until = until + self.skew
        self.lease_len = max(self.lease_until - took, 0.01)
        self.started = False
        self.ended = False
        self.stopped = False
        self._event = None  # made when a handler asks for it
        self.reason = None
        self.task = None
        self.settled = False
        self.log = None  # the run's JobLog, made when the handler first logs
        self.log_lock = None  # one send of the run's log at a time, in order

    def joblog(self):
        if self.log is None:
            w = self.worker
            self.log = JobLog(self.job, w.log, w.job_log_level)
        return self.log

    def event(self):
        if self._event is None:
            self._event = asyncio.Event()
            if self.stopped:
                self._event.set()
        return self._event

    def extended(self, server_until):
        if server_until is not None:
            self.lease_until = server_until.timestamp() + self.skew

    def stop(self, reason, cancel=True):
        if self.reason is None:
            self.reason = reason
        self.stopped = True
        if self._event is not None:
            self._event.set()
        # A coroutine handler is cancelled; a plain one, in a thread, cannot
        # be, and is waited for as the blocking worker waits.
        if cancel and self.task is not None and self.started and not self.ended and asyncio.iscoroutinefunction(self.fn):
            self.task.cancel()


class AsyncWorker:
    """Worker for asyncio: handlers are coroutine functions (plain functions
    run in the loop's default executor).

        worker = rota.AsyncWorker(client, concurrency=50)

        @worker.handle("email.send")
        async def send(job):
            return {"sent": True}

        await worker.run()   # until SIGTERM, SIGINT or worker.stop()

    It behaves as Worker does (leasing ahead, batched heartbeats and
    finishes, finishes tried again while the lease holds, the event stream,
    graceful stop), and cancels a handler's task when its job is cancelled,
    its lease is lost, or the shutdown timeout passes: the job of a handler
    cancelled by the shutdown is handed back without using up an attempt."""

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
        self.stats = {"completed": 0, "failed": 0, "snoozed": 0, "cancelled": 0, "released": 0, "refused": 0,
                      "given_up": 0}
        self._pace = Pace()
        self._running = {}
        self._held = 0
        self._want = 0
        self._unsettled = 0
        self._started = False
        self._stop = None
        self._changed = None
        self._finishes = []
        self._finish_wake = None
        self._kick = None

    def handle(self, type):
        """Registers the decorated coroutine function (or function) for jobs
        of type; it gets the job (an AsyncLeasedJob) and returns the result."""
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

    def stop(self):
        """Begins a graceful stop; run() returns once it is done. Call it
        from the worker's event loop (signal handlers run there)."""
        if self._stop is not None:
            self._stop.set()
            self._changed.set()

    async def run(self, signals=True):
        """Accepts and runs jobs until stop(), or SIGTERM or SIGINT when
        signals is true (on the main thread's loop)."""
        if not self.handlers:
            raise RuntimeError("the worker has no handlers")
        if self._started:
            raise RuntimeError("the worker already ran")
        self._started = True
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._changed = asyncio.Event()
        self._finish_wake = asyncio.Event()
        self._kick = asyncio.Event()
        self._slots = asyncio.Semaphore(self.concurrency)
        installed = []
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self.stop)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        finisher = asyncio.ensure_future(self._finisher())
        beats = asyncio.ensure_future(self._heartbeats())
        logs = asyncio.ensure_future(self._logs())
        events = asyncio.ensure_future(self._events()) if self.watch else None
        try:
            await self._accept_loop()
        finally:
            await self._shutdown()
            self._finishes_done = True
            self._finish_wake.set()
            await finisher
            beats.cancel()
            logs.cancel()
            if events is not None:
                events.cancel()
            for t in (beats, logs, events):
                if t is not None:
                    try:
                        await t
                    except (asyncio.CancelledError, Exception):
                        pass
            for sig in installed:
                loop.remove_signal_handler(sig)

    async def _wait_changed(self, timeout):
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        self._changed.clear()

    async def _accept_loop(self):
        types = sorted(self.handlers)
        backlog = False
        stop_wait = asyncio.ensure_future(self._stop.wait())
        try:
            while not self._stop.is_set():
                ahead = self._pace.ahead(self.concurrency, self.prefetch)
                limit = self.concurrency + ahead
                self._want = limit - max(1, ahead // 2)
                if self._held > self._want:
                    await self._wait_changed(1.0)
                    continue
                n = limit - self._held
                wait = 0 if backlog else self.poll_wait
                sent = time.monotonic()
                req = _ops.accept(types, limit=n, wait=wait, worker=self.name, lease_timeout=self.lease_timeout)
                req.read = lambda s, b: [AsyncLeasedJob.from_json(j) for j in _ops._loads(b)["jobs"]]
                call = asyncio.ensure_future(self.client._do(req))
                await asyncio.wait([call, stop_wait], return_when=asyncio.FIRST_COMPLETED)
                if not call.done():
                    call.cancel()  # closes its connection: the server gives back what it had not answered
                    try:
                        await call
                    except (asyncio.CancelledError, Exception):
                        pass
                    break
                try:
                    jobs = call.result()
                except Exception as e:
                    self.log.error("accept failed: %s", e)
                    try:
                        await asyncio.wait_for(self._stop.wait(), 1.0)
                    except asyncio.TimeoutError:
                        pass
                    continue
                took = time.time()
                if wait == 0 and jobs:
                    self._pace.accepted(time.monotonic() - sent)
                backlog = len(jobs) == n
                for j in jobs:
                    r = _ARun(self, j, self.handlers[j.type], took)
                    j._run = r
                    old = self._running.get(j.id)
                    if old is not None:
                        old.stop("lease_lost")
                    self._running[j.id] = r
                    self._held += 1
                    self._unsettled += 1
                    r.task = asyncio.ensure_future(self._execute(r))
                if jobs:
                    self._kick.set()
        finally:
            stop_wait.cancel()

    async def _execute(self, r):
        async with self._slots:
            run = not r.stopped
            r.started = True
            result, exc = None, None
            began = time.monotonic()
            if run:
                try:
                    if asyncio.iscoroutinefunction(r.fn):
                        result = await r.fn(r.job)
                    else:
                        result = await asyncio.get_running_loop().run_in_executor(None, r.fn, r.job)
                except asyncio.CancelledError as e:
                    exc = e
                except Exception as e:
                    exc = e
                    if not isinstance(e, (Permanent, Snooze, Cancel)):
                        self.log.warning("job %d (%s) failed: %s", r.job.id, r.job.type, e)
                self._pace.ran(time.monotonic() - began)
            released = r.ended
            r.ended = True
            self._held -= 1
            if self._held <= self._want:  # wake the accept loop only when it will accept
                self._changed.set()
        if released:
            return
        reason = r.reason
        if not run:
            if reason == "shutdown":
                self._queue_finish(r, {"as": "release"})
            else:
                self._settle(r)
            return
        if reason in ("canceled", "lease_lost") and exc is not None:
            self.log.info("job %d (%s) abandoned: %s", r.job.id, r.job.type, reason)
            self._settle(r)
            return
        if isinstance(exc, asyncio.CancelledError) and reason != "shutdown":
            exc = RuntimeError("the handler was cancelled")
        try:
            item = ending(result, exc, reason == "shutdown")
        except Exception as e:
            item = {"as": "fail", "error": "the ending could not be made: %s" % (e,)}
        await self._send_log(r, True)
        self._queue_finish(r, item)

    # ---- logs ----

    async def _send_log(self, r, last):
        """Sends what r's log holds (all of it, and closes the log, when
        last); returns at once when another send of it is under way and
        not last."""
        jl = r.log
        if jl is None:
            return
        if r.log_lock is None:
            r.log_lock = asyncio.Lock()
        if not last and r.log_lock.locked():
            return
        async with r.log_lock:
            got = jl.take(last)
            if got is None:
                return
            recs, dropped = got
            try:
                await self.client.append_logs(r.job.id, r.job.token, recs, dropped=dropped)
            except Exception as e:
                if not last and retryable(e):
                    jl.give_back(recs, dropped)
                self.log.warning("job %d (%s): sending its log records failed: %s", r.job.id, r.job.type, e)

    async def _logs(self):
        while True:
            await asyncio.sleep(LOG_FLUSH_INTERVAL)
            for r in [r for r in self._running.values() if r.log is not None and not r.ended]:
                await self._send_log(r, False)

    def _queue_finish(self, r, item):
        item["id"] = r.job.id
        item["token"] = r.job.token
        self._finishes.append((r, item, RETRY_FIRST))
        self._finish_wake.set()

    async def _finisher(self):
        self._finishes_done = False
        loop = asyncio.get_running_loop()
        while True:
            while not self._finishes:
                if self._finishes_done and self._unsettled == 0:
                    return
                self._finish_wake.clear()
                try:
                    await asyncio.wait_for(self._finish_wake.wait(), 1.0)
                except asyncio.TimeoutError:
                    pass
            batch = self._finishes[:MAX_FINISH_BATCH]
            del self._finishes[:MAX_FINISH_BATCH]
            try:
                req = _ops.Request("POST", m.ROUTES["finishBatch"][1], finish_body([it for _, it, _ in batch]),
                                   _ops.make_finish_reader(len(batch)))
                errs = await self.client._do(req)
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
                    self.log.warning("job %d (%s): finish failed; trying again in %.2fs while the lease holds: %s",
                                     r.job.id, r.job.type, d, err)
                    nxt = (r, item, min(2 * wait, RETRY_MAX))

                    def again(x=nxt):
                        self._finishes.append(x)
                        self._finish_wake.set()

                    loop.call_later(d, again)
                    continue
                self._finished(r, item, err)

    def _finished(self, r, item, err):
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
        if r.settled:
            return
        r.settled = True
        if self._running.get(r.job.id) is r:
            del self._running[r.job.id]
        self._unsettled -= 1
        if self._stop.is_set():  # the shutdown waits for this
            self._changed.set()
        self._finish_wake.set()

    async def _heartbeats(self):
        backoff, retry_at = 0.0, 0.0
        while True:
            now = time.time()
            nxt = 1.0
            due = []
            for r in list(self._running.values()):
                if r.ended:
                    continue
                left = r.lease_until - now
                if left <= 0:
                    if not r.stopped:
                        self.log.error("job %d (%s): lease lost: it ran out before a heartbeat extended it", r.job.id, r.job.type)
                        r.stop("lease_lost")
                    continue
                if left < r.lease_len * 2 / 3:
                    due.append(r)
                nxt = min(nxt, max(r.lease_len / 4, 0.005), left)
            if not due:
                backoff = 0.0
            elif time.monotonic() >= retry_at:
                if await self._beat(due):
                    backoff = 0.0
                else:
                    backoff = min(max(2 * backoff, RETRY_FIRST), RETRY_MAX)
                    for r in due:
                        backoff = min(backoff, max(r.lease_len / 4, 0.005))
                    retry_at = time.monotonic() + backoff
            if backoff > 0:
                nxt = min(nxt, max(retry_at - time.monotonic(), 0.005))
            try:
                await asyncio.wait_for(self._kick.wait(), nxt)
            except asyncio.TimeoutError:
                pass
            self._kick.clear()

    async def _beat(self, rs):
        try:
            res = await self.client.heartbeat_many([{"id": r.job.id, "token": r.job.token} for r in rs])
        except Exception as e:
            self.log.warning("heartbeat failed; trying again while the leases hold (%d jobs): %s", len(rs), e)
            return False
        ok = True
        for r, hr in zip(rs, res):
            err = hr.error
            if err is None:
                r.extended(hr.lease_until)
                if hr.resubmit:
                    r.job.resubmit_requested = True
            elif isinstance(err, m.CanceledError):
                r.stop("canceled")
            elif retryable(err):
                ok = False
            else:
                r.stop("lease_lost")
        return ok

    async def _events(self):
        try:
            async for ev in self.client.subscribe(types=sorted(self.handlers), running=False, completed=False):
                if isinstance(ev, StreamReset) or (not ev.removed and ev.state == "running"):
                    continue
                r = self._running.get(ev.id)
                if r is None or ev.lease != lease_tag(r.job.token):
                    continue
                if ev.removed or ev.state == "cancelled":
                    r.stop("canceled")
                elif not r.ended:
                    r.stop("lease_lost")
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self.log.warning("the event stream ended: %s (cancellations are seen at the next heartbeat)", e)

    async def _shutdown(self):
        for r in list(self._running.values()):
            if not r.started:
                r.stop("shutdown", cancel=False)
        deadline = time.monotonic() + self.shutdown_timeout
        while self._unsettled > 0 and time.monotonic() < deadline:
            await self._wait_changed(min(deadline - time.monotonic(), 0.1))
        if self._unsettled > 0:
            for r in list(self._running.values()):
                if not r.ended:
                    r.stop("shutdown")
            grace = time.monotonic() + self.shutdown_grace
            while time.monotonic() < grace and any(not r.ended for r in self._running.values()):
                await self._wait_changed(min(grace - time.monotonic(), 0.05))
            stuck = [r for r in self._running.values() if not r.ended]
            if stuck:
                self.log.warning("%d handlers still running after the shutdown grace period; handing their jobs back anyway",
                                 len(stuck))
            for r in stuck:
                r.ended = True
                self._queue_finish(r, {"as": "release"})
        while self._unsettled > 0:
            await self._wait_changed(0.1)
