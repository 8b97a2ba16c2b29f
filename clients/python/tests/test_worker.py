"""The blocking Worker against a real rota serve."""

import datetime as dt
import logging
import threading
import time


import pytest

import rota
from conftest import restart, run_in_thread, wait_for


def test_handlers_end_jobs_by_their_outcome(client, typ):
    w = rota.Worker(client, concurrency=4, poll_wait=1)
    ok, boom, perm, snooze, cancel = typ + ".ok", typ + ".boom", typ + ".perm", typ + ".snooze", typ + ".cancel"

    @w.handle(ok)
    def _ok(job):
        return {"twice": job.data["n"] * 2}

    @w.handle(boom)
    def _boom(job):
        raise ValueError("bad luck")

    @w.handle(perm)
    def _perm(job):
        raise rota.Permanent("never")

    @w.handle(snooze)
    def _snooze(job):
        raise rota.Snooze(3600)

    @w.handle(cancel)
    def _cancel(job):
        raise rota.Cancel("not wanted")

    jobs = {t: client.add(t, {"n": 21}, max_attempts=5, backoff_base=3600) for t in (ok, boom, perm, snooze, cancel)}
    t = run_in_thread(w)
    wait_for(lambda: sum(w.stats.values()) == 5, what="five endings")
    w.stop()
    t.join(15)
    assert not t.is_alive()
    got = {k: client.get(j.id) for k, j in jobs.items()}
    assert got[ok].state == "completed" and got[ok].result == {"twice": 42}
    assert got[boom].state == "pending" and got[boom].last_error == "ValueError: bad luck" and got[boom].attempt == 1
    assert got[perm].state == "failed" and "never" in got[perm].last_error
    assert got[snooze].state == "pending" and got[snooze].attempt == 0
    assert got[snooze].run_at > dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=59)
    assert got[cancel].state == "cancelled"
    assert w.stats == {"completed": 1, "failed": 2, "snoozed": 1, "cancelled": 1, "released": 0, "refused": 0,
                       "given_up": 0}


def test_a_result_that_is_not_json_fails_its_job_alone(client, typ):
    w = rota.Worker(client, concurrency=2, poll_wait=1)
    w.handle(typ + ".set")(lambda job: {1, 2})
    w.handle(typ + ".ok")(lambda job: [1, 2])
    bad, good = client.add(typ + ".set"), client.add(typ + ".ok")
    t = run_in_thread(w)
    wait_for(lambda: w.stats["completed"] + w.stats["failed"] == 2, what="both endings")
    w.stop()
    t.join(15)
    got = client.get(bad.id)
    assert got.state == "failed" and "not JSON" in got.last_error
    assert client.get(good.id).result == [1, 2]


def test_concurrency_bounds_running_handlers(client, typ):
    w = rota.Worker(client, concurrency=3, poll_wait=1)
    lock = threading.Lock()
    now = [0]
    peak = [0]

    @w.handle(typ)
    def work(job):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1

    client.add_many([{"type": typ} for _ in range(30)])
    t = run_in_thread(w)
    wait_for(lambda: w.stats["completed"] == 30, what="30 completions")
    w.stop()
    t.join(15)
    assert peak[0] == 3
    assert client.stats().by_state and all(j.state == "completed" for j in client.list(type=typ).jobs)


def test_a_cancelled_job_stops_its_handler_at_once(client, typ):
    w = rota.Worker(client, concurrency=2, poll_wait=1)
    started = threading.Event()
    reasons = []

    @w.handle(typ)
    def work(job):
        started.set()
        if job.stopping.wait(20):
            reasons.append(job.stop_reason)
            raise RuntimeError("stopped")

    job = client.add(typ)
    t = run_in_thread(w)
    assert started.wait(10)
    time.sleep(0.2)
    t0 = time.monotonic()
    client.cancel(job.id)
    wait_for(lambda: reasons, what="the handler to see the cancel")
    assert reasons == ["canceled"] and time.monotonic() - t0 < 2  # the event stream, not a heartbeat a third of a lease later
    w.stop()
    t.join(15)
    assert client.get(job.id).state == "cancelled"


