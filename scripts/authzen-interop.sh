#!/usr/bin/env bash
# Runs the AuthZEN working group's Todo interop scenario through package
# authzen against a real OpenFGA (1.22.1), built here and run on 127.0.0.1
# only, with an in-memory datastore. It prints a pass/fail table, one row a
# decision. The OpenFGA process is started and stopped by the Go test
# (TestTodoInteropOpenFGA); nothing is left running.
#
# The first run builds OpenFGA into .bin/ (about 3 minutes and 1.4 GB of Go
# build cache on 2 cores); later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$PWD/.bin/openfga"
if [[ ! -x "$bin" ]]; then
	echo "building OpenFGA v1.22.1 into .bin/ ..." >&2
	mkdir -p .bin
	GOBIN="$PWD/.bin" go install github.com/openfga/openfga/cmd/openfga@v1.22.1
fi
AUTHZEN_OPENFGA_BIN="$bin" go test -count=1 -run '^TestTodoInteropOpenFGA$' -v ./authzen/ |
	sed -n 's/^ *\(|.*\|[0-9]* rows: .*\)$/\1/p; /^\(--- \|ok\|FAIL\)/p'
