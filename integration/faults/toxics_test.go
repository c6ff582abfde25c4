package faults_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/pep"
)

// toxics are the faults of the suite, each put on the upstream (client to
// gateway) or the downstream (gateway to client) stream in turn. Some let
// answers through (slowly, in slices, before a slow close), the others make
// the calls fail; either way the rules hold.
var toxics = []struct {
	name, typ, attrs string
}{
	{"latency 20±10ms", "latency", `{"latency": 20, "jitter": 10}`},
	{"latency 500±50ms", "latency", `{"latency": 500, "jitter": 50}`},
	{"bandwidth 1KB/s", "bandwidth", `{"rate": 1}`},
	{"slow_close 500ms", "slow_close", `{"delay": 500}`},
	{"timeout 0 (black hole)", "timeout", `{"timeout": 0}`},
	{"timeout 30ms", "timeout", `{"timeout": 30}`},
	{"reset_peer", "reset_peer", `{"timeout": 0}`},
	{"reset_peer 30ms", "reset_peer", `{"timeout": 30}`},
	{"slicer 8±4B/100µs", "slicer", `{"average_size": 8, "size_variation": 4, "delay": 100}`},
	{"limit_data 64B", "limit_data", `{"bytes": 64}`},
	{"limit_data 300B", "limit_data", `{"bytes": 300}`},
}

// row is one line of the outcome table.
type row struct {
	toxic, stream, call, token, outcome, late, breaker string
}

// TestToxics runs every call with every token kind under every toxic on
// each stream, each toxic and stream with its own proxy and server, all at
// once (they mostly wait). For each it checks against the reference
// server's answer without the toxic: no false GRANT, the call back by its
// deadline plus 50 ms (beyond the time the process was measurably stalled;
// a late call is measured again by fresh clients, see lateness), every
// fault-made DENY with a Cause matching
// ErrUnavailable, the cache holding only the pairs the gateway really
// answered; then, with the toxic gone (its proxy replaced by one without
// it: see heal), every client answering right without being rebuilt. A breaker client per case opens under a failing
// toxic and closes after exactly one probe once it is removed.
func TestToxics(t *testing.T) {
	stalls := startStallClock(t)
	var (
		mu   sync.Mutex
		rows []row
	)
	t.Cleanup(func() { logTable(t, rows) })
	// The cases mostly wait, so they run at once, each a subtest on a
	// goroutine of its own (t.Run may be called concurrently; t.Parallel
	// would hold them to GOMAXPROCS at a time), four at most: a loaded
	// 2-core machine must still keep the deadlines.
	var g errgroup.Group
	g.SetLimit(4)
	for _, tx := range toxics {
		for _, stream := range []string{"upstream", "downstream"} {
			g.Go(func() error {
				t.Run(tx.name+"/"+stream, func(t *testing.T) {
					got := runToxic(t, stalls, tx.name, tx.typ, tx.attrs, stream)
					mu.Lock()
					rows = append(rows, got...)
					mu.Unlock()
				})
				return nil
			})
		}
	}
	require.NoError(t, g.Wait())
}

