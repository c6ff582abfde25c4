package redisstore_test

// A replica frozen (SIGSTOP, as a frozen container is) while a purge is
// published must not, once resumed, serve the purged GRANT from its cache
// before it has read the purge, which Redis left in its socket: the
// heartbeat it last received is as old as the freeze, so its cache is
// bypassed until a fresh one arrives, after the purge. The replica runs in
// a child process of the test binary (see TestMain), on one processor, as
// in a one-CPU container. Linux only: the child's state is read from /proc.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

func init() { children["freeze"] = freezeChild }

// freezeMargin is how much longer than the trust window the child stays
// frozen after the purge was published.
const freezeMargin = 500 * time.Millisecond

// The child's loop ends once minAfterBound checks began after the bound,
// or after childLoopLimit whatever happened.
const (
	minAfterBound  = 1000
	childLoopLimit = 30 * time.Second
	maxChecks      = 4 << 20 // what the child keeps in memory
)

// freezeConfig is what the parent tells the child.
type freezeConfig struct {
	Gateway, Redis, Channel, Token string
	Mode                           freezeMode
}

// freezeReport is what the child saw: its checks of orders/read with the
// purged token, those begun after the bound (when the purge had been
// published for the trust window), and how many of those were GRANTs.
type freezeReport struct {
	Checks, AfterBound, StaleGrants int
	// FirstAfterBound is how the first check after the bound was answered.
	FirstAfterBound string
	Stats           pep.Stats
}

// freezeMode is how the child comes to be frozen.
type freezeMode string

const (
	// stoppedByParent: the parent sends SIGSTOP while the child checks.
	stoppedByParent freezeMode = "stopped by the parent"
	// stopsItself: the child stops its process right after a check (see
	// frozentest.StopSelf), so that its first checks after the freeze run before the
	// runtime polls the network: what would read the purge.
	stopsItself freezeMode = "stops itself"
)

// warmFor is how long the child checks before it stops itself, so that
// the runtime's monitor settles into its slowest pace (see frozentest.StopSelf).
const warmFor = 60 * time.Millisecond

// TestFrozenReplicaReadsThePurgeBeforeItsCache: a replica that cached
// bob's GRANT is frozen while bob's token is revoked and purged on another
// replica; resumed after the trust window, none of its checks grants.
func TestFrozenReplicaReadsThePurgeBeforeItsCache(t *testing.T) {
	t.Parallel()
	for _, mode := range []freezeMode{stoppedByParent, stopsItself} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			rs := redistest.Start(t)
			gw := startGateway(t)
			const channel = "test:freeze"
			other := replica(t, gw, rs.Client(), channel)
			waitFor(t, "the other replica trusts its cache", 10*time.Second, trusted(other))
			bob := revocable(gw, "bob")

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			k := frozentest.StartChild(ctx, t, childEnv, "freeze", "GOMAXPROCS=1")
			cfg, err := json.Marshal(freezeConfig{Gateway: gw.URL, Redis: rs.Addr(), Channel: channel, Token: bob, Mode: mode})
			require.NoError(t, err)
			k.Tell(t, string(cfg))
			require.Equal(t, "looping", k.Next(t, "that it checks from its cache"))
			if mode == stoppedByParent {
				require.NoError(t, k.Process().Signal(syscall.SIGSTOP))
			}
			frozentest.WaitStopped(t, k.Pid())
			gw.Revoke(t, realm, app, secret, bob)
			require.NoError(t, other.Purge(t.Context(), bob)) // Redis has pushed it to the frozen child's socket
			bound := time.Now().Add(invalidation.DefaultTrust)
			time.Sleep(time.Until(bound) + freezeMargin) // the freeze itself, not a synchronisation
			require.NoError(t, k.Process().Signal(syscall.SIGCONT))
			k.Tell(t, strconv.FormatInt(bound.UnixNano(), 10))

			var rep freezeReport
			require.NoError(t, json.Unmarshal([]byte(k.Next(t, "its report")), &rep))
			require.NoError(t, k.Wait())
			t.Logf("child: %d checks, %d after the bound, first after it: %s; stats %+v", rep.Checks, rep.AfterBound, rep.FirstAfterBound, rep.Stats)
			require.GreaterOrEqual(t, rep.AfterBound, minAfterBound, "the child did not check after the freeze")
			assert.Zero(t, rep.StaleGrants, "the resumed replica granted the purged token")
			// On resume the child either reads the purge Redis kept in its
			// socket, or first finds its heartbeats overdue, counts a gap and
			// purges everything: either way nothing cached before the freeze
			// is served.
			assert.True(t, rep.Stats.Invalidations > 0 || rep.Stats.InvalidationGaps > 0,
				"the child neither read the purge nor purged its cache after the freeze")
		})
	}
}

