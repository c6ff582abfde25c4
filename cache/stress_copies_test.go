package cache_test

import (
	"fmt"
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
)

// view copies s into buf (grown as needed) and returns a string over buf's
// bytes: what a caller that builds keys and tokens in one reused buffer
// passes. scribble then overwrites the bytes, as that caller's next use does.
func view(buf *[]byte, s string) string {
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

func scribble(buf []byte) {
	for i := range buf {
		buf[i] = '#'
	}
}

// TestEveryOperationOnCopiedStringsServesOnlyLiveOwnValues: the cache's
// own copies of keys and of the strings of group values are the caller's
// values for good. Every operation at once on a cache of struct groups (a
// scheme and a token) whose tokens and keys have lengths at every edge of
// the copies' layout (0, 1, 8, 16, 505..1024, past 1 KiB), passed as views
// of reused buffers that are overwritten right after each call, with
// collections forced between steps: every hit is its own pair's unexpired
// value, fences hold, Bytes stays within the bound, and a Purge with
// nothing held leaves nothing counted. (TestEveryOperationAtOnce... covers
// plain string groups given as their own strings.)
func TestEveryOperationOnCopiedStringsServesOnlyLiveOwnValues(t *testing.T) {
	var ns atomic.Int64
	ns.Store(1 << 40)
	now := func() time.Time { return time.Unix(0, ns.Load()) }
	c, err := cache.New[token, string, string](48, cache.WithClock(now), cache.WithMaxBytes(48*4000))
	if err != nil {
		t.Fatal(err)
	}
	const tick = time.Millisecond
	deadline := time.Now().Add(3 * time.Second)
	var fails atomic.Int64
	fail := func(format string, a ...any) {
		if fails.Add(1) <= 10 {
			t.Errorf(format, a...)
		}
	}
	tokLens := []int{0, 1, 7, 8, 16, 43, 400, 440, 448, 900, 946, 947, 960, 1100, 3000}
	keyLens := []int{0, 1, 8, 16, 100, 430, 440, 900, 928, 929, 936, 1025, 2000}
	groupOf := func(i int) token {
		n := tokLens[i%len(tokLens)]
		s := strconv.Itoa(i)
		if n < len(s) {
			// short tokens: distinct by scheme instead
			return token{"S" + s, strings.Repeat("t", n)}
		}
		return token{"Bearer", s + strings.Repeat("t", n-len(s))}
	}
	keyOf := func(i int) string {
		n := keyLens[i%len(keyLens)]
		s := strconv.Itoa(i)
		if n < len(s) {
			return strings.Repeat("k", n) // keys 0 and 1 and so on may repeat: fine, the value records the key
		}
		return s + strings.Repeat("k", n-len(s))
	}
	val := func(g token, k string, exp int64) string {
		return g.scheme + "|" + g.value + "|" + k + "|" + strconv.FormatInt(exp, 10)
	}
	check := func(g token, k, v string, before int64) {
		want := g.scheme + "|" + g.value + "|" + k + "|"
		if !strings.HasPrefix(v, want) {
			fail("Get(%.20q/%d, %.20q/%d) = %.60q: another pair's value", g.value, len(g.value), k, len(k), v)
			return
		}
		exp, _ := strconv.ParseInt(v[len(want):], 10, 64)
		if before >= exp {
			fail("Get served an expired value at %d (expiry %d)", before, exp)
		}
	}
	var still sync.RWMutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(deadline); i++ {
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
			r := rand.New(rand.NewPCG(uint64(w), 11))
			var gb, kb []byte
			for time.Now().Before(deadline) {
				g, k := groupOf(r.IntN(30)), keyOf(r.IntN(13))
				gv := token{g.scheme, view(&gb, g.value)}
				kv := view(&kb, k)
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
					if r.IntN(10) == 0 {
						c.Purge()
					}
				default:
					_ = c.Len() + int(c.Bytes())
					_ = c.Stats()
				}
				scribble(gb)
				scribble(kb)
			}
		}()
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var gb, kb []byte
			p := token{"private", fmt.Sprintf("%d%s", w, strings.Repeat("p", 40+w*900))}
			for i := 0; time.Now().Before(deadline); i++ {
				k := keyOf(i)
				pv, kv := token{p.scheme, view(&gb, p.value)}, view(&kb, k)
				c.Add(pv, kv, val(p, k, 1<<62), time.Hour, 1)
				scribble(gb)
				scribble(kb)
				pv, kv = token{p.scheme, view(&gb, p.value)}, view(&kb, k)
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
					_ = c.Remove(pv, kv)
					if v, ok := c.Get(pv, kv); ok {
						fail("Get after Remove served %.40q", v)
					}
				}
				scribble(gb)
				scribble(kb)
			}
		}()
	}
	wg.Wait()
	t.Logf("stats %+v", c.Stats())
	if b := c.Bytes(); b > 48*4000 {
		t.Errorf("Bytes %d past the bound", b)
	}
	c.Purge()
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("after Purge with nothing held: Len %d, Bytes %d", c.Len(), c.Bytes())
	}
}
