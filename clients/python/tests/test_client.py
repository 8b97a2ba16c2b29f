"""Every call of the blocking client against a real rota serve (SQLite and
PostgreSQL)."""

import datetime as dt
import threading
import time

import pytest

import rota
from conftest import wait_for
from rota import _ops


def test_add_get_and_outcomes(client, typ):
    job = client.add(typ, {"n": 1}, key="k1", group="acme", priority=5, max_attempts=3, backoff_base=2,
                     backoff_max=dt.timedelta(minutes=5), meta={"trace": "x"})
    assert job.id > 0 and job.outcome == "inserted"
    assert (job.type, job.key, job.group, job.priority, job.state) == (typ, "k1", "acme", 5, "pending")
    assert job.data == {"n": 1} and job.max_attempts == 3 and job.meta == {"trace": "x"}
    assert job.backoff_base == dt.timedelta(seconds=2) and job.backoff_max == dt.timedelta(minutes=5)
    assert isinstance(job.created_at, dt.datetime) and job.created_at.tzinfo is not None
    got = client.get(job.id)
    assert got.id == job.id and got.data == {"n": 1}
    # A re-add by key updates the pending job.
    again = client.add(typ, {"n": 2}, key="k1", group="acme")
    assert again.id == job.id and again.outcome == "updated" and again.data == {"n": 2}
    assert client.get_by_key(typ, "k1", group="acme").id == job.id
    with pytest.raises(rota.NotFoundError):
        client.get_by_key(typ, "nope", group="acme")
    # A key is unique within a type and a group: the default group's k1 is another job.
    other = client.add(typ, {"n": 3}, key="k1")
    assert other.id != job.id and other.outcome == "inserted"
    assert client.get_by_key(typ, "k1").id == other.id
    assert [j and j.id for j in client.get_many([job.id, 10 ** 12])] == [job.id, None]


def test_add_unique_for(client, typ):
    """An add within a unique window answers with the job it found (outcome
    unchanged); unique_states narrows what counts; a bad window is refused."""
    first = client.add(typ, {"to": "a"}, unique_for=dt.timedelta(hours=1))
    again = client.add(typ, {"to": "a"}, unique_for=3600)
    assert first.outcome == "inserted" and (again.id, again.outcome) == (first.id, "unchanged")
    other = client.add(typ, {"to": "a"}, unique_for=3600, unique_states=["completed"])
    assert other.id != first.id and other.outcome == "inserted"
    with pytest.raises(rota.InvalidInputError, match="unique_states"):
        client.add(typ, unique_states=["pending"])


def test_add_after(client, typ):
    """A workflow added in one call (after by id, after_keys by key) waits,
    runs in order, and each job sees its dependencies' outcomes (deps);
    client.deps reads a job's place in the graph; an unknown dependency is
    refused and nothing is added."""
    first = client.add(typ, {"n": 1})
    jobs = client.add_many([
        {"type": typ, "key": "mid", "after": [first.id]},
        {"type": typ, "key": "last", "after_keys": ["mid"], "on_dep_failure": "run"},
    ])
    mid, last = jobs
    assert (mid.state, last.state, last.has_deps, last.on_dep_failure) == ("waiting", "waiting", True, "run")
    assert "waiting" in rota.STATES and rota.DEP_POLICIES == ("cancel", "run")
    [run] = client.accept([typ], limit=5)
    assert run.id == first.id
    client.finish(run.id, run.token, result={"rows": 3})
    [run] = client.accept([typ], limit=5)
    assert run.id == mid.id and [(d.id, d.state, d.result) for d in run.deps] == [(first.id, "completed", {"rows": 3})]
    d = client.deps(mid.id)
    assert [x.id for x in d.deps] == [first.id] and d.dependants == [last.id]
    with pytest.raises(rota.NotFoundError, match=str(10 ** 12)):
        client.add_many([{"type": typ, "key": "x"}, {"type": typ, "after": [10 ** 12]}])
    with pytest.raises(rota.NotFoundError):
        client.get_by_key(typ, "x")


def test_add_debounce(client, typ):
    """A debounced add runs its job that long after the add; another add of
    the key replaces its data and run time (outcome updated)."""
    first = client.add(typ, {"v": 1}, key="doc-1", debounce=dt.timedelta(hours=1))
    assert first.outcome == "inserted"
    assert first.run_at > dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=59)
    again = client.add(typ, {"v": 2}, key="doc-1", debounce=3600)
    assert (again.id, again.outcome, again.data) == (first.id, "updated", {"v": 2})
    assert again.run_at > first.run_at
    with pytest.raises(rota.InvalidInputError, match="debounce needs a key"):
        client.add(typ, debounce=60)


