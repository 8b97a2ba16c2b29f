"""The API's calls without I/O: each function returns a Request saying what
to send and how to read the answer. Client (blocking) and AsyncClient
(asyncio) send the same Requests, so the two cannot differ."""

import json
from urllib.parse import quote, urlencode

from . import _models as m
from ._base import RotaError, format_duration, format_time, parse_duration

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.loads


class Request:
    """One HTTP request: method, path (with its query), JSON body bytes or
    None, and read(status, body) giving the call's value."""

    __slots__ = ("method", "path", "body", "read", "wait")

    def __init__(self, method, path, body=None, read=None, wait=0.0):
        self.method = method
        self.path = path
        self.body = body
        self.read = read or _ignore
        self.wait = wait  # how long the server may hold the request on purpose (long poll), in seconds


def _ignore(status, body):
    return None


def _route(op, query=None, **path):
    method, template, allowed = m.ROUTES[op]
    p = template
    for k, v in path.items():
        p = p.replace("{%s}" % k, quote(str(v), safe=""))
    if query:
        for k, _ in query:
            if k not in allowed:  # the document names every query parameter
                raise TypeError("%s takes no query parameter %r" % (op, k))
        p += "?" + urlencode(query)
    return method, p


def error_from(status, body, retry_after=None):
    """The exception for an error answer: the class of its code."""
    try:
        e = _loads(body)["error"]
        code, msg = e["code"], e["message"]
    except Exception:
        text = body[:500].decode("utf-8", "replace").strip() if isinstance(body, bytes) else str(body)
        err = RotaError("HTTP %d: %s" % (status, text or "no body"), status)
        return err
    cls = m.ERROR_CLASSES.get(code)
    if cls is None:
        err = RotaError(msg, status)
        err.code = code
    else:
        err = cls(msg, status)
    if retry_after is not None:
        err.retry_after = retry_after
    return err


def _item_error(e):
    """A batch item's error object as an exception (None for success)."""
    if not e:
        return None
    cls = m.ERROR_CLASSES.get(e.get("code"))
    if cls is None:
        err = RotaError(e.get("message", ""))
        err.code = e.get("code")
        return err
    return cls(e.get("message", ""))


def _check_id(id):
    if isinstance(id, bool) or not isinstance(id, int) or id <= 0:
        raise ValueError("job id %r is not a positive integer" % (id,))
    return id


def _body(model, fields, what):
    """Encodes keyword fields as the JSON body of model, refusing names the
    API does not know."""
    kinds = model._fields
    out = {}
    for k, v in fields.items():
        if v is None:
            continue
        kind = kinds.get(k)
        if kind is None:
            raise TypeError("%s takes no field %r (the API's %s has %s)" % (what, k, model.__name__, ", ".join(sorted(kinds))))
        if kind == "time":
            v = format_time(v)
        elif kind == "duration":
            v = format_duration(v)
        elif isinstance(v, m.Model):
            v = v.to_json()
        out[k] = v
    return out


def _job(status, body):
    return m.JobResponse.from_json(_loads(body)).job


def _added(r):
    job = r.job
    job.outcome = r.outcome
    return job


# ---- producer side ----


def add_item(type, data=None, options=None):
    fields = dict(options or {})
    if "type" in fields or "data" in fields:
        raise TypeError("type and data are given as arguments, not options")
    fields["type"] = type
    fields["data"] = data
    return _body(m.AddRequest, fields, "add")


def add(type, data=None, **options):
    method, path = _route("addJobs")
    body = _dumps(add_item(type, data, options)).encode()
    return Request(method, path, body, lambda s, b: _added(m.AddResponse.from_json(_loads(b))))


def _one_job(j):
    if isinstance(j, m.AddRequest):
        j = j.to_json()
    if not isinstance(j, dict):
        raise TypeError("add_many takes dicts such as {\"type\": \"email.send\", \"data\": {...}}, got %r" % (j,))
    j = dict(j)
    if "type" not in j:
        raise ValueError("a job to add has no type: %r" % (j,))
    return add_item(j.pop("type"), j.pop("data", None), j)


def add_many(jobs):
    items = [_one_job(j) for j in jobs]
    if not items:
        raise ValueError("add_many: no jobs given")
    method, path = _route("addJobs")
    body = _dumps({"jobs": items}).encode()

    def read(s, b):
        return [_added(r) for r in m.AddBatchResponse.from_json(_loads(b)).results]

    return Request(method, path, body, read)


def get(id):
    method, path = _route("getJob", id=_check_id(id))
    return Request(method, path, None, _job)


