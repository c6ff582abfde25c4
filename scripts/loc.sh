#!/usr/bin/env bash
# Code lines of Go at a revision (lines neither blank nor //-comment only),
# non-test / test / total: the measure of issue 25's "the whole tree is
# smaller for the same behaviour". Usage: scripts/loc.sh [REV] (default HEAD).
# With --merge REV, the change a merge made to its first parent.
set -euo pipefail
cd "$(dirname "$0")/.."
count() {
	local tmp
	tmp=$(mktemp -d)
	git archive "$1" | tar -x -C "$tmp"
	cnt() { find "$tmp" -name '*.go' "$@" -print0 | xargs -0 cat | grep -v '^\s*$' | grep -cv '^\s*//'; }
	local nt t
	nt=$(cnt ! -name '*_test.go')
	t=$(cnt -name '*_test.go')
	rm -rf "$tmp"
	echo "$nt $t $((nt + t))"
}
if [ "${1:-}" = --merge ]; then
	read -r _ _ before < <(count "$2^1")
	read -r _ _ after < <(count "$2")
	echo "$2 $before -> $after: $((after - before))"
	exit
fi
rev=${1:-HEAD}
read -r nt t total < <(count "$rev")
echo "$rev nontest=$nt test=$t total=$total"
