"""The README's producer and worker, installed with pip into a fresh venv
and run as they are written."""

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import CLIENT_DIR

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def examples():
    text = open(os.path.join(CLIENT_DIR, "README.md")).read()
    found = dict(re.findall(r"<!-- example: (\S+) -->\s*```python\n(.*?)```", text, re.S))
    assert set(found) == {"producer.py", "worker.py"}, found.keys()
    for name, code in found.items():
        assert len(code.strip().splitlines()) <= 12, "%s is longer than ten lines or so" % name
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A venv with the package installed as the README says (pip install
    --no-build-isolation), from a copy, so the build leaves nothing in the
    repository."""
    tmp = tmp_path_factory.mktemp("venv")
    src = tmp / "src"
    shutil.copytree(CLIENT_DIR, str(src), ignore=shutil.ignore_patterns("tests", "gen", "bench", "build", "*.egg-info",
                                                                         "__pycache__"))
    env_dir = tmp / "env"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    py = str(env_dir / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "-q", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return py


def test_the_readme_examples_run_as_written(venv, sqlite_server, tmp_path):
    code = examples()
    for name, text in code.items():
        (tmp_path / name).write_text(text)
    env = dict(os.environ, ROTA_SERVER=sqlite_server.url)
    env.pop("PYTHONPATH", None)
    # From another directory, so that the installed package is the one imported.
    w = subprocess.Popen([venv, str(tmp_path / "worker.py")], env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p = subprocess.run([venv, str(tmp_path / "producer.py")], env=env, cwd=str(tmp_path), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert re.fullmatch(r"added job \d+", lines[0]) and lines[1] == "completed {'sent': True}", p.stdout
        where = subprocess.run([venv, "-c", "import rota; print(rota.__file__)"], env=env, cwd=str(tmp_path),
                               capture_output=True, text=True)
        assert "site-packages" in where.stdout, where.stdout
    finally:
        w.send_signal(signal.SIGTERM)
        out, err = w.communicate(timeout=20)
    assert w.returncode == 0, err
    assert "sending to ann@example.com" in out