def test_add_refuses_unknown_options_before_sending(client, typ):
    with pytest.raises(TypeError, match="no field 'colour'"):
        client.add(typ, colour="red")
    with pytest.raises(TypeError, match="not a duration|timedelta"):
        client.add(typ, backoff_base=object())
    assert client.list(type=typ).jobs == []


def test_run_at_in_the_future_and_naive_times(client, typ):
    at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    job = client.add(typ, run_at=at)
    assert abs((job.run_at - at).total_seconds()) < 0.001
    assert client.accept([typ]) == []


def test_add_many_is_one_batch_and_invalid_input_changes_nothing(client, typ):
    jobs = client.add_many([{"type": typ, "data": {"i": i}, "group": "g%d" % (i % 2)} for i in range(5)])
    assert [j.data["i"] for j in jobs] == list(range(5))
    assert all(j.outcome == "inserted" for j in jobs)
    with pytest.raises(rota.InvalidInputError) as e:
        client.add_many([{"type": typ}, {"type": "bad\x01type"}])
    assert e.value.status == 400 and e.value.code == "invalid_input" and "type" in e.value.message
    assert len(client.list(type=typ).jobs) == 5
    with pytest.raises(ValueError):
        client.add_many([])


def test_list_filters_and_pages(client, typ):
    client.add_many([{"type": typ, "group": "a" if i < 3 else "b,c"} for i in range(7)])
    page = client.list(type=typ, limit=4)
    assert len(page.jobs) == 4 and page.next_cursor
    rest = client.list(type=typ, limit=4, cursor=page.next_cursor)
    assert len(rest.jobs) == 3 and not rest.next_cursor
    assert len(list(client.iter_jobs(type=typ, limit=2))) == 7
    assert len(client.list(type=typ, group="b,c").jobs) == 4  # a comma in a group's name
    assert len(client.list(type=typ, group=["a", "b,c"]).jobs) == 7
    assert len(client.list(type=typ, state=["pending"]).jobs) == 7
    assert client.list(type=typ, state="running").jobs == []
    desc = client.list(type=typ, order="desc").jobs
    assert [j.id for j in desc] == sorted((j.id for j in desc), reverse=True)
    with pytest.raises(rota.InvalidInputError, match="state"):
        client.list(type=typ, state="sleeping")


def test_update_cancel_resubmit_remove(client, typ):
    job = client.add(typ, {"a": 1})
    job = client.update(job.id, data={"a": 2}, priority=7)
    assert job.data == {"a": 2} and job.priority == 7
    cancelled = client.cancel(job.id)
    assert cancelled.state == "cancelled" and cancelled.finished_at is not None
    again = client.resubmit(job.id, data={"a": 3})
    assert again.state == "pending" and again.outcome == "requeued" and again.data == {"a": 3}
    assert client.remove(job.id) is None
    with pytest.raises(rota.NotFoundError) as e:
        client.get(job.id)
    assert e.value.status == 404
    with pytest.raises(rota.NotFoundError):
        client.cancel(job.id)
    with pytest.raises(ValueError):
        client.get(0)


def test_history_names_the_token_of_each_change(own_server):
    """A job's history shows each change with the name of the token that
    made it; a token of another tenant finds no such job."""
    admin = "admin-secret-token-0123456789"
    s = own_server("--auth-token", admin)
    root = rota.Client(s.url, token=admin)
    alice = rota.Client(s.url, token=root.create_token("alice", groups=["acme"]).secret)
    bob = rota.Client(s.url, token=root.create_token("bob", groups=["acme"]).secret)
    eve = rota.Client(s.url, token=root.create_token("eve", groups=["globex"]).secret)
    job = alice.add("invoice", {"n": 1}, group="acme")
    alice.update(job.id, priority=5)
    bob.cancel(job.id)
    root.resubmit(job.id)
    history = bob.history(job.id)
    assert history[0].action == "added" and not history[0].audited
    assert [(e.action, e.actor, e.detail) for e in history if e.audited] == [
        ("update", "alice", "priority 0 \u2192 5"),
        ("cancel", "bob", "pending \u2192 cancelled"),
        ("retry", "admin", "cancelled \u2192 pending"),
    ]
    assert all(isinstance(e.at, dt.datetime) for e in history)
    with pytest.raises(rota.NotFoundError):
        eve.history(job.id)


