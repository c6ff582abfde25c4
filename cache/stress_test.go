package cache_test

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestEveryOperationAtOnceServesOnlyLiveOwnValues mixes every operation on a small cache (so that
// evictions, sweeps, rehashes of both indexes, group forgetting and
// re-making happen all the time) from many goroutines under a stepped
// clock, and checks on every hit that the value is the pair's own and not
// expired, and on private groups that RemoveGroup, Purge and Writer fences
// hold at once.
func TestEveryOperationAtOnceServesOnlyLiveOwnValues(t *testing.T) {
	everyOperationAtOnce(t, stressRun[string]{
		maxBytes: 48 * 400,
		group:    func(i int) string { return "g" + strconv.Itoa(i%40) },
		key:      func(i int) string { return "k" + strconv.Itoa(i%6) },
		private:  func(w int) string { return "private-" + strconv.Itoa(w) },
		name:     func(g string) string { return g },
		pass:     func(g string, _ *[]byte) string { return g },
		passKey:  func(k string, _ *[]byte) string { return k },
	})
}

// TestEveryOperationOnCopiedStringsServesOnlyLiveOwnValues: the cache's
// own copies of keys and of the strings of group values are the caller's
// values for good. Every operation at once on a cache of struct groups (a
// scheme and a token) whose tokens and keys have lengths at every edge of
// the copies' layout (0, 1, 8, 16, 505..1024, past 1 KiB), passed as views
// of reused buffers that are overwritten right after each call, with
// collections forced between steps: every hit is its own pair's unexpired
// value, fences hold, Bytes stays within the bound, and a Purge with
// nothing held leaves nothing counted.
func TestEveryOperationOnCopiedStringsServesOnlyLiveOwnValues(t *testing.T) {
	tokLens := []int{0, 1, 7, 8, 16, 43, 400, 440, 448, 900, 946, 947, 960, 1100, 3000}
	keyLens := []int{0, 1, 8, 16, 100, 430, 440, 900, 928, 929, 936, 1025, 2000}
	everyOperationAtOnce(t, stressRun[token]{
		maxBytes: 48 * 4000,
		group: func(i int) token {
			i %= 30
			n := tokLens[i%len(tokLens)]
			s := strconv.Itoa(i)
			if n < len(s) {
				// short tokens: distinct by scheme instead
				return token{"S" + s, strings.Repeat("t", n)}
			}
			return token{"Bearer", s + strings.Repeat("t", n-len(s))}
		},
		key: func(i int) string {
			i %= len(keyLens)
			n := keyLens[i]
			s := strconv.Itoa(i)
			if n < len(s) {
				return strings.Repeat("k", n) // keys may repeat: fine, the value records the key
			}
			return s + strings.Repeat("k", n-len(s))
		},
		private: func(w int) token {
			return token{"private", strconv.Itoa(w) + strings.Repeat("p", 40+w*900)}
		},
		name:    func(g token) string { return g.scheme + "|" + g.value },
		pass:    func(g token, buf *[]byte) token { return token{g.scheme, view(g.value, buf)} },
		passKey: view,
		views:   true,
	})
}

// The work of one everyOperationAtOnce run, per goroutine: about what a
// worker did in one and a half seconds of the three the runner used to
// run for under -race on a quiet 2-core machine (shared workers 2,500 to
// 11,000 operations, fence checkers 12,000 to 49,000 in three), which was
// more on a fast machine and less beside a CPU hog; a count makes the run
// the same everywhere.
const (
	sharedOps  = 1500
	privateOps = 6000
)

// stressRun says how everyOperationAtOnce names the groups and keys of a
// cache of groups G and how it passes them to the cache.
type stressRun[G comparable] struct {
	maxBytes int64
	group    func(i int) G      // a shared group, for any i
	key      func(i int) string // a key, for any i
	private  func(w int) G      // the private group of worker w
	name     func(g G) string   // g as text, with no "|" past the group's own
	// pass and passKey return what is handed to the cache for a group or
	// a key: the values themselves, or views of buf.
	pass    func(g G, buf *[]byte) G
	passKey func(k string, buf *[]byte) string
	// views: the buffers are overwritten after every call.
	views bool
}

// everyOperationAtOnce runs every operation at once on a small cache of
// run's groups (sharedOps operations from each of six workers, privateOps
// from each of two fence checkers: a fixed amount of work, the same on a
// fast machine and a loaded one) under a stepped clock with collections
// forced between steps, and fails on a hit that is not its own pair's
// unexpired value, on a fence that does not hold at once, on Bytes past the
// bound, and on anything counted after a Purge with nothing held.
func everyOperationAtOnce[G comparable](t *testing.T, run stressRun[G]) {
	var ns atomic.Int64
	ns.Store(1 << 40)
	now := func() time.Time { return time.Unix(0, ns.Load()) }
	c := testkit.Must(cache.New[G, string, string](48, cache.WithClock(now), cache.WithMaxBytes(run.maxBytes)))(t)
	const tick = time.Millisecond
	// The clock steps until every worker is done.
	var done atomic.Bool
	var fails atomic.Int64
	fail := func(format string, a ...any) {
		if fails.Add(1) <= 10 {
			t.Errorf(format, a...)
		}
	}
	val := func(g G, k string, exp int64) string {
		return run.name(g) + "|" + k + "|" + strconv.FormatInt(exp, 10)
	}
	check := func(g G, k, v string, before int64) {
		want := run.name(g) + "|" + k + "|"
		if !strings.HasPrefix(v, want) {
			fail("Get(%.20q, %.20q/%d) = %.60q: another pair's value", run.name(g), k, len(k), v)
			return
		}
		exp, _ := strconv.ParseInt(v[len(want):], 10, 64)
		if before >= exp {
			fail("Get served an expired value at %d (expiry %d)", before, exp)
		}
	}
	scribble := func(bufs ...[]byte) {
		for _, buf := range bufs {
			for i := range buf {
				buf[i] = '#'
			}
		}
	}
	if !run.views {
		scribble = func(...[]byte) {}
	}
	// still keeps the clock from stepping while a c.Add is under way, so
	// that the expiry its value records is the one the cache computes: on a
	// loaded machine (or under -race) an Add may wait for the cache's lock
	// through any number of steps.
	var still sync.RWMutex
	var wg, clockWG sync.WaitGroup
	// The clock: never more than a tick per step.
	clockWG.Add(1)
	go func() {
		defer clockWG.Done()
		for i := 0; !done.Load(); i++ {
			still.Lock()
			ns.Add(int64(tick))
			still.Unlock()
			if i%50 == 0 {
				runtime.GC()
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			var gb, kb []byte
			for range sharedOps {
				g, k := run.group(r.IntN(1<<20)), run.key(r.IntN(1<<20))
				gv, kv := run.pass(g, &gb), run.passKey(k, &kb)
				switch op := r.IntN(100); {
				case op < 40:
					before := ns.Load()
					if v, ok := c.Get(gv, kv); ok {
						check(g, k, v, before)
					}
				case op < 55:
					grp := c.Lookup(gv)
					scribble(gb)
					before := ns.Load()
					if v, ok := grp.Get(kv); ok {
						check(g, k, v, before)
					}
				case op < 60:
					grp := c.Pin(gv)
					scribble(gb)
					for range 4 {
						before := ns.Load()
						if v, ok := grp.Get(kv); ok {
							check(g, k, v, before)
						}
					}
					grp.Unpin()
				case op < 82:
					ttl := time.Duration(1+r.IntN(40)) * tick
					// The real expiry: the clock does not step until Add
					// has read it.
					still.RLock()
					later := ns.Load() + int64(ttl)
					c.Add(gv, kv, val(g, k, later), ttl, int64(r.IntN(200)))
					still.RUnlock()
				case op < 87:
					wr := c.Writer(gv)
					scribble(gb)
					ttl := time.Duration(1+r.IntN(40)) * tick
					later := ns.Load() + int64(ttl) + int64(tick)
					wr.Add(kv, val(g, k, later), ttl, 10)
					wr.Close()
				case op < 92:
					c.Remove(gv, kv)
				case op < 98:
					c.RemoveGroup(gv)
				case op < 99:
					c.Purge()
				default:
					_ = c.Len() + int(c.Bytes())
					_ = c.Stats()
				}
				scribble(gb, kb)
			}
		}()
	}
	// Private groups: fences must hold at once.
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var gb, kb []byte
			p := run.private(w)
			for i := range privateOps {
				k := run.key(i)
				pv, kv := run.pass(p, &gb), run.passKey(k, &kb)
				c.Add(pv, kv, val(p, k, 1<<62), time.Hour, 1)
				scribble(gb, kb)
				pv, kv = run.pass(p, &gb), run.passKey(k, &kb)
				switch i % 4 {
				case 0:
					c.RemoveGroup(pv)
					if v, ok := c.Get(pv, kv); ok {
						fail("Get after RemoveGroup served %.40q", v)
					}
					if v, ok := c.Lookup(pv).Get(kv); ok {
						fail("Lookup.Get after RemoveGroup served %.40q", v)
					}
				case 1:
					wr := c.Writer(pv)
					c.RemoveGroup(pv)
					if wr.Add(kv, val(p, k, 0), time.Hour, 1) {
						fail("a Writer made before RemoveGroup stored")
					}
					wr.Close()
					if v, ok := c.Get(pv, kv); ok {
						fail("Get after RemoveGroup (writer) served %.40q", v)
					}
				case 2:
					pin := c.Pin(pv)
					c.RemoveGroup(pv)
					if v, ok := pin.Get(kv); ok {
						fail("pinned Get after RemoveGroup served %.40q", v)
					}
					pin.Unpin()
				case 3:
					_ = c.Remove(pv, kv) // false when evicted meanwhile
					if v, ok := c.Get(pv, kv); ok {
						fail("Get after Remove served %.40q", v)
					}
				}
				scribble(gb, kb)
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	clockWG.Wait()
	if b := c.Bytes(); b > run.maxBytes {
		t.Errorf("Bytes %d past the bound", b)
	}
	// Quiescent: the counts must agree with a full scan.
	c.Purge()
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("after Purge with nothing held: Len %d, Bytes %d", c.Len(), c.Bytes())
	}
}

// view copies s into buf (grown as needed) and returns a string over buf's
// bytes: what a caller that builds keys and tokens in one reused buffer
// passes, and then overwrites.
func view(s string, buf *[]byte) string {
	if cap(*buf) < len(s) {
		*buf = make([]byte, len(s), 2*len(s)+8)
	}
	*buf = (*buf)[:len(s)]
	copy(*buf, s)
	if len(s) == 0 {
		return ""
	}
	return unsafe.String(&(*buf)[0], len(s))
}