def test_heartbeats_keep_a_long_job_and_progress_reaches_the_server(client, typ):
    w = rota.Worker(client, concurrency=1, poll_wait=1, lease_timeout=1)

    @w.handle(typ)
    def work(job):
        job.set_progress(25)
        time.sleep(2.5)  # longer than two leases: heartbeats extend it
        return "kept"

    job = client.add(typ)
    t = run_in_thread(w)
    wait_for(lambda: w.stats["completed"] == 1, timeout=15, what="the completion")
    w.stop()
    t.join(15)
    got = client.get(job.id)
    assert got.state == "completed" and got.result == "kept" and got.attempt == 1 and not got.errors


def test_a_lost_lease_refuses_the_stale_finish_and_reports_it(client, typ, caplog):
    """A job with a fixed lease of 1 s (retry_after, which heartbeats do not
    extend) outruns it: the server takes it back and it runs again; the
    first run's finish is refused and reported, the second's stands."""
    ends = []
    w = rota.Worker(client, concurrency=2, poll_wait=1, on_finish=lambda job, ending, err: ends.append((job.attempt, err)))
    runs = []

    @w.handle(typ)
    def work(job):
        runs.append(job.attempt)
        if job.attempt == 1:
            time.sleep(2.5)  # the lease (1 s) runs out meanwhile
            return "stale"
        return "fresh"

    job = client.add(typ, retry_after=1, max_attempts=3)
    caplog.set_level(logging.WARNING, logger="rota.worker")
    t = run_in_thread(w)
    wait_for(lambda: len(ends) == 2, timeout=15, what="both runs' finishes")
    w.stop()
    t.join(15)
    assert runs == [1, 2]
    got = client.get(job.id)
    assert got.state == "completed" and got.result == "fresh" and "retry-after" in got.errors[0].error
    stale = [e for a, e in ends if a == 1][0]
    assert isinstance(stale, rota.WorkerConflictError)
    assert w.stats["refused"] == 1 and w.stats["completed"] == 1
    assert any("finish refused: the lease was lost" in r.getMessage() for r in caplog.records)


def test_finishes_are_tried_again_while_the_lease_holds(own_server, rota_bin, typ):
    """The server goes away while a handler runs: its finish fails, and is
    sent again until the server is back, within the lease."""
    s = own_server()
    c = rota.Client(s.url)
    w = rota.Worker(c, concurrency=1, poll_wait=1, lease_timeout=30, watch=False)
    started = threading.Event()

    @w.handle(typ)
    def work(job):
        started.set()
        time.sleep(0.5)
        return "after the restart"

    job = c.add(typ)
    t = run_in_thread(w)
    assert started.wait(10)
    s.stop()  # the finish finds no server
    time.sleep(1.5)
    s2 = restart(s, rota_bin)
    own_server.servers.append(s2)
    wait_for(lambda: w.stats["completed"] == 1, timeout=20, what="the retried finish")
    w.stop()
    t.join(15)
    got = c.get(job.id)
    assert got.state == "completed" and got.result == "after the restart" and got.attempt == 1


def test_stop_hands_back_jobs_leased_ahead_and_waits_for_running_ones(client, typ):
    w = rota.Worker(client, concurrency=1, prefetch=4, poll_wait=1, shutdown_timeout=5)
    # Lease ahead from the start: the pace is known.
    w._pace.ran(0.001)
    w._pace.accepted(0.01)
    started = threading.Event()

    @w.handle(typ)
    def work(job):
        started.set()
        time.sleep(0.5)
        return "done"

    jobs = client.add_many([{"type": typ} for _ in range(5)])
    t = run_in_thread(w)
    assert started.wait(10)
    w.stop()
    t.join(15)
    got = [client.get(j.id) for j in jobs]
    states = sorted(g.state for g in got)
    assert states.count("completed") >= 1
    assert all(g.state == "completed" or (g.state == "pending" and g.attempt == 0) for g in got), got
    assert w.stats["released"] == states.count("pending")


