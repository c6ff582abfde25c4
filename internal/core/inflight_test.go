package core

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCallsInFlightNeverEvictCachedDecisions: Send makes a Writer of the
// call's token (holding its group, which counts the cache's copy of the
// token) before the request goes out, for any per-call token, junk
// included: the 401 comes only after the round trip. Groups that hold no
// entry make nothing evicted, so 200 requests with 8 KiB junk tokens in
// flight, over a 1 MiB bound between them, leave the client's own token's
// 50 cached GRANTs in place when another token's decision is stored.
func TestCallsInFlightNeverEvictCachedDecisions(t *testing.T) {
	const bound = 1 << 20
	d, err := newDecisions(&Settings{CacheSize: 10_000, CacheMaxBytes: bound, AllowTTL: time.Hour, DenyTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	own := bearer("own-token")
	pin := d.pin(own)
	defer pin.Unpin()
	w := d.writer(own)
	for i := range 50 {
		w.Add(fmt.Sprintf("\x00\x08\x00\x04orders/%05dread", i), true)
	}
	w.Close()
	var inflight []*Writer
	for i := range 200 {
		inflight = append(inflight, d.writer(bearer(fmt.Sprintf("junk-%04d-%s", i, strings.Repeat("j", MaxCachedToken-16)))))
	}
	other := d.writer(bearer("another-valid-token"))
	other.Add("\x00\x08\x00\x04orders/00001read", true)
	other.Close()
	_, n, bytes := d.stats()
	kept := 0
	for i := range 50 {
		if _, ok := pin.Get(fmt.Sprintf("\x00\x08\x00\x04orders/%05dread", i)); ok {
			kept++
		}
	}
	t.Logf("with 200 junk requests in flight: %d entries, Bytes %d (bound %d); own token keeps %d of 50", n, bytes, bound, kept)
	for _, w := range inflight {
		w.Close()
	}
	if kept < 50 {
		t.Errorf("junk tokens in flight evicted %d of the own token's 50 cached decisions (Bytes %d over a %d bound)", 50-kept, bytes, bound)
	}
}
