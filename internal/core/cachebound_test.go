package core

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
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
	d := testkit.Must(newDecisions(&Settings{CacheSize: 10_000, CacheMaxBytes: bound, AllowTTL: time.Hour, DenyTTL: time.Hour}))(t)
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

// TestDigestIndexKeepsToTheByteBound: with an invalidator the digest index
// keeps a copy of every token a Writer was made for; tokens of groups the
// cache no longer holds are pruned once the index's tokens pass twice the
// byte bound, as well as once they pass twice the entry bound, so that
// 4,000 tokens of 8 KiB through a 1 MiB cache of 2,000 entries do not
// keep their 32 MB.
func TestDigestIndexKeepsToTheByteBound(t *testing.T) {
	const bound = 1 << 20
	const entries = 2000
	d := testkit.Must(newDecisions(&Settings{CacheSize: entries, CacheMaxBytes: bound, AllowTTL: time.Hour, DenyTTL: time.Hour}))(t)
	d.digests = newDigestIndex(entries, bound)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pad := strings.Repeat("t", MaxCachedToken-16)
	for i := range 2*entries - 1 {
		store(d, bearer(fmt.Sprintf("%s%016d", pad, i)), "k")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	_, n, bytes := d.stats()
	d.digests.mu.Lock()
	held := len(d.digests.ids)
	d.digests.mu.Unlock()
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("cache: %d entries, Bytes %d (bound %d); digest index holds %d tokens; heap grew %d", n, bytes, bound, held, grown)
	if grown > 4*bound {
		t.Errorf("heap grew %d bytes (%d tokens in the digest index) under a %d-byte WithCacheMaxBytes", grown, held, bound)
	}
}

// TestLeastByteBoundKeepsTheLongestDecision: MinCacheMaxBytes, the least
// WithCacheMaxBytes Validate takes, keeps a decision of the longest token
// and the longest key the cache keeps, and is tight: a byte less keeps
// none. So no accepted bound leaves a client caching nothing (a-client13
// F3: WithCacheMaxBytes(1) was accepted, and every call asked the gateway).
func TestLeastByteBoundKeepsTheLongestDecision(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		bound int64
		kept  bool
	}{
		{"MinCacheMaxBytes", MinCacheMaxBytes, true},
		{"a byte less", MinCacheMaxBytes - 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := testkit.Must(newDecisions(&Settings{CacheSize: 10, CacheMaxBytes: tt.bound, AllowTTL: time.Hour, DenyTTL: time.Hour}))(t)
			id := bearer(strings.Repeat("t", MaxCachedToken))
			key := strings.Repeat("k", MaxCachedKey)
			pin := d.pin(id)
			defer pin.Unpin()
			w := d.writer(id)
			w.Add(key, true)
			w.Close()
			if _, ok := pin.Get(key); ok != tt.kept {
				t.Errorf("under a bound of %d bytes the decision is kept: %v, want %v", tt.bound, ok, tt.kept)
			}
		})
	}
}