def test_cancel_of_a_completed_job_is_finished_error(client, typ):
    job = client.add(typ)
    [leased] = client.accept([typ])
    client.finish(leased.id, leased.token, result={"ok": True})
    with pytest.raises(rota.FinishedError) as e:
        client.cancel(job.id)
    assert e.value.status == 409
    assert isinstance(e.value, rota.RotaError)


def test_worker_calls_one_by_one(client, typ):
    client.add_many([{"type": typ, "data": {"i": i}} for i in range(5)])
    jobs = client.accept([typ], limit=5, worker="pytest", lease_timeout=30)
    assert len(jobs) == 5 and all(j.token and j.state == "running" and j.worker == "pytest" for j in jobs)
    a, b, c, d, e = jobs
    hb = client.heartbeat(a.id, a.token, progress=50, data={"i": 0, "half": True})
    assert hb.lease_until > dt.datetime.now(dt.timezone.utc) and hb.resubmit is False
    assert client.get(a.id).progress == 50 and client.get(a.id).data["half"] is True
    client.finish(a.id, a.token, result=[1, 2])
    assert client.get(a.id).result == [1, 2] and client.get(a.id).state == "completed"
    client.finish(a.id, a.token, result=[1, 2])  # a repeated finish succeeds and changes nothing
    client.fail(b.id, b.token, "boom", permanent=True)
    assert client.get(b.id).state == "failed" and client.get(b.id).last_error == "boom"
    client.snooze(c.id, c.token, delay=3600)
    got = client.get(c.id)
    assert got.state == "pending" and got.run_at > dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=59)
    client.release(d.id, d.token)
    assert client.get(d.id).state == "pending" and client.get(d.id).attempt == 0
    client.fail(e.id, e.token, "again")
    got = client.get(e.id)
    assert got.state == "pending" and got.errors[0].error == "again" and got.errors[0].attempt == 1
    with pytest.raises(rota.WorkerConflictError):
        client.finish(b.id, b.token)
    with pytest.raises(rota.WorkerConflictError):
        client.heartbeat(d.id, d.token)


def test_batched_worker_calls_answer_each_item(client, typ):
    client.add_many([{"type": typ} for _ in range(3)])
    a, b, c = client.accept(typ, limit=3)
    client.cancel(c.id)
    res = client.heartbeat_many([{"id": a.id, "token": a.token, "progress": 10}, {"id": b.id, "token": "stale"},
                                 {"id": c.id, "token": c.token}])
    assert res[0].error is None and res[0].lease_until is not None
    assert isinstance(res[1].error, rota.WorkerConflictError)
    assert isinstance(res[2].error, rota.CanceledError)
    errs = client.finish_many([{"id": a.id, "token": a.token, "as": "complete", "result": "done"},
                               {"id": b.id, "token": b.token, "as": "snooze", "run_at": dt.datetime.now(dt.timezone.utc)},
                               {"id": c.id, "token": c.token, "as": "complete"}])
    assert errs[0] is None and errs[1] is None and isinstance(errs[2], rota.CanceledError)
    assert client.get(a.id).result == "done"


def test_accept_long_polls_until_a_job_is_added(client, typ):
    threading.Timer(0.3, lambda: client.add(typ)).start()
    t0 = time.monotonic()
    jobs = client.accept([typ], wait=5)
    assert len(jobs) == 1 and time.monotonic() - t0 < 4


def test_stats(client, typ):
    client.add_many([{"type": typ, "group": "x"}, {"type": typ, "group": "x"}, {"type": typ, "group": "y"}])
    s = client.stats()
    mine = {(c.group, c.state): c.jobs for c in s.counts if c.type == typ}
    assert mine == {("x", "pending"): 2, ("y", "pending"): 1}
    assert set(s.by_state) == set(rota.STATES) and s.by_state["pending"] >= 3


def test_types_groups_and_settings(client, typ):
    client.add(typ)
    tc = client.set_type(typ, lease_timeout=dt.timedelta(seconds=90), bands="2,1", group_max_running=3, max_running=10)
    assert tc.lease_timeout == dt.timedelta(seconds=90) and tc.bands == "2,1" and tc.group_max_running == 3
    assert tc.max_running == 10
    assert any(t.type == typ and t.group_max_running == 3 and t.max_running == 10 for t in client.types())
    g = client.set_group("tenant-1", type=typ, max_running=2, weight=2.5)
    assert (g.group, g.max_running, g.weight) == ("tenant-1", 2, 2.5)
    assert any(x.group == "tenant-1" and x.type == typ for x in client.groups())
    # Rates of starts, on the type and on a group.
    tc = client.set_type(typ, rate="50/s", burst=80)
    assert (tc.rate, tc.burst) == ("50/s", 80)
    assert any(t.type == typ and t.rate == "50/s" and t.burst == 80 for t in client.types())
    g = client.set_group("tenant-1", type=typ, rate="10/m")
    assert any(x.group == "tenant-1" and x.type == typ and x.rate == "10/m" for x in client.groups())
    with pytest.raises(rota.InvalidInputError, match="rate: want N/s, N/m or N/h"):
        client.set_type(typ, rate="5/d")