// freezeChild is the child: it reads its freezeConfig, waits for its
// first heartbeat, caches the token's GRANT, says "looping" and checks in
// a tight loop until the parent gives the bound (as Unix nanoseconds) and
// minAfterBound checks began after it; then it prints its freezeReport.
func freezeChild() int {
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		fmt.Fprintln(os.Stderr, "freeze child: no configuration")
		return 2
	}
	var cfg freezeConfig
	if err := json.Unmarshal(in.Bytes(), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "freeze child:", err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Redis})
	defer func() { _ = rdb.Close() }()
	c, err := pep.New(cfg.Gateway, realm, app, pep.WithRetry(0, 0, 0), pep.WithInvalidator(redisstore.NewInvalidator(rdb, cfg.Channel)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeze child:", err)
		return 2
	}
	defer func() { _ = c.Close() }()
	ctx := pep.WithToken(context.Background(), cfg.Token)
	start := time.Now()
	for c.Stats().InvalidationRecoveries == 0 { // subscribed: a heartbeat came
		if time.Since(start) > childLoopLimit {
			fmt.Fprintln(os.Stderr, "freeze child: no heartbeat")
			return 2
		}
		time.Sleep(time.Millisecond) // a poll's interval; the loop is bounded
	}
	for { // until the decision is served from the cache
		d, err := c.Check(ctx, "orders", "read")
		if err == nil && d.Cached && d.Status == pep.Grant {
			break
		}
		if time.Since(start) > childLoopLimit {
			fmt.Fprintln(os.Stderr, "freeze child: the GRANT was never served from the cache")
			return 2
		}
	}
	bound := make(chan int64, 1)
	go func() {
		if in.Scan() {
			if n, err := strconv.ParseInt(strings.TrimSpace(in.Text()), 10, 64); err == nil {
				bound <- n
			}
		}
	}()
	fmt.Println("looping")
	// Every check is kept, with when it began, and judged against the
	// bound once the parent has given it: the checks that run right after
	// the freeze, before the child has read the bound, are those that
	// count most.
	type check struct {
		began int64
		grant bool
		text  string
	}
	var checks []check
	var rep freezeReport
	limit := int64(-1) // unknown until the parent says
	after := 0
	warm := time.Now()
	for time.Since(start) < childLoopLimit && after < minAfterBound && len(checks) < maxChecks {
		if cfg.Mode == stopsItself && !warm.IsZero() && time.Since(warm) >= warmFor {
			warm = time.Time{}
			frozentest.StopSelf()
		}
		if limit < 0 {
			select {
			case limit = <-bound:
			default:
			}
		}
		began := time.Now().UnixNano()
		d, err := c.Check(ctx, "orders", "read")
		ck := check{began: began, grant: d.Status == pep.Grant}
		if limit < 0 || began > limit {
			ck.text = fmt.Sprintf("%s cached=%t err=%v", d.Status, d.Cached, err)
		}
		checks = append(checks, ck)
		if limit >= 0 && began > limit {
			after++
		}
	}
	rep.Checks = len(checks)
	for _, ck := range checks {
		if limit < 0 || ck.began <= limit {
			continue
		}
		if rep.AfterBound++; rep.AfterBound == 1 {
			rep.FirstAfterBound = ck.text
		}
		if ck.grant {
			rep.StaleGrants++
		}
	}
	rep.Stats = c.Stats()
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	return 0
}
