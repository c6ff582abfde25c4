package redisstore

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// Fault modes of a faultProxy.
const (
	pass      int32 = iota // forward both ways
	blackhole              // take the replicas' bytes and answer nothing (a hung or partitioned Redis)
	reset                  // cut every connection, and each new one at once
)

// faultProxy is a TCP proxy between the replicas and Redis on loopback
// whose fault a test switches: the faults redistest's Stop and Restart
// cannot make.
type faultProxy struct {
	addr   string
	target string
	mode   atomic.Int32

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.mode.Load() == reset {
				_ = c.Close()
				continue
			}
			p.wg.Go(func() { p.link(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

// link forwards c to the target until either side closes.
func (p *faultProxy) link(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.copy(up, c) })
	wg.Go(func() { p.copy(c, up) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// copy forwards src to dst, dropping what arrives while blackholed.
func (p *faultProxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && p.mode.Load() == pass {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *faultProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *faultProxy) set(mode int32) {
	p.mode.Store(mode)
	if mode != pass {
		p.closeAll() // a blackholed connection must not finish a reply begun before
	}
}

// TestReplayAttackThroughRedisFaults: replicas reach Redis through a
// proxy that goes down, hangs and resets connections, and Redis restarts
// empty mid-run, while an attacker sends every proof it saw accepted to
// every replica again, in every phase. No proof is ever accepted twice;
// each fault refuses proofs with ErrReplayStoreUnavailable (never
// ErrReplay's opposite: an acceptance); and once the faults are gone the
// same replicas, not rebuilt, accept fresh proofs again.
func TestReplayAttackThroughRedisFaults(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	proxy := startFaultProxy(t, srv.Addr())
	now := newClockAt(time.Now())
	const replicas = 3
	vs := make([]*dpop.Verifier, replicas)
	var marker *ReplayStore
	for i := range vs {
		c := redis.NewClient(&redis.Options{Addr: proxy.addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 200 * time.Millisecond, PoolSize: 4})
		t.Cleanup(func() { _ = c.Close() })
		s := NewReplayStore(c, "")
		marker = s
		vs[i] = replica(t, s, now.Now)
	}
	settle := func() {
		require.NoError(t, srv.Client().Set(t.Context(), marker.since, now.Now().Add(-time.Hour).UnixMilli(), 0).Err())
	}
	settle()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)

	const clean, faulted = 5 * time.Second, 150 * time.Millisecond
	var seen []dpop.Request // every proof sent so far
	accepted := map[string]int{}
	// round sends k fresh proofs and every proof seen so far to every
	// replica at once, each call bounded by limit, and returns how many
	// calls were accepted and refused as unavailable. Clean rounds have
	// seconds (a loaded machine must not turn them into faults), faulted
	// ones 150 ms.
	round := func(k int, limit time.Duration) (ok, unavailable int) {
		for range k {
			seen = append(seen, proofAt(t, signer, now.Now()))
		}
		type result struct {
			proof string
			err   error
		}
		results := make(chan result, len(seen)*replicas)
		var wg sync.WaitGroup
		for _, req := range seen {
			for _, v := range vs {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), limit)
					defer cancel()
					_, err := v.Verify(ctx, req)
					results <- result{req.Proofs[0], err}
				})
			}
		}
		wg.Wait()
		close(results)
		for r := range results {
			switch {
			case r.err == nil:
				accepted[r.proof]++
				ok++
				require.Equal(t, 1, accepted[r.proof], "a proof was accepted twice")
			case errors.Is(r.err, dpop.ErrReplayStoreUnavailable):
				unavailable++
			default:
				require.True(t, errors.Is(r.err, dpop.ErrReplay) || errors.Is(r.err, dpop.ErrIATTooOld), "%v", r.err)
			}
		}
		return ok, unavailable
	}

	ok, _ := round(4, clean)
	require.Equal(t, 4, ok, "clean: each fresh proof accepted once")

	for _, fault := range []struct {
		name string
		mode int32
	}{{"hung", blackhole}, {"reset", reset}} {
		proxy.set(fault.mode)
		ok, unavailable := round(2, faulted)
		require.Zero(t, ok, "%s: nothing accepted", fault.name)
		require.Positive(t, unavailable, "%s: refused as unavailable", fault.name)
		proxy.set(pass)
		// The fresh proofs, and those the fault refused (never recorded).
		ok, _ = round(2, clean)
		require.Equal(t, 4, ok, "after %s: proofs accepted again", fault.name)
	}

	srv.Stop()
	ok, _ = round(2, faulted)
	require.Zero(t, ok, "Redis down: nothing accepted")
	srv.Restart()
	// Seconds per call, so that the calls not made on a connection the
	// restart cut reach Redis and find its keyspace new.
	ok, unavailable := round(2, clean)
	require.Zero(t, ok, "Redis restarted empty: nothing it may have forgotten is accepted")
	require.Positive(t, unavailable)
	n, err := srv.Client().Exists(t.Context(), marker.since).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the replicas marked when the keyspace began")

	// 71 s after the marker (Redis's clock, which the replicas' agrees
	// with), the same replicas and clients serve fresh proofs; the old
	// ones are refused (round counts them as neither).
	now.Set(time.Now().Add(dpop.DefaultMaxSkew + dpop.ReplayStoreMargin + time.Second))
	ok, _ = round(3, clean)
	require.Equal(t, 3, ok, "recovered without rebuilding a replica")
	ok, _ = round(0, clean)
	require.Zero(t, ok, "and their replays refused")
}
