package cache

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestChurnKeepsEveryCountTrue: pins, writers, adds, removals, purges and
// groups not equal to themselves (a NaN), from six goroutines, with keys
// built in buffers rewritten after each call: at every check what the
// cache counts (Bytes, and the groups without entries, which make nothing
// evicted) is what the entries and groups it keeps cost (invariantsBroken),
// and a Purge with nothing held leaves nothing.
func TestChurnKeepsEveryCountTrue(t *testing.T) {
	type ident struct {
		Token string
		W     float64
	}
	c, _ := New[ident, string, bool](64, WithMaxBytes(16<<10))
	nan := func() float64 { var z float64; return z / z }()
	done := make(chan struct{})
	for gr := range 6 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 3000 {
				tok := ident{Token: strings.Repeat("x", (gr*97+i*31)%1500) + fmt.Sprint(i%7), W: 1}
				if i%11 == 0 {
					tok.W = nan
				}
				buf := []byte(fmt.Sprintf("key-%d-%s", i%13, strings.Repeat("k", i%300)))
				switch (i + gr) % 6 {
				case 0:
					p := c.Pin(tok)
					p.Get(string(buf))
					p.Unpin()
				case 1:
					w := c.Writer(tok)
					w.Add(string(buf), true, time.Hour, 0)
					for j := range buf {
						buf[j] = 'Z'
					}
					w.Add(string(buf), false, 0, 0)
					w.Close()
					w.Close()
				case 2:
					c.RemoveGroup(tok)
				case 3:
					if i%50 == 0 {
						c.Purge()
					}
				case 4:
					c.Add(tok, string(buf), true, time.Hour, int64(i%100))
				case 5:
					w := c.Writer(tok)
					c.Purge()
					w.Add(string(buf), true, time.Hour, 0)
					w.Close()
				}
				if i%97 == 0 {
					if err := invariantsBroken(c, -1); err != nil {
						t.Error(err)
						return
					}
				}
				if b := c.Bytes(); b > 16<<10+64<<10 {
					t.Errorf("Bytes %d", b)
					return
				}
			}
		}()
	}
	for range 6 {
		<-done
	}
	n := c.Len()
	b := c.Bytes()
	c.mu.Lock()
	live := c.groups.live
	c.mu.Unlock()
	t.Logf("after churn: %d entries, Bytes %d, %d groups", n, b, live)
	c.Purge()
	c.mu.Lock()
	live = c.groups.live
	c.mu.Unlock()
	if c.Len() != 0 || c.Bytes() != 0 || live != 0 {
		t.Errorf("after Purge with nothing held: %d entries, Bytes %d, %d groups kept", c.Len(), c.Bytes(), live)
	}
}
