"""A Go producer, and a Python, a TypeScript and a Go worker on one rota
serve (SQLite, and PostgreSQL): jobs in several groups, each done once, the
small groups not held up by the flooding one.

The TypeScript worker is clients/typescript/test/fixtures/interop-worker.mjs,
run by node from the package's committed dist/. Without node (or dist/) the
test skips, unless ROTA_REQUIRE_NODE is set (scripts/test.sh sets it): then
it fails."""

import os
import shutil
import subprocess
import threading

import pytest

import rota
from conftest import REPO, go, wait_for

TS_WORKER = os.path.join(REPO, "clients", "typescript", "test", "fixtures", "interop-worker.mjs")
TS_DIST = os.path.join(REPO, "clients", "typescript", "dist", "index.js")


@pytest.fixture(scope="session")
def godrain(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("godrain") / "godrain")
    subprocess.run([go(), "build", "-o", out, "./clients/godrain"], cwd=REPO,
                   env=dict(os.environ, CGO_ENABLED="1"), check=True)
    return out


@pytest.fixture(scope="session")
def node():
    """node, with the TypeScript client's dist/ to run."""
    path = shutil.which("node")
    missing = None
    if path is None:
        missing = "node is not installed"
    elif not os.path.exists(TS_DIST):
        missing = "the TypeScript client is not built (%s is missing)" % TS_DIST
    if missing:
        if os.environ.get("ROTA_REQUIRE_NODE"):
            pytest.fail("ROTA_REQUIRE_NODE is set but " + missing)
        pytest.skip(missing)
    return path


class Lines:
    """A process's stdout lines, read as they come."""

    def __init__(self, proc):
        self.lines = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self._thread.start()

    def _read(self, f):
        for line in f:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def has(self, line):
        with self._lock:
            return line in self.lines

    def join(self, timeout):
        self._thread.join(timeout)
        with self._lock:
            return list(self.lines)


def stop(proc, name, signalled=False):
    """Ends proc with SIGTERM (unless it was sent already: a second one may
    find the worker past its handler, on its way out, and kill it), as a
    deployment stops a worker, and checks that it exits cleanly."""
    if not signalled and proc.poll() is None:
        proc.terminate()
    try:
        code = proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the %s worker did not stop within 15s of SIGTERM" % name)
    err = proc.stderr.read() if proc.stderr else ""
    assert code == 0, "the %s worker exited with %s: %s" % (name, code, err)


def test_go_producer_python_typescript_and_go_workers(server, godrain, node, typ):
    url = server.url
    small = ["a", "b", "c", "d", "e"]
    total = 600 + 15 * len(small)
    c = rota.Client(url)

    ran = {}
    lock = threading.Lock()
    w = rota.Worker(c, concurrency=4)

    @w.handle(typ)
    def work(job):
        with lock:
            ran[job.id] = ran.get(job.id, 0) + 1
        return "python"

    # The workers start first and wait for jobs, so that all three compete
    # for the producer's batch from the start.
    ts = subprocess.Popen([node, TS_WORKER, url, typ, "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    gw = subprocess.Popen([godrain, "-server", url, "-type", typ, "-concurrency", "4", "-result", "go"],
                          stderr=subprocess.PIPE, text=True)
    t = threading.Thread(target=w.run, kwargs={"signals": False}, daemon=True)
    t.start()
    ts_out = Lines(ts)
    try:
        wait_for(lambda: ts_out.has("running") or ts.poll() is not None, timeout=30, what="the TypeScript worker to start")
        assert ts.poll() is None, "the TypeScript worker ended: %s" % ts.stderr.read()
        spec = "flood:600," + ",".join("%s:15" % g for g in small)
        subprocess.run([godrain, "-server", url, "-type", typ, "-add", spec], check=True, timeout=60)
        wait_for(lambda: sum(x.jobs for x in c.stats().counts if x.type == typ and x.state == "completed") == total,
                 timeout=60, what="every job to complete")
    finally:
        # SIGTERM to every worker at once, then each is waited for.
        w.stop()
        for p in (gw, ts):
            if p.poll() is None:
                p.terminate()
        t.join(15)
        stop(gw, "Go", signalled=True)
        stop(ts, "TypeScript", signalled=True)
    assert not t.is_alive(), "the Python worker did not stop"
    ts_lines = ts_out.join(5)
    assert ts_lines[-1:] == ["stopped"], ts_lines[-3:]
    ts_ran = [int(line.split(" ", 1)[1]) for line in ts_lines if line.startswith("ran ")]

    jobs = list(c.iter_jobs(type=typ, limit=1000))
    assert len(jobs) == total
    assert all(j.state == "completed" and j.attempt == 1 and not j.errors for j in jobs)
    by = {"python": 0, "typescript": 0, "go": 0}
    for j in jobs:
        by[j.result] += 1
    # Each job ran once: one attempt each, and each worker's own count of
    # the jobs it ran matches the results that name it.
    assert by["python"] == len(ran) and all(n == 1 for n in ran.values())
    assert by["typescript"] == len(ts_ran) == len(set(ts_ran))
    assert {j.id for j in jobs if j.result == "typescript"} == set(ts_ran)
    assert all(n > 0 for n in by.values()), "a worker took no jobs: %s" % by
    # Fairness: the groups take turns, so the small groups are done while
    # most of the flood is still to run.
    flood = sorted(j.finished_at for j in jobs if j.group == "flood")
    small_done = max(j.finished_at for j in jobs if j.group in small)
    assert small_done <= flood[len(flood) // 5], "the small groups finished after a fifth of the flood"
    print("jobs by worker:", by)