def test_health_openapi_metrics(client):
    assert client.health() == {"status": "ok"}
    assert client.openapi()["info"]["title"] == "rota"
    assert "rota_" in client.metrics()


def test_the_served_document_is_the_one_the_models_came_from(client):
    import hashlib

    from rota import _models

    status, _, body = client._t.request("GET", "/v1/openapi.json")
    assert status == 200
    assert hashlib.sha256(body).hexdigest() == _models.OPENAPI_SHA256, \
        "the server's OpenAPI document changed: run go run ./clients/python/gen"


def test_every_route_has_a_call():
    from rota import _models

    covered = set(_ops.OPERATIONS.values())
    assert covered == set(_models.ROUTES), "routes without a client call: %s" % (set(_models.ROUTES) - covered)
    for name in _ops.OPERATIONS:
        assert callable(getattr(rota.Client, "list" if name == "list_jobs" else name))


def test_an_error_class_for_every_code():
    for code in rota.ERROR_CODES:
        cls = rota.ERROR_CLASSES[code]
        assert issubclass(cls, rota.RotaError) and cls.code == code and cls.__name__.endswith("Error")
    assert len(set(rota.ERROR_CLASSES.values())) == len(rota.ERROR_CODES)


def test_no_server_is_a_connection_error(typ):
    c = rota.Client("http://127.0.0.1:9")
    with pytest.raises(rota.RotaConnectionError, match="cannot reach"):
        c.add(typ)
    with pytest.raises(ValueError):
        rota.Client("ftp://x")


def test_wait_returns_the_ended_job(client, typ):
    job = client.add(typ)

    def work():
        time.sleep(0.3)
        [j] = client.accept([typ])
        client.heartbeat(j.id, j.token, progress=40)
        client.finish(j.id, j.token, result={"done": 1})

    threading.Thread(target=work).start()
    ended = client.wait(job.id, timeout=10)
    assert ended.state == "completed" and ended.result == {"done": 1}
    pending = client.add(typ, run_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1))
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        client.wait(pending.id, timeout=0.5)
    assert time.monotonic() - t0 < 3
    with pytest.raises(rota.NotFoundError):
        client.wait(10 ** 12, timeout=5)


def test_wait_takes_states(client, typ):
    job = client.add(typ, data={"n": 1})

    def take():
        time.sleep(0.3)
        client.accept([typ])

    threading.Thread(target=take).start()
    running = client.wait(job.id, timeout=10, states=["running"])
    assert running.id == job.id and running.data == {"n": 1}
    client.cancel(job.id)
    with pytest.raises(rota.FinishedError):
        client.wait(job.id, timeout=10, states="running")
    assert client.wait(job.id, timeout=10, states=["cancelled"]).state == "cancelled"


def test_subscribe_to_a_job_ends_with_it(client, typ):
    job = client.add(typ)
    seen = []

    def follow():
        for ev in client.subscribe(job=job.id):
            seen.append((ev.state, ev.progress))

    t = threading.Thread(target=follow)
    t.start()
    time.sleep(0.3)
    [j] = client.accept([typ])
    client.heartbeat(j.id, j.token, progress=30)
    client.finish(j.id, j.token)
    t.join(10)
    assert not t.is_alive()
    assert seen[0] == ("pending", 0) and seen[-1][0] == "completed" and ("running", 30) in seen


def test_subscribe_to_types_and_lease_tags(client, typ):
    job = client.add(typ)
    stream = client.subscribe(types=[typ[:-4] + "*"])
    got = []

    def follow():
        for ev in stream:
            got.append(ev)
            if ev.state == "completed":
                return

    t = threading.Thread(target=follow)
    t.start()
    time.sleep(0.3)
    [j] = client.accept([typ])
    client.finish(j.id, j.token)
    t.join(10)
    assert [e.state for e in got] == ["running", "completed"]
    assert all(e.event_id and e.id == job.id for e in got)
    from rota._runtime import lease_tag

    assert got[0].lease == lease_tag(j.token)  # the worker matches events to its leases by this


