#!/usr/bin/env bash
# Installs what building and testing rota needs on a fresh Debian machine:
# Go (expected at /usr/local/go or on PATH), a C compiler for the cgo
# SQLite driver, and PostgreSQL for the PostgreSQL store's tests. Safe to
# run again; it installs only what is missing.
set -euo pipefail

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
  echo "setup: Go is not installed; install Go 1.25 or newer from https://go.dev/dl/" >&2
  exit 1
fi

need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${need[*]} from Debian's packages"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
