#!/usr/bin/env bash
# Installs what building and testing rota needs on a fresh Debian machine:
# Go (expected at /usr/local/go or on PATH), a C compiler for the cgo
# SQLite driver, PostgreSQL for the PostgreSQL store's tests, Chromium for
# the dashboard's browser tests, Redis for the Asynq runs of the side-by-side
# harness (bench/peers; the harness starts its own server), Node.js and npm
# for the TypeScript client (clients/typescript: its devDependencies with
# npm ci), Debian's Python with pytest, setuptools, wheel and venv for the
# Python client's tests, openssl for the clients' TLS tests' certificates, and
# staticcheck (a pinned version, with go install); and deepens a shallow
# git clone, for the upgrade test. Safe to run again; it installs only
# what is missing.
set -euo pipefail

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
  echo "setup: Go is not installed; install Go 1.26 or newer (go.mod asks for it) from https://go.dev/dl/" >&2
  exit 1
fi

need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
# The dashboard's tests drive a real headless browser.
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
# bench/peers runs Asynq, which needs a Redis server.
command -v redis-server >/dev/null || need+=(redis-server)
# The TypeScript client's suite: Node 18 or later (Debian's nodejs) and npm.
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v openssl >/dev/null || need+=(openssl)
# The Python client's tests (clients/python): Debian's Python and pytest,
# and what `pip install --no-build-isolation` builds the package with in a
# venv (setuptools, wheel, and venv's own pip). They are Debian's, for
# /usr/bin/python3: no Python package index is needed. A pyenv or other
# python3 earlier on PATH does not count.
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import pytest' 2>/dev/null || need+=(python3-pytest)
  /usr/bin/python3 -c 'import setuptools' 2>/dev/null || need+=(python3-setuptools)
  /usr/bin/python3 -c 'import wheel' 2>/dev/null || need+=(python3-wheel)
  /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
else
  need+=(python3 python3-pytest python3-setuptools python3-wheel python3-venv)
fi
if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${need[*]} from Debian's packages"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

# TestChaosUpgrade (e2e) builds the previous release from git history: a
# shallow clone (CI's checkout may be one) is deepened when it has a remote.
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$(git -C "$repo" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
  if [ -n "$(git -C "$repo" remote)" ]; then
    echo "setup: deepening the shallow clone (git fetch --unshallow) for TestChaosUpgrade"
    git -C "$repo" fetch --quiet --unshallow || echo "setup: git fetch --unshallow failed; TestChaosUpgrade will say how to get the previous release" >&2
  else
    echo "setup: a shallow clone without a remote: TestChaosUpgrade will say how to get the previous release" >&2
  fi
fi

# staticcheck, pinned so that CI's findings do not change under us.
staticcheck_version=v0.8.2
gobin="$(go env GOPATH)/bin"
if ! "$gobin/staticcheck" -version 2>/dev/null | grep -q "${staticcheck_version#v}"; then
  echo "setup: installing staticcheck $staticcheck_version"
  go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi

# The TypeScript client's devDependencies (the TypeScript compiler and
# Node's type declarations), as package-lock.json pins them.
tsclient="$(cd "$(dirname "$0")/.." && pwd)/clients/typescript"
if [ ! -d "$tsclient/node_modules" ] || [ "$tsclient/package-lock.json" -nt "$tsclient/node_modules/.package-lock.json" ]; then
  echo "setup: npm ci in clients/typescript"
  (cd "$tsclient" && npm ci --no-audit --no-fund --loglevel=error)
fi