def test_reads_wait_out_a_token_at_its_bound(own_server):
    """A read refused with 429 (the token has as many requests in flight as
    the server allows it, --max-token-requests) is tried again after
    Retry-After and gets through once the request holding the token ends;
    a write is not tried again, since its effect would be unknown."""
    admin = "admin-secret-token-0123456789"
    s = own_server("--auth-token", admin, "--max-token-requests", "1")
    secret = rota.Client(s.url, token=admin).create_token("one-at-a-time").secret
    holder, reader = rota.Client(s.url, token=secret), rota.Client(s.url, token=secret)

    def poll():
        # Tried again if the reader's add held the token's one slot when
        # the long poll arrived: which goes first is a race.
        while True:
            try:
                return holder.accept(["nothing.here"], wait=1.5)
            except rota.TooManyRequestsError:
                continue

    polling = threading.Thread(target=poll)
    polling.start()
    added = []
    try:
        wait_for(lambda: _refused(reader.add, "x", added=added), what="the long poll to hold the token's one request")
        started = time.monotonic()
        assert reader.stats().by_state["pending"] == len(added)  # after the long poll ended
        assert time.monotonic() - started > 0.3
    finally:
        polling.join()


def _refused(call, *args, added=None):
    try:
        job = call(*args)
    except rota.TooManyRequestsError as e:
        assert e.status == 429 and "requests in flight" in str(e)
        return True
    if added is not None:
        added.append(job)
    return False


def test_add_expires_at(client, typ):
    """A job whose deadline passes before it starts (nothing accepts it) is
    ended by the server: cancelled, expired, with the deadline in its last
    error; a deadline not after run_at is refused."""
    deadline = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    job = client.add(typ, expires_at=deadline)
    assert job.expires_at is not None and abs((job.expires_at - deadline).total_seconds()) < 0.001
    assert job.expired is False
    wait_for(lambda: client.get(job.id).state != "pending", timeout=15, what="the deadline's sweep")
    got = client.get(job.id)
    assert got.state == "cancelled" and got.expired is True and got.attempt == 0
    assert got.last_error.startswith("expired at ") and got.last_error.endswith(", not started")
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    with pytest.raises(rota.InvalidInputError, match="expires_at"):
        client.add(typ, run_at=later, expires_at=later)


def test_type_default_timeout(client, typ):
    """A type's default run timeout is kept and read back; a job's own
    timeout is its own."""
    tc = client.set_type(typ, timeout="30s")
    assert tc.timeout == dt.timedelta(seconds=30)
    assert [t.timeout for t in client.types() if t.type == typ] == [dt.timedelta(seconds=30)]
    job = client.add(typ)
    assert job.timeout is None
    with pytest.raises(rota.InvalidInputError, match="timeout"):
        client.set_type(typ, timeout="-1s")


def test_batch_with_callbacks(client, typ):
    b = client.add_batch([{"type": typ, "data": {"n": 1}}, {"type": typ, "data": {"n": 2}}],
                         on_complete={"type": typ + ".after", "data": {"report": "q3"}}, on_success=typ + ".ok",
                         open=True, description="two pages")
    assert b.id > 0 and b.open and not b.done and b.counts.total == 2 and len(b.jobs) == 2
    assert all(j.batch == b.id and j.outcome == "inserted" for j in b.jobs)
    b = client.add_batch_jobs(b.id, [{"type": typ}])
    assert b.counts.total == 3 and len(b.jobs) == 1
    b = client.close_batch(b.id)
    assert not b.open and not b.done
    for j in client.accept([typ], limit=10):
        client.finish(j.id, j.token)
    b = client.get_batch(b.id)
    assert b.done and b.counts.completed == 3 and b.complete_job and b.success_job
    after = client.get(b.complete_job)
    assert after.data["report"] == "q3" and after.data["batch"]["id"] == b.id
    assert after.data["batch"]["counts"]["completed"] == 3 and after.data["batch"]["callback"] == "complete"
    assert [x.id for x in client.list_batches(limit=1)] == [b.id]
    with pytest.raises(rota.FinishedError):
        client.add_batch_jobs(b.id, [{"type": typ}])
    with pytest.raises(rota.InvalidInputError):
        client.add_batch([{"type": typ}], on_complete={"type": typ, "data": {"batch": 1}})
    with pytest.raises(rota.NotFoundError):
        client.get_batch(999999)
