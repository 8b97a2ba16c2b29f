#!/usr/bin/env bash
# Runs rota's whole test suite: formatting, vet, staticcheck, every Go
# test with the race detector, and the Python client's tests. Installs what is missing first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$PATH:/usr/local/go/bin" CGO_ENABLED=1
export PATH="$PATH:$(go env GOPATH)/bin"

# The PostgreSQL store's tests run against ROTA_TEST_POSTGRES when it is set,
# and otherwise against the local cluster, started here if needed, with a
# role and database of their own. ROTA_REQUIRE_POSTGRES makes them fail
# rather than skip when no database is given.
if [ -z "${ROTA_TEST_POSTGRES:-}" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  as_postgres() { (cd / && if [ -z "$sudo" ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi); }
  pgver=$(ls /usr/lib/postgresql | sort -V | tail -n1)
  cluster() { pg_lsclusters -h | awk -v v="$pgver" '$1 == v && $2 == "main"'; }
  [ -n "$(cluster)" ] || $sudo pg_createcluster "$pgver" main >/dev/null
  [ "$(cluster | awk '{print $4}')" = online ] || $sudo pg_ctlcluster "$pgver" main start
  pgport=$(cluster | awk '{print $3}')
  psql_admin() { as_postgres psql -p "$pgport" -v ON_ERROR_STOP=1 -qAt "$@"; }
  [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'rota'")" = 1 ] ||
    psql_admin -c "CREATE ROLE rota LOGIN PASSWORD 'rota'"
  [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'rota_test'")" = 1 ] ||
    psql_admin -c "CREATE DATABASE rota_test OWNER rota"
  export ROTA_TEST_POSTGRES="postgres://rota:rota@127.0.0.1:$pgport/rota_test?sslmode=disable"
  # The benchmark workloads' tests on PostgreSQL leave their jobs behind:
  # a database of their own, emptied first.
  psql_admin -c "DROP DATABASE IF EXISTS rota_bench_test WITH (FORCE)" -c "CREATE DATABASE rota_bench_test OWNER rota"
  export ROTA_BENCH_POSTGRES="postgres://rota:rota@127.0.0.1:$pgport/rota_bench_test?sslmode=disable"
fi
export ROTA_REQUIRE_POSTGRES=1
# A clone with its history runs the rolling-upgrade test (it builds the
# previous release from that history); a shallow one that setup could not
# deepen skips it, saying why.
if [ "$(git -C "$(dirname "$0")/.." rev-parse --is-shallow-repository 2>/dev/null)" = false ]; then
  export ROTA_REQUIRE_HISTORY=1
fi
# The dashboard's browser tests fail rather than skip without Chromium.
export ROTA_REQUIRE_CHROMIUM=1
# bench/peers's smoke test fails rather than skips without redis-server.
export ROTA_REQUIRE_REDIS=1
# The Python client's interop test fails rather than skips without node
# and the TypeScript client's dist/ (its TypeScript worker).
export ROTA_REQUIRE_NODE=1

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*'))
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...
staticcheck ./...
go test -race -count=1 -timeout 10m ./...

# The side-by-side harness is a module of its own (so that rota's does not
# depend on River or Asynq); its smoke test runs every system at a tiny size.
# Without -race: it times real processes, and River and Asynq are not ours.
(cd bench/peers && go vet ./... && staticcheck ./... && go test -count=1 -timeout 5m ./...)

# The TypeScript client: its generated types and committed dist/ match the
# OpenAPI document and its sources, and its suite passes against real
# servers (SQLite, and PostgreSQL through ROTA_TEST_POSTGRES).
(cd clients/typescript && npm run --silent check && npm test)

# The Python client's suite (Debian's pytest, for /usr/bin/python3) against
# a real rota serve, on SQLite and on ROTA_TEST_POSTGRES, with the interop
# test (a Go producer; Python, TypeScript and Go workers). Its models'
# drift from the OpenAPI document is checked above, by go test
# (clients/python/gen).
/usr/bin/python3 -m pytest -q -p no:cacheprovider clients/python
