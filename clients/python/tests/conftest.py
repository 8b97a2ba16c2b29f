"""Fixtures: a real `rota serve` (built from this repository with go build)
on a loopback port, on SQLite, and on PostgreSQL when ROTA_TEST_POSTGRES
names a database."""

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(CLIENT_DIR))
sys.path.insert(0, CLIENT_DIR)

# The client reads these as the rota command does; the tests give what
# they mean explicitly.
for _name in ("ROTA_SERVER", "ROTA_TOKEN", "ROTA_CA"):
    os.environ.pop(_name, None)

SERVING = re.compile(r'msg="rota serving".* http=(https?://\S+)')


def go():
    for g in (shutil.which("go"), "/usr/local/go/bin/go"):
        if g and os.path.exists(g):
            return g
    pytest.fail("go is not installed: the tests build rota serve from this repository")


@pytest.fixture(scope="session")
def rota_bin(tmp_path_factory):
    """The rota binary, built once per run (go's build cache makes it quick)."""
    path = os.environ.get("ROTA_BIN")
    if path:
        return path
    out = str(tmp_path_factory.mktemp("bin") / "rota")
    env = dict(os.environ, CGO_ENABLED="1")
    subprocess.run([go(), "build", "-o", out, "./cmd/rota"], cwd=REPO, env=env, check=True)
    return out


class Server:
    """A running `rota serve`."""

    def __init__(self, rota_bin, data, store=None, args=()):
        self.bin = rota_bin
        self.data = data
        self.log = []
        cmd = [rota_bin, "serve", "--http", "127.0.0.1:0", "--data", data, *args]  # a later --http wins
        if store:
            cmd += ["--store", store]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        got = threading.Event()
        self.url = None

        def read():
            for line in self.proc.stderr:
                self.log.append(line)
                m = SERVING.search(line)
                if m and not got.is_set():
                    self.url = m.group(1)
                    got.set()
            got.set()

        threading.Thread(target=read, daemon=True).start()
        if not got.wait(30) or self.url is None:
            self.stop()
            raise RuntimeError("rota serve did not start:\n" + "".join(self.log))

    def rota(self, *args, token=None):
        """Runs a rota CLI command against this server."""
        cmd = [self.bin, "--server", self.url, *args]
        env = dict(os.environ)
        if token:
            env["ROTA_TOKEN"] = token
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _stores():
    stores = ["sqlite"]
    if os.environ.get("ROTA_TEST_POSTGRES"):
        stores.append("postgres")
    elif os.environ.get("ROTA_REQUIRE_POSTGRES"):
        stores.append("postgres-missing")
    return stores


@pytest.fixture(scope="session", params=_stores())
def server(request, rota_bin, tmp_path_factory):
    """A rota serve for the session: SQLite, and PostgreSQL too (each test
    that takes it runs on both)."""
    if request.param == "postgres-missing":
        pytest.fail("ROTA_REQUIRE_POSTGRES is set but ROTA_TEST_POSTGRES is not")
    store = os.environ["ROTA_TEST_POSTGRES"] if request.param == "postgres" else None
    s = Server(rota_bin, str(tmp_path_factory.mktemp("data")), store=store)
    s.store = request.param
    yield s
    s.stop()


@pytest.fixture(scope="session")
def sqlite_server(rota_bin, tmp_path_factory):
    s = Server(rota_bin, str(tmp_path_factory.mktemp("data")))
    yield s
    s.stop()


@pytest.fixture
def typ():
    """A job type of the test's own, so that tests sharing a server (and a
    PostgreSQL database) do not see each other's jobs."""
    return "t%s.job" % uuid.uuid4().hex[:10]


@pytest.fixture
def client(server):
    import rota

    c = rota.Client(server.url)
    yield c
    c.close()


@pytest.fixture
def own_server(rota_bin, tmp_path):
    """A rota serve of the test's own (SQLite), which it may stop and start
    again on the same address (restart)."""
    servers = []

    def start(*args, addr=None):
        s = Server(rota_bin, str(tmp_path / "data"), args=args)
        servers.append(s)
        return s

    start.servers = servers
    yield start
    for s in servers:
        s.stop()


def restart(server, rota_bin, down=0.0):
    """Stops server and starts it again on the same address and data; down
    is how long it stays stopped (seconds)."""
    server.stop()
    time.sleep(down)
    addr = server.url.split("://", 1)[1]
    again = Server(rota_bin, server.data, args=["--http", addr])
    return again


def run_in_thread(worker):
    t = threading.Thread(target=worker.run, kwargs={"signals": False}, daemon=True)
    t.start()
    return t


def wait_for(cond, timeout=10.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for %s" % what)
