"""The blocking client: Client(url, token=None, ca=None)."""

import email.utils
import functools
import http.client
import os
import time

from . import _ops
from ._base import RotaError
from ._http import RotaConnectionError, Transport
from ._models import FinishedError, NotFoundError, TooManyRequestsError, UnavailableError
from ._sse import END, RECONNECT, Decoder, StreamReset, events_path, meaning, settled, wait_states

# Reads (GET) that find the server's store unavailable (503), or the
# token's requests at their bound (429), are tried again this many times,
# with back-off, as the Go client does. Other
# calls are not: the caller cannot know whether they took effect.
READ_RETRIES = 4
READ_RETRY_FIRST = 0.1
READ_RETRY_MAX = 2.0

# An event stream's connection is given up as dead after this long
# without a byte; the server sends a keep-alive comment every 15 s.
STREAM_IDLE = 45.0


def from_env(url, token, ca):
    """The server, token and CA as the rota command finds them."""
    if url is None:
        url = os.environ.get("ROTA_SERVER") or "http://127.0.0.1:7700"
    if token is None:
        token = os.environ.get("ROTA_TOKEN") or None
    if ca is None:
        ca = os.environ.get("ROTA_CA") or None
    return url, token, ca


def _call(op, name):
    def method(self, *args, **kwargs):
        return self._do(op(*args, **kwargs))

    functools.update_wrapper(method, op)
    method.__name__ = method.__qualname__ = name
    return method


