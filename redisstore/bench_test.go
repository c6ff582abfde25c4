package redisstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// unchargedStore hides RememberCharged: the Verifier calls Remember.
type unchargedStore struct{ s *ReplayStore }

func (u unchargedStore) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	return u.s.Remember(ctx, key, until)
}

// BenchmarkReplayRecord measures the replay step of a Verifier (recording
// a checked proof) in its in-memory cache and on Redis (a real
// redis-server on loopback, when one is on PATH), one caller at a time and
// from parallel callers. Signature checks are left out: they cost the same
// either way.
func BenchmarkReplayRecord(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client()
	store := NewReplayStore(c, "bench:")
	if err := c.Set(b.Context(), store.since, time.Now().Add(-time.Hour).UnixMilli(), 0).Err(); err != nil {
		b.Fatal(err)
	}
	signer := testkit.Must(dpop.GenerateKey())(b)
	for _, tc := range []struct {
		name string
		opts []dpop.Option
	}{
		{"memory", []dpop.Option{dpop.WithReplayCacheSize(10_000_000), dpop.WithReplayKeyLimit(10_000_000)}},
		{"redis", []dpop.Option{dpop.WithReplayStore(store), dpop.WithReplayKeyLimit(1 << 40)}},
		// uncharged: the store without RememberCharged (a SET instead of
		// the charging script), as before a-rep13 F2's fix.
		{"redis-uncharged", []dpop.Option{dpop.WithReplayStore(unchargedStore{store})}},
	} {
		v, err := dpop.NewVerifier(tc.opts...)
		if err != nil {
			b.Fatal(err)
		}
		var seq atomic.Int64
		next := func() *dpop.Result {
			return &dpop.Result{Thumbprint: signer.Thumbprint(),
				Claims: dpop.Claims{ID: tc.name + strconv.FormatInt(seq.Add(1), 10), IssuedAt: time.Now()}}
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := v.RecordContext(b.Context(), next()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := v.RecordContext(b.Context(), next()); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
