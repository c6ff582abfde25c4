package replaymarker

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
)

// Reader reads [Script]'s answers for one of the two stores; its errors'
// messages begin with the store's prefix ("redisstore: ", "redis: ").
type Reader struct {
	prefix string
	// KeyspaceNew is the error of a proof or a record the store cannot
	// vouch for: it could have been taken before the keyspace's marker.
	// It wraps dpop.ErrKeyspaceNew, which tells callers that it is not an
	// outage.
	KeyspaceNew error
	// CallerAhead is the error of a call whose clock ran ahead of
	// Redis's by more than dpop.ReplayStoreMargin: what this process
	// stamps (a token's issue time, a proof window's start) could read as
	// issued after a loss of Redis's keys that came after it, so nothing
	// it asks about is vouched for until the clocks agree.
	CallerAhead error
	// ClockAhead is the error of a call whose clock Redis's ran ahead of:
	// records it still counts as live may have expired early in Redis.
	ClockAhead error
}

// NewReader returns the Reader of a store whose errors begin with prefix.
func NewReader(prefix string) *Reader {
	return &Reader{prefix: prefix,
		KeyspaceNew: fmt.Errorf("%sRedis lost its keys, restarted or failed over, or is new: %w", prefix, dpop.ErrKeyspaceNew),
		CallerAhead: errors.New(prefix + "this process's clock is ahead of Redis's (TIME) by more than dpop.ReplayStoreMargin, so what it stamps could read as issued after a loss of Redis's keys: check the time sources (NTP) of Redis and of this host"),
		ClockAhead:  errors.New(prefix + "Redis's clock (TIME, now or at its high-water) is ahead of this process's by more than dpop.ReplayStoreMargin, so records this process counts as live may have expired early: check the time sources (NTP) of Redis and of this host"),
	}
}

// Args are the script's arguments after the key: the margin and this
// process's clock reading, in Unix milliseconds, the highest generation
// of the marker g has seen, and whether the call wrote a record before
// the script (the script then raises the generation).
func Args(g *Generation, wrote bool) [4]string {
	raise := "0"
	if wrote {
		raise = "1"
	}
	return [4]string{strconv.FormatInt(dpop.ReplayStoreMargin.Milliseconds(), 10),
		strconv.FormatInt(time.Now().UnixMilli(), 10), strconv.FormatInt(g.n.Load(), 10), raise}
}

// Generation is the highest generation of a store's marker its answers
// have shown this process: [Script] refuses to vouch for a marker of a
// lower one, which only a keyspace rolled back to an older copy of itself
// has. Each store (one Redis keyspace) keeps its own; the zero value is
// ready (it has seen none). It is safe for concurrent use.
type Generation struct{ n atomic.Int64 }

// saw raises g to n.
func (g *Generation) saw(n int64) {
	for {
		old := g.n.Load()
		if n <= old || g.n.CompareAndSwap(old, n) {
			return
		}
	}
}

// Answer is the script's answer as a store's client holds it: its
// elements, or the error of the call that sent it (*redis.Cmd is one).
type Answer interface {
	StringSlice() ([]string, error)
}

// Result reads the answer to the script: the marker's time (Unix milliseconds)
// and whether the script began the keyspace now; ClockAhead when Redis's
// clock ran ahead of the caller's, CallerAhead when the caller's ran ahead
// of Redis's. It raises g to the marker's generation, when the answer has
// one.
func (m *Reader) Result(g *Generation, a Answer) (began int64, wrote bool, _ error) {
	res, err := a.StringSlice()
	if err != nil {
		return 0, false, fmt.Errorf("%sdeciding the replay keyspace's marker: %w", m.prefix, err)
	}
	if len(res) == 3 {
		gen, err := strconv.ParseInt(res[2], 10, 64)
		if err != nil || gen < 0 || gen > MaxGeneration {
			return 0, false, fmt.Errorf("%sdeciding the replay keyspace's marker: the script answered %q", m.prefix, res)
		}
		g.saw(gen)
		res = res[:2]
	}
	if len(res) == 2 {
		if began, err := strconv.ParseInt(res[0], 10, 64); err == nil {
			switch res[1] {
			case Vouched, Began:
				return began, res[1] == Began, nil
			case ClockAhead:
				return 0, false, m.ClockAhead
			case CallerAhead:
				return 0, false, m.CallerAhead
			}
		}
	}
	return 0, false, fmt.Errorf("%sdeciding the replay keyspace's marker: the script answered %q", m.prefix, res)
}

// Vouch reads the answer to the script as Result does and returns the
// marker's time when the keyspace began no later than since less
// dpop.ReplayStoreMargin, KeyspaceNew otherwise (and when the script
// began the keyspace now).
func (m *Reader) Vouch(g *Generation, since time.Time, a Answer) (int64, error) {
	began, wrote, err := m.Result(g, a)
	switch {
	case err != nil:
		return 0, err
	case wrote, began > since.UnixMilli()-dpop.ReplayStoreMargin.Milliseconds():
		return 0, m.KeyspaceNew
	}
	return began, nil
}

// First reads the answer to the script sent after a proof's SET NX that
// set the key, as Result does: true, nil only when the keyspace began
// early enough to hold every earlier record of a proof recorded until
// untilMillis by a store of lifetime (refused when the script began it
// now).
func (m *Reader) First(g *Generation, untilMillis int64, lifetime time.Duration, a Answer) (bool, error) {
	began, wrote, err := m.Result(g, a)
	switch {
	case err != nil:
		return false, err
	case wrote, untilMillis < began+lifetime.Milliseconds():
		return false, m.KeyspaceNew
	}
	return true, nil
}

// Same reads the answer to the script sent again after a one-time
// record's write as Result does: nil when the marker is still the one
// that vouched for the record at began (KeyspaceNew when the keys were
// lost between the two).
func (m *Reader) Same(g *Generation, began int64, a Answer) error {
	if now, wrote, err := m.Result(g, a); err != nil {
		return err
	} else if wrote || now != began {
		return m.KeyspaceNew
	}
	return nil
}

// CeilMilli returns t in Unix milliseconds, rounded up.
func CeilMilli(t time.Time) int64 {
	return (t.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}
