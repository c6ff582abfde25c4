#!/usr/bin/env bash
# Runs the AuthZEN working group's Todo interop scenario through package
# authzen against two real PDPs, each fetched from its registry and run on
# 127.0.0.1 only, and prints a pass/fail table per PDP, one row a decision:
#
#   - OpenFGA 1.22.1, built from the Go module proxy, with an in-memory
#     datastore (TestTodoInteropOpenFGA);
#   - Cerbos 0.55.0, the static binary of the npm package
#     @cerbos/cerbos-linux-x64, with the policies of
#     authzen/testdata/todo/cerbos (TestTodoInteropCerbos).
#
# Neither takes a credential: the client is made authzen.WithoutCredentials.
# The PDP processes are started and stopped by the Go tests (built only with
# -tags interop); nothing is left running.
#
# The first run builds OpenFGA into .bin/ (about 3 minutes and 1.4 GB of Go
# build cache on 2 cores) and unpacks Cerbos there (32 MB); later runs reuse
# them. Cerbos needs Linux on x86-64, and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .bin

openfga="$PWD/.bin/openfga"
if [[ ! -x "$openfga" ]]; then
	echo "building OpenFGA v1.22.1 into .bin/ ..." >&2
	GOBIN="$PWD/.bin" go install github.com/openfga/openfga/cmd/openfga@v1.22.1
fi

cerbos_version=0.55.0
cerbos="$PWD/.bin/cerbos-$cerbos_version"
if [[ ! -x "$cerbos" ]]; then
	echo "fetching Cerbos $cerbos_version (npm @cerbos/cerbos-linux-x64) into .bin/ ..." >&2
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "@cerbos/cerbos-linux-x64@$cerbos_version" >/dev/null && tar xzf ./*.tgz)
	install -m 0755 "$tmp/package/cerbos-linux-x64" "$cerbos"
fi

AUTHZEN_OPENFGA_BIN="$openfga" AUTHZEN_CERBOS_BIN="$cerbos" \
	go test -tags interop -count=1 -run '^TestTodoInterop(OpenFGA|Cerbos)$' -v ./authzen/ |
	sed -n 's/^ \{8\}\(|.*\|OpenFGA\|Cerbos\|[A-Za-z]*: [0-9]* rows: .*\)$/\1/p; /^\(--- \|ok\|FAIL\)/p'