def deps(id, limit=None):
    """A job's dependencies with their outcomes (the jobs it was added after),
    and the ids of the jobs added after it: a DepsResponse."""
    q = [("limit", str(int(limit)))] if limit is not None else None
    method, path = _route("getJobDeps", q, id=_check_id(id))
    return Request(method, path, None, lambda s, b: m.DepsResponse.from_json(_loads(b)))


def history(id):
    """The job's history, oldest first: what its row tells (added, each
    attempt's start and error, its end) and the audit trail, every change
    made to it and to its type's and group's settings with the name of the
    token that made it (HistoryEntry: at, action, actor, audited, detail)."""
    method, path = _route("getJobHistory", id=_check_id(id))
    return Request(method, path, None, lambda s, b: list(m.HistoryResponse.from_json(_loads(b)).history))


# ---- batches ----


def _check_batch_id(id):
    if isinstance(id, bool) or not isinstance(id, int) or id <= 0:
        raise ValueError("batch id %r is not a positive integer" % (id,))
    return id


def _callback(what, c):
    """A callback given as a type name or as a dict like add_many's jobs."""
    if c is None:
        return None
    if isinstance(c, str):
        c = {"type": c}
    return _one_job(c)


def _batch(status, body):
    """The batch of a BatchResponse, with the jobs the request added (each
    with its outcome) as .jobs."""
    r = m.BatchResponse.from_json(_loads(body))
    b = r.batch
    b.jobs = [_added(x) for x in (r.results or [])]
    return b


def add_batch(jobs=(), on_complete=None, on_success=None, open=None, description=None):
    """A batch of jobs (dicts like add_many's) added in one transaction,
    with callbacks: on_complete is added once every job has ended,
    on_success once every job completed (each a type name or a dict with
    "type" and "data"); its data gets the batch under "batch"."""
    body = {"jobs": [_one_job(j) for j in jobs]}
    if not body["jobs"]:
        del body["jobs"]
    for k, v in (("on_complete", _callback("on_complete", on_complete)), ("on_success", _callback("on_success", on_success)),
                 ("open", open), ("description", description)):
        if v is not None:
            body[k] = v
    method, path = _route("addBatch")
    return Request(method, path, _dumps(body).encode(), _batch)


def add_batch_jobs(id, jobs):
    """Adds jobs to a batch that is not done; the batch, with .jobs."""
    items = [_one_job(j) for j in jobs]
    if not items:
        raise ValueError("add_batch_jobs: no jobs given")
    method, path = _route("addBatchJobs", id=_check_batch_id(id))
    return Request(method, path, _dumps({"jobs": items}).encode(), _batch)


def get_batch(id):
    method, path = _route("getBatch", id=_check_batch_id(id))
    return Request(method, path, None, _batch)


def list_batches(before=None, limit=None):
    query = [(k, str(v)) for k, v in (("before", before), ("limit", limit)) if v is not None]
    method, path = _route("listBatches", query)
    return Request(method, path, None, lambda s, b: m.BatchesResponse.from_json(_loads(b)).batches)


def close_batch(id):
    method, path = _route("closeBatch", id=_check_batch_id(id))
    return Request(method, path, None, _batch)


def get_by_key(type, key, group=""):
    """The job of type with key in group (a key is unique within a type and
    a group; "" is the default group)."""
    if not type or not key:
        raise ValueError("get_by_key needs a type and a key")
    q = [("type", type), ("key", key)]
    if group:
        q.append(("group", group))
    method, path = _route("listJobs", q)

    def read(s, b):
        jobs = m.ListResponse.from_json(_loads(b)).jobs
        if not jobs:
            raise m.NotFoundError("no job of type %r with key %r in group %r" % (type, key, group), 404)
        return jobs[0]

    return Request(method, path, None, read)


def get_many(ids):
    ids = [_check_id(i) for i in ids]
    method, path = _route("listJobs", [("id", ",".join(map(str, ids)))])

    def read(s, b):
        by_id = {j.id: j for j in m.ListResponse.from_json(_loads(b)).jobs}
        return [by_id.get(i) for i in ids]

    return Request(method, path, None, read)


def _many(name, v):
    if v is None:
        return []
    if isinstance(v, str):
        return [(name, v)]
    return [(name, x) for x in v]