// runToxic runs one toxic on one stream and returns its table rows. Its
// own goroutines report through t with assert.
func runToxic(t *testing.T, stalls *stallClock, toxicName, typ, attrs, stream string) []row {
	r := newRig(t)
	ctx := t.Context()
	type cell struct {
		call  call
		token string
		ref   answer
		c     *pep.Client
		got   answer
		late  lateness
		// first is the first measure when the call was measured again.
		first *lateness
	}
	var cells []*cell
	for _, cl := range calls {
		for _, kind := range tokenKinds {
			// The reference: the same call, through the proxy without
			// the toxic, by a client with time to spare.
			rc, err := r.client(kind, pep.WithTimeout(10*time.Second))
			if !assert.NoError(t, err) {
				return nil
			}
			ref := cl.do(ctx, rc)
			if !assert.NoError(t, ref.err, "reference %s %s", cl.name, kind) {
				return nil
			}
			grants := 0
			for _, d := range ref.decisions {
				if !assert.NoError(t, d.Cause, "reference %s %s", cl.name, kind) {
					return nil
				}
				if d.Allowed() {
					grants++
				}
			}
			if cl.name == "CheckMany" { // a false GRANT is there to be made
				assert.Equal(t, 2, grants, "reference CheckMany: orders/read and invoices/read only")
			}
			c, err := r.client(kind)
			if !assert.NoError(t, err) {
				return nil
			}
			cells = append(cells, &cell{call: cl, token: kind, ref: ref, c: c})
		}
	}
	// The breaker client's calls are bounded by its own timeout (a
	// timeout then counts against the breaker), and its breaker cools down
	// for long enough that it is still open when the test looks, however
	// slow the machine.
	breakerClient, err := r.client("Bearer", pep.WithTimeout(breakerTimeout), pep.WithBreaker(2, 500*time.Millisecond))
	if !assert.NoError(t, err) {
		return nil
	}
	checkCall := calls[0]

	if !assert.NoError(t, r.addToxic("fault", typ, stream, attrs)) {
		return nil
	}
	// Under the toxic: every cell once, one after the other (calls that
	// all reach their deadline at the same instant would make a loaded
	// machine late for all of them), and beside them the breaker client
	// until its breaker opens (or four times, for a toxic that lets
	// answers through).
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, c := range cells {
			c.got, c.late = timed(ctx, stalls, c.call, c.c)
			// A call back later than the bound allows is measured again,
			// three times at most, each time by a fresh client under the same
			// toxic; the last measure is the one checked. Every answer is
			// judged.
			for retry := 0; c.late.over() > slack && retry < 3; retry++ {
				if c.first == nil {
					c.first = &lateness{late: c.late.late, stolen: c.late.stolen}
				}
				_, bad := verdict(c.ref, c.got)
				assert.Empty(t, bad, "%s %s %s %s (measured again)", toxicName, stream, c.call.name, c.token)
				fresh, err := r.client(c.token)
				if !assert.NoError(t, err) {
					return
				}
				c.c = fresh
				c.got, c.late = timed(ctx, stalls, c.call, c.c)
			}
		}
	})
	opened := false
	var late []lateness // of the breaker client's calls, beyond the bound
	for range 4 {
		a, l := timedByClient(ctx, stalls, checkCall, breakerClient, pep.NoCache())
		_, bad := verdict(cells[0].ref, a)
		assert.Empty(t, bad, "breaker client")
		if l.over() > slack {
			late = append(late, l)
		}
		if breakerClient.Stats().Breaker != pep.BreakerClosed {
			opened = true
			break
		}
	}
	if opened { // an open breaker refuses at once, without a request
		before := breakerClient.Stats().GatewayRequests
		a, _ := timedByClient(ctx, stalls, checkCall, breakerClient, pep.NoCache())
		_, all := refusedByBreaker(a)
		assert.True(t, all, "the open breaker refuses: %+v", a.decisions)
		assert.Equal(t, before, breakerClient.Stats().GatewayRequests, "the open breaker sends nothing")
	}
	// A breaker-client call back later than the bound is measured again,
	// as the cells are, by fresh clients without a breaker.
	for _, l := range late {
		for retry := 0; l.over() > slack && retry < 3; retry++ {
			fresh, err := r.client("Bearer", pep.WithTimeout(breakerTimeout), pep.WithBreaker(0, 0))
			if !assert.NoError(t, err) {
				break
			}
			t.Logf("%s %s: breaker client %v past its deadline, measured again", toxicName, stream, l)
			var a answer
			a, l = timedByClient(ctx, stalls, checkCall, fresh, pep.NoCache())
			_, bad := verdict(cells[0].ref, a)
			assert.Empty(t, bad, "breaker client, measured again")
		}
		assert.LessOrEqual(t, l.over(), slack, "breaker client: returned %v past its deadline", l)
	}
	wg.Wait()

	rows := make([]row, 0, len(cells)+1)
	for _, c := range cells {
		where := fmt.Sprintf("%s %s %s %s", toxicName, stream, c.call.name, c.token)
		outcome, bad := verdict(c.ref, c.got)
		assert.Empty(t, bad, where)
		assert.LessOrEqual(t, c.late.over(), slack, "%s: returned %v past its deadline", where, c.late)
		if c.ref.decisions != nil {
			// The cache holds exactly the pairs the gateway answered.
			clean := 0
			for _, d := range c.got.decisions {
				if d.Cause == nil {
					clean++
				}
			}
			assert.Equal(t, clean, c.c.Stats().CacheEntries, "%s: cache entries", where)
		}
		late := c.late.String()
		if c.first != nil {
			late = c.first.String() + ", again " + late
		}
		rows = append(rows, row{toxic: toxicName, stream: stream, call: c.call.name, token: c.token,
			outcome: outcome, late: late})
	}

	if !assert.NoError(t, r.heal()) {
		return rows
	}
	// Without the toxic every client answers right, not rebuilt: what the
	// gateway answered from the cache, what failed closed from the gateway
	// (nothing a fault made was cached).
	for _, c := range cells {
		wg.Go(func() {
			where := fmt.Sprintf("%s %s %s %s, toxic gone", toxicName, stream, c.call.name, c.token)
			a, _, since, err := untilPastBreaker(ctx, c.call, c.c)
			// A clean call that a loaded machine holds past the client's
			// own timeout (clientTimeout) is made again, three times at
			// most, as the breaker's probe is.
			for retry := 0; err == nil && ranOutOfTime(a) && retry < 3; retry++ {
				t.Logf("%s: the call ran out of the client's %v on this machine, made again", where, clientTimeout)
				var more map[string]bool
				a, _, more, err = untilPastBreaker(ctx, c.call, c.c)
				maps.Copy(since, more)
			}
			if !assert.NoError(t, err, where) {
				return
			}
			outcome, bad := verdict(c.ref, a)
			assert.Empty(t, bad, where)
			assert.Equal(t, "answered", outcome, where)
			if c.ref.decisions == nil || len(a.decisions) != len(c.got.decisions) {
				return
			}
			for i, d := range a.decisions {
				assert.Equal(t, c.got.decisions[i].Cause == nil || since[d.Resource+"/"+d.Scope], d.Cached,
					"%s: %s/%s is cached exactly when the gateway answered it (under the toxic or since)", where, d.Resource, d.Scope)
			}
		})
	}
	breaker := "stays closed"
	if opened {
		// The probe is bounded by the breaker client's own timeout
		// (breakerTimeout), which a loaded machine can hold a clean call
		// past: such a probe fails closed for its deadline, and the
		// breaker, by design, opens again. Then the breaker is probed
		// again after its cool-down, three times at most (as a late call
		// is measured again); every probe is one request, and it is the
		// first probe answered that must close the breaker.
		a, before, _, err := untilPastBreaker(ctx, checkCall, breakerClient, pep.NoCache())
		for retry := 0; err == nil && ranOutOfTime(a) && retry < 3; retry++ {
			st := breakerClient.Stats()
			assert.Equal(t, before+1, st.GatewayRequests, "one probe")
			assert.NotEqual(t, pep.BreakerClosed, st.Breaker, "a probe that failed opens the breaker again")
			t.Logf("%s %s: the breaker's probe ran out of the client's %v on this machine, probed again", toxicName, stream, breakerTimeout)
			a, before, _, err = untilPastBreaker(ctx, checkCall, breakerClient, pep.NoCache())
		}
		if assert.NoError(t, err, "%s %s breaker", toxicName, stream) {
			outcome, bad := verdict(cells[0].ref, a)
			assert.Empty(t, bad)
			assert.Equal(t, "answered", outcome, "the probe: %+v", a.decisions)
			st := breakerClient.Stats()
			assert.Equal(t, before+1, st.GatewayRequests, "one probe")
			assert.Equal(t, pep.BreakerClosed, st.Breaker, "the probe's success closes the breaker")
			breaker = "opens; closes after 1 probe"
		}
	} else {
		assert.Equal(t, pep.BreakerClosed, breakerClient.Stats().Breaker)
	}
	wg.Wait()
	for i := range rows {
		rows[i].breaker = breaker
	}
	return rows
}

// logTable writes the toxic × call × outcome table to the test's log.
func logTable(t *testing.T, rows []row) {
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(toxicIndex(a.toxic), toxicIndex(b.toxic)), strings.Compare(b.stream, a.stream),
			cmp.Compare(callIndex(a.call), callIndex(b.call)), strings.Compare(a.token, b.token))
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "toxic\tstream\tcall\ttoken\toutcome\tpast deadline\tbreaker")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.toxic, r.stream, r.call, r.token, r.outcome, r.late, r.breaker)
	}
	_ = w.Flush()
	t.Logf("toxic × call × outcome (past deadline: when the call returned, against its %v deadline, at most +%v "+
		"beyond the time the process was stalled meanwhile; negative: before it):\n%s",
		callTimeout, slack, b.String())
}

func toxicIndex(name string) int {
	return slices.IndexFunc(toxics, func(x struct{ name, typ, attrs string }) bool { return x.name == name })
}

func callIndex(name string) int {
	return slices.IndexFunc(calls, func(c call) bool { return c.name == name })
}
