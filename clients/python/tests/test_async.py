"""AsyncClient and AsyncWorker against a real rota serve."""

import asyncio
import datetime as dt
import inspect
import time

import pytest

import rota
from rota import _ops


def run(coro):
    return asyncio.run(coro)


def test_the_async_client_has_every_call_of_the_blocking_one():
    for name in _ops.OPERATIONS:
        name = "list" if name == "list_jobs" else name
        a, s = getattr(rota.AsyncClient, name), getattr(rota.Client, name)
        assert inspect.iscoroutinefunction(a) or inspect.isasyncgenfunction(a), name
        sp, ap = inspect.signature(s).parameters, inspect.signature(a).parameters
        assert [p for p in ap] == [p for p in sp if not p.startswith("_")], name


def test_async_calls(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            job = await c.add(typ, {"a": 1}, key="k", group="g")
            assert job.outcome == "inserted" and (await c.get(job.id)).data == {"a": 1}
            assert (await c.get_by_key(typ, "k", group="g")).id == job.id
            more = await c.add_many([{"type": typ, "data": {"i": i}} for i in range(3)])
            assert [j and j.id for j in await c.get_many([more[0].id])] == [more[0].id]
            page = await c.list(type=typ, limit=2)
            assert len(page.jobs) == 2 and page.next_cursor
            assert len([j async for j in c.iter_jobs(type=typ, limit=2)]) == 4
            assert (await c.update(job.id, priority=3)).priority == 3
            assert (await c.cancel(more[2].id)).state == "cancelled"
            assert (await c.resubmit(more[2].id)).outcome == "requeued"
            await c.remove(more[2].id)
            with pytest.raises(rota.NotFoundError):
                await c.get(more[2].id)
            jobs = await c.accept([typ], limit=3, lease_timeout=30)
            assert len(jobs) == 3
            a, b, d = jobs
            assert (await c.heartbeat(a.id, a.token, progress=5)).lease_until is not None
            res = await c.heartbeat_many([{"id": b.id, "token": b.token}, {"id": d.id, "token": "stale"}])
            assert res[0].error is None and isinstance(res[1].error, rota.WorkerConflictError)
            await c.finish(a.id, a.token, result="r")
            await c.fail(b.id, b.token, "x", permanent=True)
            await c.snooze(d.id, d.token, delay=60)
            with pytest.raises(rota.WorkerConflictError):
                await c.release(d.id, d.token)
            assert await c.finish_many([{"id": a.id, "token": a.token, "as": "complete", "result": "r"}]) == [None]
            s = await c.stats()
            assert {(x.state, x.jobs) for x in s.counts if x.type == typ} == {("completed", 1), ("failed", 1), ("pending", 1)}
            assert any(t.type == typ for t in await c.types())
            assert (await c.set_type(typ, lease_timeout="45s")).lease_timeout == dt.timedelta(seconds=45)
            assert (await c.set_group("g", weight=2)).weight == 2
            assert any(g.group == "g" for g in await c.groups())
            assert (await c.health())["status"] == "ok"
            assert "paths" in await c.openapi()
            assert "rota_" in await c.metrics()
            with pytest.raises(rota.InvalidInputError):
                await c.list(state="nope")

    run(main())


def test_async_batch(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            b = await c.add_batch([{"type": typ}], on_complete=typ + ".after", open=True)
            assert b.open and b.counts.total == 1 and b.jobs[0].batch == b.id
            assert (await c.add_batch_jobs(b.id, [{"type": typ}])).counts.total == 2
            assert not (await c.close_batch(b.id)).open
            for j in await c.accept([typ], limit=5):
                await c.finish(j.id, j.token)
            done = await c.get_batch(b.id)
            assert done.done and done.counts.completed == 2 and done.complete_job
            assert (await c.list_batches(limit=1))[0].id == b.id

    run(main())


def test_async_wait_and_subscribe(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            job = await c.add(typ)

            async def work():
                await asyncio.sleep(0.3)
                [j] = await c.accept([typ])
                await c.heartbeat(j.id, j.token, progress=50)
                await c.finish(j.id, j.token, result=7)

            states = []

            async def follow():
                async for ev in c.subscribe(job=job.id):
                    states.append(ev.state)

            f = asyncio.ensure_future(follow())
            w = asyncio.ensure_future(work())
            ended = await c.wait(job.id, timeout=10)
            assert ended.state == "completed" and ended.result == 7
            await asyncio.wait_for(f, 5)
            await w
            assert states[0] == "pending" and states[-1] == "completed"
            late = await c.add(typ, run_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1))
            with pytest.raises(asyncio.TimeoutError):
                await c.wait(late.id, timeout=0.3)

    run(main())


def test_async_worker_outcomes_and_cancellation(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            w = rota.AsyncWorker(c, concurrency=4, poll_wait=1)
            cancelled_seen = asyncio.Event()

            @w.handle(typ + ".ok")
            async def ok(job):
                await asyncio.sleep(0.01)
                return {"n": job.data["n"] + 1}

            @w.handle(typ + ".sync")
            def sync(job):  # a plain function runs in the executor
                return "sync"

            @w.handle(typ + ".perm")
            async def perm(job):
                raise rota.Permanent("no")

            @w.handle(typ + ".snooze")
            async def snooze(job):
                raise rota.Snooze(dt.timedelta(hours=1))

            @w.handle(typ + ".long")
            async def long(job):
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    assert job.stop_reason == "canceled"
                    cancelled_seen.set()
                    raise

            jobs = [await c.add(typ + ".ok", {"n": i}) for i in range(20)]
            s = await c.add(typ + ".sync")
            p = await c.add(typ + ".perm")
            z = await c.add(typ + ".snooze")
            lj = await c.add(typ + ".long")
            task = asyncio.ensure_future(w.run(signals=False))
            while w.stats["completed"] < 21:
                await asyncio.sleep(0.02)
            while (await c.get(lj.id)).state != "running":
                await asyncio.sleep(0.02)
            t0 = time.monotonic()
            await c.cancel(lj.id)
            await asyncio.wait_for(cancelled_seen.wait(), 5)
            assert time.monotonic() - t0 < 2
            w.stop()
            await asyncio.wait_for(task, 15)
            assert [(await c.get(j.id)).result for j in jobs] == [{"n": i + 1} for i in range(20)]
            assert (await c.get(s.id)).result == "sync"
            assert (await c.get(p.id)).state == "failed"
            got = await c.get(z.id)
            assert got.state == "pending" and got.attempt == 0
            assert (await c.get(lj.id)).state == "cancelled"

    run(main())


def test_async_worker_stop_hands_back_running_jobs(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            w = rota.AsyncWorker(c, concurrency=2, poll_wait=1, shutdown_timeout=0.2, shutdown_grace=2)
            started = asyncio.Event()

            @w.handle(typ)
            async def long(job):
                started.set()
                await asyncio.sleep(30)  # cancelled by the shutdown

            jobs = await c.add_many([{"type": typ} for _ in range(3)])
            task = asyncio.ensure_future(w.run(signals=False))
            await asyncio.wait_for(started.wait(), 10)
            await asyncio.sleep(0.2)
            w.stop()
            await asyncio.wait_for(task, 10)
            got = [await c.get(j.id) for j in jobs]
            assert all(g.state == "pending" and g.attempt == 0 for g in got), got
            assert w.stats["released"] >= 2

    run(main())


def test_async_worker_lost_lease_cancels_the_handler(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            w = rota.AsyncWorker(c, concurrency=2, poll_wait=1)
            reasons = []

            @w.handle(typ)
            async def work(job):
                if job.attempt == 1:
                    try:
                        await asyncio.sleep(5)  # the fixed lease (1 s) runs out
                    except asyncio.CancelledError:
                        reasons.append(job.stop_reason)
                        raise
                return "second"

            job = await c.add(typ, retry_after=1)
            task = asyncio.ensure_future(w.run(signals=False))
            while w.stats["completed"] < 1:
                await asyncio.sleep(0.05)
            w.stop()
            await asyncio.wait_for(task, 10)
            assert reasons == ["lease_lost"]
            got = await c.get(job.id)
            assert got.result == "second" and got.attempt == 2

    run(main())


def test_async_worker_keeps_a_handlers_log(server, typ):
    async def main():
        async with rota.AsyncClient(server.url) as c:
            w = rota.AsyncWorker(c, concurrency=2, poll_wait=1)
            go_on = asyncio.Event()

            @w.handle(typ)
            async def logs(job):
                job.log.info("fetching %s", "feed", extra={"items": 3})
                await asyncio.wait_for(go_on.wait(), 10)  # the record is sent while the job runs
                job.log.error("parse failed")
                return {"ok": True}

            @w.handle(typ + ".sync")
            def sync(job):  # a plain handler, in a thread
                job.log.warning("from a thread")

            job = await c.add(typ)
            other = await c.add(typ + ".sync")
            task = asyncio.ensure_future(w.run(signals=False))
            deadline = time.monotonic() + 10
            while len((await c.logs(job.id)).records) != 1:
                assert time.monotonic() < deadline, "the running job's record was not sent"
                await asyncio.sleep(0.05)
            go_on.set()
            await c.wait(job.id, timeout=10)
            await c.wait(other.id, timeout=10)
            w.stop()
            await asyncio.wait_for(task, 10)
            page = await c.logs(job.id)
            assert [(r.level, r.message, r.attrs) for r in page.records] == [
                ("INFO", "fetching feed", {"items": 3}), ("ERROR", "parse failed", None)]
            assert [r.message for r in (await c.logs(other.id)).records] == ["from a thread"]

    run(main())
