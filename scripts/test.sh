#!/usr/bin/env bash
# Runs rota's whole test suite: formatting, vet, and every test with the
# race detector. Installs what is missing first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$PATH:/usr/local/go/bin" CGO_ENABLED=1

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*'))
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -race -count=1 -timeout 10m ./...