def list_jobs(type=None, state=None, group=None, parent=None, recurring=None, updated_since=None, limit=None, cursor=None,
              order=None):
    q = []
    if type is not None:
        q.append(("type", type if isinstance(type, str) else ",".join(type)))
    q += _many("state", state)
    q += _many("group", group)  # group names may hold commas: one parameter each
    if parent is not None:
        q.append(("parent", str(_check_id(parent))))
    if recurring is not None:
        q.append(("recurring", "true" if recurring else "false"))
    if updated_since is not None:
        q.append(("updated_since", format_time(updated_since)))
    if limit is not None:
        q.append(("limit", str(limit)))
    if cursor:
        q.append(("cursor", str(cursor)))
    if order is not None:
        q.append(("order", order))
    method, path = _route("listJobs", q)
    return Request(method, path, None, lambda s, b: m.ListResponse.from_json(_loads(b)))


def update(id, **fields):
    method, path = _route("updateJob", id=_check_id(id))
    return Request(method, path, _dumps(_body(m.UpdateRequest, fields, "update")).encode(), _job)


def cancel(id):
    method, path = _route("cancelJob", id=_check_id(id))
    return Request(method, path, None, _job)


def resubmit(id, run_at=None, data=None):
    method, path = _route("resubmitJob", id=_check_id(id))
    body = _dumps(_body(m.ResubmitRequest, {"run_at": run_at, "data": data}, "resubmit")).encode()
    return Request(method, path, body, lambda s, b: _added(m.AddResponse.from_json(_loads(b))))


def remove(id):
    method, path = _route("removeJob", id=_check_id(id))
    return Request(method, path)


def stats():
    method, path = _route("stats")
    return Request(method, path, None, lambda s, b: m.StatsResponse.from_json(_loads(b)))


def types():
    method, path = _route("listTypes")
    return Request(method, path, None, lambda s, b: m.TypesResponse.from_json(_loads(b)).types)


def set_type(type, **config):
    method, path = _route("setType", type=type)
    body = _dumps(_body(m.TypeConfig, config, "set_type")).encode()
    return Request(method, path, body, lambda s, b: m.TypeConfig.from_json(_loads(b)))


def groups():
    method, path = _route("listGroups")
    return Request(method, path, None, lambda s, b: m.GroupsResponse.from_json(_loads(b)).groups)


def set_group(group, **config):
    config["group"] = group
    method, path = _route("setGroup")
    body = _dumps(_body(m.GroupConfig, config, "set_group")).encode()
    return Request(method, path, body, lambda s, b: m.GroupConfig.from_json(_loads(b)))


def tokens():
    method, path = _route("listTokens")
    return Request(method, path, None, lambda s, b: m.TokensResponse.from_json(_loads(b)).tokens)


def create_token(name, groups=None, types=None, read_only=None):
    method, path = _route("createToken")
    body = _dumps(_body(m.CreateTokenRequest, {"name": name, "groups": groups, "types": types, "read_only": read_only},
                        "create_token")).encode()
    return Request(method, path, body, lambda s, b: m.CreateTokenResponse.from_json(_loads(b)))


def revoke_token(name):
    method, path = _route("revokeToken", name=name)
    return Request(method, path)


def health():
    method, path = _route("healthz")
    return Request(method, path, None, lambda s, b: _loads(b))


def openapi():
    method, path = _route("openapi")
    return Request(method, path, None, lambda s, b: _loads(b))


def metrics():
    method, path = _route("metrics")
    return Request(method, path, None, lambda s, b: b.decode("utf-8"))


# ---- worker side ----


def accept(types, limit=None, wait=None, worker=None, lease_timeout=None, due_by=None, priority=None):
    if isinstance(types, str):
        types = [types]
    fields = {"types": list(types), "limit": limit, "wait": wait, "worker": worker, "lease_timeout": lease_timeout,
              "due_by": due_by, "priority": priority}
    method, path = _route("accept")
    body = _dumps(_body(m.AcceptRequest, fields, "accept")).encode()
    w = 0.0
    if wait is not None:
        w = parse_duration(format_duration(wait)).total_seconds()
    return Request(method, path, body, read_accept, wait=w)


def read_accept(status, body):
    from_json = m.Job.from_json
    return [from_json(j) for j in _loads(body)["jobs"]]


def heartbeat(id, token, data=None, progress=None):
    method, path = _route("heartbeatJob", id=_check_id(id))
    body = _dumps(_body(m.HeartbeatRequest, {"token": token, "data": data, "progress": progress}, "heartbeat")).encode()
    return Request(method, path, body, lambda s, b: m.HeartbeatResponse.from_json(_loads(b)))