def test_a_run_past_its_timeout_is_stopped_by_the_server(client, typ, caplog):
    """A job with a timeout of 1 s whose handler runs 2.5 s while the
    worker keeps heartbeating: the server ends the run as a failed attempt
    ("timed out after 1s"), the worker's finish is refused, and the second
    run completes."""
    ends = []
    w = rota.Worker(client, concurrency=2, poll_wait=1, on_finish=lambda job, ending, err: ends.append((job.attempt, err)))
    runs = []

    @w.handle(typ)
    def work(job):
        runs.append(job.attempt)
        if job.attempt == 1:
            time.sleep(2.5)  # past the timeout (1 s), heartbeating meanwhile
            return "late"
        return "in time"

    job = client.add(typ, timeout=1, max_attempts=3, backoff_base="10ms", backoff_max="10ms")
    assert job.timeout == dt.timedelta(seconds=1)
    t = run_in_thread(w)
    wait_for(lambda: len(ends) == 2, timeout=15, what="both runs' finishes")
    w.stop()
    t.join(15)
    assert runs == [1, 2]
    got = client.get(job.id)
    assert got.state == "completed" and got.result == "in time"
    assert [e.error for e in got.errors] == ["timed out after 1s"]
    late = [e for a, e in ends if a == 1][0]
    assert isinstance(late, rota.WorkerConflictError)


def test_a_handlers_log_is_kept_with_its_attempt(client, typ, caplog):
    w = rota.Worker(client, concurrency=2, poll_wait=1)
    release = threading.Event()

    @w.handle(typ)
    def _logs(job):
        job.log.debug("not kept")
        job.log.info("resizing %s", "cat.png", extra={"width": 640})
        if job.attempt == 1:
            job.log.warning("slow disk")
            release.wait(10)  # the record is sent while the job runs
            try:
                raise KeyError("x")
            except KeyError:
                job.log.exception("failed")
            raise ValueError("first try fails")
        job.log.critical("second try")
        for i in range(1000):  # past the 64 KiB bound
            job.log.info("line %d %s", i, "x" * 100)
        return None

    job = client.add(typ, max_attempts=2, backoff_base=0.01, backoff_max=0.01)
    caplog.set_level(logging.INFO, logger="rota.worker")
    t = run_in_thread(w)
    wait_for(lambda: len(client.logs(job.id).records) == 2, what="records sent while the job runs")
    release.set()
    wait_for(lambda: client.get(job.id).state == "completed", what="the job completed")
    w.stop()
    t.join(10)
    first = client.logs(job.id, attempt=1)
    assert [(r.level, r.message.split("\n")[0]) for r in first.records] == [
        ("INFO", "resizing cat.png"), ("WARN", "slow disk"), ("ERROR", "failed")]
    assert first.records[0].attrs == {"width": 640}
    assert "KeyError" in first.records[2].message
    assert first.records[0].seq == 1 and first.records[0].time.year >= 2026
    latest = client.logs(job.id, limit=5)
    assert latest.attempt == 2 and latest.records[1].level == "ERROR+4" and latest.next == 5
    a2 = [a for a in latest.attempts if a.attempt == 2][0]
    assert a2.dropped > 0 and a2.records + a2.dropped == 1002 and a2.bytes <= 64 << 10
    # The records reach the worker's logger too, under rota.job.ID.
    assert any(r.name == "rota.job.%d" % job.id and r.getMessage() == "slow disk" for r in caplog.records)
    with pytest.raises(rota.WorkerConflictError):
        client.append_logs(job.id, "stale", [{"level": "INFO", "message": "late"}])
    with pytest.raises(rota.NotFoundError):
        client.logs(job.id + 1000)
