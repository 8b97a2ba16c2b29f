"""A Go producer, a Python worker and a Go worker on one rota serve: jobs
in several groups, each done once, the small groups not held up by the
flooding one. (The TypeScript worker joins this when its client lands.)"""

import os
import subprocess
import threading

import pytest

import rota
from conftest import REPO, go, wait_for


@pytest.fixture(scope="session")
def godrain(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("godrain") / "godrain")
    subprocess.run([go(), "build", "-o", out, "./clients/python/bench/godrain"], cwd=REPO,
                   env=dict(os.environ, CGO_ENABLED="1"), check=True)
    return out


def test_go_producer_python_and_go_workers(sqlite_server, godrain, typ):
    url = sqlite_server.url
    small = ["a", "b", "c", "d", "e"]
    spec = "flood:600," + ",".join("%s:15" % g for g in small)
    subprocess.run([godrain, "-server", url, "-type", typ, "-add", spec], check=True, timeout=60)
    c = rota.Client(url)
    total = 600 + 15 * len(small)
    assert len(list(c.iter_jobs(type=typ, limit=1000))) == total

    ran = {}
    lock = threading.Lock()
    w = rota.Worker(c, concurrency=4)

    @w.handle(typ)
    def work(job):
        with lock:
            ran[job.id] = ran.get(job.id, 0) + 1
        return "python"

    gw = subprocess.Popen([godrain, "-server", url, "-type", typ, "-concurrency", "4", "-result", "go"],
                          stderr=subprocess.PIPE)
    t = threading.Thread(target=w.run, kwargs={"signals": False}, daemon=True)
    t.start()
    try:
        wait_for(lambda: sum(x.jobs for x in c.stats().counts if x.type == typ and x.state == "completed") == total,
                 timeout=60, what="every job to complete")
    finally:
        w.stop()
        gw.terminate()
        t.join(15)
        gw.wait(15)
    jobs = list(c.iter_jobs(type=typ, limit=1000))
    assert len(jobs) == total
    assert all(j.state == "completed" and j.attempt == 1 and not j.errors for j in jobs)
    by = {"python": 0, "go": 0}
    for j in jobs:
        by[j.result] += 1
    assert by["python"] == len(ran) and all(n == 1 for n in ran.values())  # each job ran once
    assert by["python"] > 0 and by["go"] > 0, by
    # Fairness: the groups take turns, so the small groups are done while
    # most of the flood is still to run.
    flood = sorted(j.finished_at for j in jobs if j.group == "flood")
    small_done = max(j.finished_at for j in jobs if j.group in small)
    assert small_done <= flood[len(flood) // 5], "the small groups finished after a fifth of the flood"