def heartbeat_many(items):
    """items: dicts of id, token and optionally data and progress."""
    body = {"items": [_body(m.HeartbeatItem, dict(it), "heartbeat_many") for it in items]}
    n = len(body["items"])
    method, path = _route("heartbeatBatch")

    def read(s, b):
        raw = _loads(b)["results"]
        if len(raw) != n:
            raise RotaError("heartbeat: %d answers for %d leases" % (len(raw), n))
        out = []
        for r in raw:
            err = _item_error(r.pop("error", None))
            hr = m.HeartbeatResult.from_json(r)
            hr.error = err  # an exception (RotaError subclass) or None
            out.append(hr)
        return out

    return Request(method, path, _dumps(body).encode(), read)


def finish(id, token, result=None):
    method, path = _route("finishJob", id=_check_id(id))
    fields = {"token": token}
    if result is not None:
        fields["result"] = result
    return Request(method, path, _dumps(_body(m.FinishRequest, fields, "finish")).encode())


def fail(id, token, error, permanent=False):
    method, path = _route("failJob", id=_check_id(id))
    body = {"token": token, "error": str(error)}
    if permanent:
        body["permanent"] = True
    return Request(method, path, _dumps(_body(m.FailRequest, body, "fail")).encode())


def snooze(id, token, delay=None, run_at=None, rename=None):
    method, path = _route("snoozeJob", id=_check_id(id))
    body = _body(m.SnoozeRequest, {"token": token, "delay": delay, "run_at": run_at, "rename": rename}, "snooze")
    return Request(method, path, _dumps(body).encode())


def release(id, token):
    method, path = _route("releaseJob", id=_check_id(id))
    return Request(method, path, _dumps(_body(m.TokenRequest, {"token": token}, "release")).encode())


def logs(id, attempt=None, after=None, limit=None):
    """A page of job id's log: attempt (None: the latest that logged),
    after (the next of the previous page), limit (1..1000)."""
    q = [(k, v) for k, v in (("attempt", attempt), ("after", after), ("limit", limit)) if v is not None]
    method, path = _route("getJobLogs", q, id=_check_id(id))
    return Request(method, path, None, lambda s, b: m.LogsResponse.from_json(_loads(b)))


def append_logs(id, token, records, dropped=0):
    """Appends records (dicts of level, message and optionally time and
    attrs) to the log of the attempt token holds."""
    method, path = _route("appendJobLogs", id=_check_id(id))
    recs = [_body(m.LogRecord, dict(r), "append_logs") for r in records]
    body = {"token": token, "records": recs}
    if dropped:
        body["dropped"] = dropped
    return Request(method, path, _dumps(body).encode(), lambda s, b: m.AppendLogsResponse.from_json(_loads(b)))


def finish_body(items, checked=False):
    """The body of a batch finish of items: dicts of id, token, as and the
    ending's fields (result, error, permanent, run_at, rename). checked
    says they are in the API's form already (a worker's own, made by
    _runtime.ending), which skips checking each field of each item."""
    if checked:
        return _dumps({"items": items}).encode()
    return _dumps({"items": [_body(m.FinishItem, it, "finish_many") for it in items]}).encode()


def finish_many(items):
    """Ends several leases in one call; the value is one None (done) or
    RotaError per item, in order."""
    items = list(items)
    method, path = _route("finishBatch")
    return Request(method, path, finish_body(items), make_finish_reader(len(items)))


def make_finish_reader(n):
    def read(s, b):
        res = _loads(b)["results"]
        if len(res) != n:
            raise RotaError("finish: %d answers for %d leases" % (len(res), n))
        return [_item_error(r.get("error")) for r in res]

    return read


# The operationId each call above sends, so that a test can check every
# route of the document has a call.
OPERATIONS = {
    "add": "addJobs", "add_many": "addJobs", "get": "getJob", "deps": "getJobDeps", "history": "getJobHistory", "get_by_key": "listJobs", "get_many": "listJobs",
    "list_jobs": "listJobs", "update": "updateJob", "cancel": "cancelJob", "resubmit": "resubmitJob",
    "remove": "removeJob", "stats": "stats", "types": "listTypes", "set_type": "setType", "groups": "listGroups",
    "set_group": "setGroup", "tokens": "listTokens", "create_token": "createToken", "revoke_token": "revokeToken",
    "health": "healthz", "openapi": "openapi", "metrics": "metrics", "accept": "accept", "heartbeat": "heartbeatJob",
    "heartbeat_many": "heartbeatBatch", "finish": "finishJob", "fail": "failJob", "snooze": "snoozeJob",
    "release": "releaseJob", "finish_many": "finishBatch", "subscribe": "events", "wait": "events",
    "logs": "getJobLogs", "append_logs": "appendJobLogs",
    "add_batch": "addBatch", "add_batch_jobs": "addBatchJobs", "get_batch": "getBatch", "list_batches": "listBatches",
    "close_batch": "closeBatch",
}
