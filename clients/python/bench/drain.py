"""Drains no-op jobs through one `rota serve` with the Python worker (its
threads and its asyncio forms) and the Go remote worker, alternating, in
the same run; prints each run and the medians (docs/benchmarks.md,
"Clients").

    /usr/bin/python3 clients/python/bench/drain.py --jobs 20000 --runs 3

Each run of each worker: a fresh `rota serve` on SQLite (a new data
directory), --jobs jobs added beforehand (not timed), then the worker
process is started and timed until the server counts every job completed
(GET /v1/stats every 10 ms), which includes the process's start. The
worker process's CPU time (user + system) is reported per job."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import rota  # noqa: E402
from conftest import Server  # noqa: E402


def build(tmp):
    go = shutil.which("go") or "/usr/local/go/bin/go"
    env = dict(os.environ, CGO_ENABLED="1")
    rota_bin, godrain = os.path.join(tmp, "rota"), os.path.join(tmp, "godrain")
    subprocess.run([go, "build", "-o", rota_bin, "./cmd/rota"], cwd=REPO, env=env, check=True)
    subprocess.run([go, "build", "-o", godrain, "./clients/godrain"], cwd=REPO, env=env, check=True)
    return rota_bin, godrain


def proc_cpu(pid):
    """A process's CPU time (user + system) in seconds, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_pressure():
    """The share of the last 10 s some task waited for a CPU (Linux PSI)."""
    try:
        with open("/proc/pressure/cpu") as f:
            return float(f.readline().split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return float("nan")


def drain_once(rota_bin, cmd_of, jobs, tmp):
    data = tempfile.mkdtemp(dir=tmp)
    s = Server(rota_bin, data)
    try:
        c = rota.Client(s.url)
        typ = "bench.drain"
        for i in range(0, jobs, 5000):
            c.add_many([{"type": typ} for _ in range(min(5000, jobs - i))])
        load = os.getloadavg()[0]
        server0 = proc_cpu(s.proc.pid)
        t0 = time.monotonic()
        p = subprocess.Popen(cmd_of(s.url, typ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while True:
            done = c.stats().by_state["completed"]
            if done >= jobs:
                break
            if p.poll() is not None:
                raise RuntimeError("the worker exited: %s" % p.stderr.read().decode())
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
        server_cpu = proc_cpu(s.proc.pid) - server0
        pressure = cpu_pressure()
        p.terminate()
        _, status, ru = os.wait4(p.pid, 0)
        cpu = ru.ru_utime + ru.ru_stime
        return {"seconds": elapsed, "jobs_per_s": jobs / elapsed, "worker_cpu_us_per_job": cpu / jobs * 1e6,
                "server_cpu_us_per_job": server_cpu / jobs * 1e6, "load1": load, "cpu_pressure": pressure}
    finally:
        s.stop()
        shutil.rmtree(data, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--py-concurrency", type=int, default=64)
    ap.add_argument("--go-concurrency", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rota-drain-")
    try:
        rota_bin, godrain = build(tmp)
        py = sys.executable
        pyworker = os.path.join(HERE, "pyworker.py")
        workers = [
            ("python threads c=%d" % a.py_concurrency,
             lambda url, typ: [py, pyworker, url, typ, str(a.py_concurrency), "threads"]),
            ("python asyncio c=%d" % a.py_concurrency,
             lambda url, typ: [py, pyworker, url, typ, str(a.py_concurrency), "asyncio"]),
            ("go remote c=%d" % a.go_concurrency,
             lambda url, typ: [godrain, "-server", url, "-type", typ, "-concurrency", str(a.go_concurrency)]),
        ]
        results = {name: [] for name, _ in workers}
        for run in range(a.runs):
            for name, cmd_of in workers:  # alternating: each run sees the same machine
                r = drain_once(rota_bin, cmd_of, a.jobs, tmp)
                results[name].append(r)
                line = {"run": run + 1, "worker": name, **{k: round(v, 2) for k, v in r.items()}}
                print(json.dumps(line) if a.json else
                      "run %d  %-22s %6.2f s  %8.0f jobs/s  worker CPU %6.1f µs/job  server CPU %6.1f µs/job"
                      "  load %.1f  CPU pressure %.0f%%" % (
                          run + 1, name, r["seconds"], r["jobs_per_s"], r["worker_cpu_us_per_job"],
                          r["server_cpu_us_per_job"], r["load1"], r["cpu_pressure"]),
                      flush=True)
        print("\nmedians of %d runs, %d jobs, %s, %d cores, Python %s:" % (
            a.runs, a.jobs, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(),
            sys.version.split()[0]))
        for name, rs in results.items():
            print("  %-22s %8.0f jobs/s  worker CPU %6.1f µs/job  server CPU %6.1f µs/job  (load %.1f-%.1f)" % (
                name, statistics.median(r["jobs_per_s"] for r in rs),
                statistics.median(r["worker_cpu_us_per_job"] for r in rs),
                statistics.median(r["server_cpu_us_per_job"] for r in rs),
                min(r["load1"] for r in rs), max(r["load1"] for r in rs)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