class Client:
    """A client of a rota server: Client("http://127.0.0.1:7700").

    Like the rota command, url defaults to $ROTA_SERVER, else
    http://127.0.0.1:7700, token to $ROTA_TOKEN and ca to $ROTA_CA.

    token is the bearer token (the server's --auth-token or a named token
    of `rota token create`); ca trusts a private certificate authority for
    https:// (a PEM file's path, PEM text, or an ssl.SSLContext). Every
    call raises a RotaError subclass named after the API's error code
    (NotFoundError, WorkerConflictError, ...) or RotaConnectionError. It is
    safe to use from several threads."""

    def __init__(self, url=None, token=None, ca=None, timeout=60.0):
        url, token, ca = from_env(url, token, ca)
        self.url = url.rstrip("/")
        self.token = token
        self.ca = ca
        self.timeout = timeout
        self._t = Transport(url, token=token, ca=ca, timeout=timeout)

    def close(self):
        """Closes the client's idle connections."""
        self._t.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Client(%r)" % (self.url,)

    def _do(self, req):
        wait = READ_RETRY_FIRST
        for attempt in range(READ_RETRIES + 1):
            status, headers, body = self._t.request(req.method, req.path, req.body, req.wait)
            if status < 300:
                return req.read(status, body)
            retry_after = None
            if status in (429, 503):
                try:
                    retry_after = float(headers.get("Retry-After") or "")
                except ValueError:
                    pass
            err = _ops.error_from(status, body, retry_after)
            if req.method != "GET" or status not in (429, 503) or attempt == READ_RETRIES:
                raise err
            time.sleep(min(retry_after, READ_RETRY_MAX) if retry_after else wait)
            wait = min(wait * 2, READ_RETRY_MAX)
        raise AssertionError("unreachable")

    # ---- producer side ----
    add = _call(_ops.add, "add")
    add_many = _call(_ops.add_many, "add_many")
    get = _call(_ops.get, "get")
    history = _call(_ops.history, "history")
    get_by_key = _call(_ops.get_by_key, "get_by_key")
    deps = _call(_ops.deps, "deps")
    get_many = _call(_ops.get_many, "get_many")
    list = _call(_ops.list_jobs, "list")
    update = _call(_ops.update, "update")
    cancel = _call(_ops.cancel, "cancel")
    resubmit = _call(_ops.resubmit, "resubmit")
    remove = _call(_ops.remove, "remove")
    stats = _call(_ops.stats, "stats")
    types = _call(_ops.types, "types")
    set_type = _call(_ops.set_type, "set_type")
    groups = _call(_ops.groups, "groups")
    set_group = _call(_ops.set_group, "set_group")
    tokens = _call(_ops.tokens, "tokens")
    create_token = _call(_ops.create_token, "create_token")
    revoke_token = _call(_ops.revoke_token, "revoke_token")
    health = _call(_ops.health, "health")
    openapi = _call(_ops.openapi, "openapi")
    metrics = _call(_ops.metrics, "metrics")
    logs = _call(_ops.logs, "logs")

    # ---- batches ----
    add_batch = _call(_ops.add_batch, "add_batch")
    add_batch_jobs = _call(_ops.add_batch_jobs, "add_batch_jobs")
    get_batch = _call(_ops.get_batch, "get_batch")
    list_batches = _call(_ops.list_batches, "list_batches")
    close_batch = _call(_ops.close_batch, "close_batch")

    # ---- worker side ----
    accept = _call(_ops.accept, "accept")
    heartbeat = _call(_ops.heartbeat, "heartbeat")
    heartbeat_many = _call(_ops.heartbeat_many, "heartbeat_many")
    finish = _call(_ops.finish, "finish")
    fail = _call(_ops.fail, "fail")
    snooze = _call(_ops.snooze, "snooze")
    release = _call(_ops.release, "release")
    finish_many = _call(_ops.finish_many, "finish_many")
    append_logs = _call(_ops.append_logs, "append_logs")

    def iter_jobs(self, **filters):
        """Every job list(**filters) finds, page after page."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.jobs
            cursor = page.next_cursor
            if not cursor:
                return

    # ---- the event stream ----

    def subscribe(self, job=None, types=None, running=True, completed=True, last_event_id=None, reconnect=True,
                  _deadline=None, _on_connect=None, _stop=None):
        """Follows the server's event stream (GET /v1/events): an iterator
        of Event (each with .event_id, the SSE id), for one job (ending
        after its terminal state or removal) or for the jobs of types
        (GLOB patterns; all types when neither is given; it goes on until
        the iterator is closed). running=False leaves out jobs starting to
        run and their progress, completed=False jobs completing.

        A dropped connection is opened again with Last-Event-ID, and the
        server replays what changed meanwhile (a change may come twice,
        never be missed); when it cannot, a StreamReset is yielded and the
        stream goes on. Errors the server answers with are raised."""
        path = events_path(job, types, running, completed)
        last = last_event_id
        backoff = 0.1
        while True:
            c = None
            try:
                idle = STREAM_IDLE
                if _deadline is not None:
                    idle = min(idle, max(_deadline - time.monotonic(), 0.001))
                c = self._t.connect(idle)
                if _on_connect is not None:
                    _on_connect(c)
                headers = dict(self._t.headers, Accept="text/event-stream")
                if last:
                    headers["Last-Event-ID"] = last
                c.request("GET", self._t.prefix + path, None, headers)
                resp = c.getresponse()
                if resp.status != 200:
                    raise _ops.error_from(resp.status, resp.read())
                if last is None and job is None:
                    # Before the first event, a reconnection resumes from
                    # when this connection began by the server's clock (event
                    # ids are its change times), a second early.
                    try:
                        d = email.utils.parsedate_to_datetime(resp.headers.get("Date"))
                        last = str(int((d.timestamp() - 1) * 1000000))
                    except Exception:
                        pass
                dec = Decoder()
                while True:
                    raw = resp.readline()
                    if not raw:
                        break  # the connection ended: open it again
                    msg = dec.feed(raw.decode("utf-8").rstrip("\r\n"))
                    if msg is None:
                        continue
                    event, eid, data = msg
                    if eid:
                        last = eid
                    what = meaning(event, eid, data)
                    if what is END:
                        return
                    if what is RECONNECT:
                        break
                    if what is not None:
                        if not isinstance(what, StreamReset):
                            backoff = 0.1
                        yield what
            except RotaError as e:
                if isinstance(e, (RotaConnectionError, UnavailableError, TooManyRequestsError)):
                    if not reconnect:
                        raise
                else:
                    raise
            except (OSError, http.client.HTTPException) as e:
                if _deadline is not None and time.monotonic() >= _deadline:
                    raise TimeoutError("the job has not ended in time") from None
                if not reconnect:
                    raise RotaConnectionError("event stream: %s" % (e,)) from e
            finally:
                if c is not None:
                    c.close()
            if _deadline is not None and time.monotonic() >= _deadline:
                raise TimeoutError("the job has not ended in time")
            if _stop is not None:
                if _stop.wait(backoff):
                    return
            else:
                time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def wait(self, id, timeout=None, states=None):
        """Blocks until job id is in one of states (by default: once it has
        ended, completed, failed or cancelled: look at .state) and returns
        it, as couch_jobs' wait does. Raises TimeoutError after timeout
        seconds, NotFoundError if there is no such job or it is removed,
        FinishedError if it ends in a state not asked for."""
        want = wait_states(states)
        deadline = None if timeout is None else time.monotonic() + timeout
        for ev in self.subscribe(job=id, _deadline=deadline):
            if ev.removed:
                raise NotFoundError("job %d was removed" % id, 404)
            if settled(id, ev.state, want, FinishedError):
                break
        return self.get(id)
