package pep

import (
	"runtime"
	"testing"

	"github.com/orgauthz/orgauthz/internal/core"
)

// TestAttackADropOfManyShortWildcardsHoldsFarMoreThanItsNameBound: a drop
// is "remembered in bounded bytes" by bounding its name (maxDropName), but
// what the cache keeps is the name AND the Covers closure, which holds
// every included wildcard as a pair (two string headers, 32 bytes) plus
// its strings. A wildcard of a two-byte resource costs 4 bytes of name and
// about 40 bytes of coverage: ~1,000 of them pass the name bound unnoticed
// and one drop holds ~40 KiB (and every key an older writer adds is tested
// against all ~1,000 under the cache's lock, for each of up to 1,024
// remembered drops). A group keeps 1,024 drops while an older request is
// open: ~40 MiB per token, not the 4 MiB the bound suggests.
func TestAttackADropOfManyShortWildcardsHoldsFarMoreThanItsNameBound(t *testing.T) {
	const drops = 128
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	mk := func(d int) []pair {
		var qs []pair
		for i := range 1000 {
			// two-byte resources, each a separate allocation as a decoded
			// request's strings are, a different set for each call
			j := i + d
			qs = append(qs, pair{resource: string([]byte{alpha[j%62], alpha[(j/62)%62]})})
		}
		return qs
	}
	inputs := make([][]pair, drops)
	for d := range inputs {
		inputs[d] = mk(d)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	held := make([]core.Wide, drops)
	for d := range held {
		held[d] = wildcardsCover(inputs[d], "")
		if len(held[d].Name) > maxDropName {
			t.Fatalf("name %d bytes: the fallback should have applied", len(held[d].Name))
		}
	}
	// The inputs stay reachable: what is counted is what the drops add
	// to them (their names and coverage), not even the strings they keep.
	runtime.GC()
	runtime.ReadMemStats(&after)
	perDrop := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / drops
	runtime.KeepAlive(held)
	runtime.KeepAlive(inputs)
	if perDrop > 2*maxDropName {
		t.Errorf("one remembered drop holds %d bytes (its name is at most %d): 1,024 of them per token hold %d MiB",
			perDrop, maxDropName, perDrop*1024>>20)
	}
}
