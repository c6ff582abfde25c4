package cache_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/cache"
)

// A cache of many callers holds one or two decisions per token: such a
// token must cost little beyond its strings. With 43-character tokens (an
// opaque OAuth access token) of one entry each, the heap grows by at most
// 240 bytes an entry beyond the tokens' and keys' own bytes, which the
// caller made and lets go once they are added (the cache keeps its own
// copies, in the entry's and the group's allocations): the entry, its
// group and their places in the cache's indexes. (A Go map of the same
// pairs takes about 75.)
func TestOneEntryGroupsCostLittle(t *testing.T) {
	const n = 24_000 // the indexes' tables between a quarter and a half full
	tokens := make([]token, n)
	keys := make([]string, n)
	for i := range tokens {
		tokens[i] = token{"Bearer", fmt.Sprintf("%s%08d", strings.Repeat("t", 35), i)}
		keys[i] = fmt.Sprintf("\x00\x08\x00\x04orders/%dread", i%1000)
	}
	c, err := cache.New[token, string, bool](n)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range tokens {
		c.Add(tokens[i], keys[i], true, time.Hour, 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perEntry := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("%.1f bytes an entry", perEntry)
	if perEntry > 240 {
		t.Errorf("a token of one entry costs %.1f bytes of bookkeeping, want at most 240", perEntry)
	}
	runtime.KeepAlive(c)
}
