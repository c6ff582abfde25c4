package soak_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/pep"
)

// soakEnv is what every caller of the soak shares: whether the gateway is
// down, how many restarts have completed, and each caller's gap.
type soakEnv struct {
	down     atomic.Bool
	restarts atomic.Int64
	gaps     []*soakGap
}

// soakGap follows one caller through the gateway's restarts. A restart
// marks every gap pending before the gateway goes down; the caller's first
// clean gateway answer to a call that started after the restart completed
// marks it recovered. Until then a call may fail because of the restart
// (a refused connection, a fail-closed DENY, an open breaker); after that
// it may not. No clock is involved: recovery is what the caller observes.
type soakGap struct {
	pending   atomic.Int64 // the restart the caller must recover from
	recovered atomic.Int64 // the last restart it recovered from
}

// tolerates reports whether a failure now may be the restart's doing.
func (g *soakGap) tolerates() bool { return g.pending.Load() > g.recovered.Load() }

// answered records a clean gateway answer to a call that started when
// restarted restarts had completed.
func (g *soakGap) answered(restarted int64) {
	if p := g.pending.Load(); p > 0 && restarted >= p {
		g.recovered.Store(restarted)
	}
}

// restart stops the gateway and starts it again on the same address: every
// caller's gap is marked first, then the gateway goes down, stays down
// until the callers have felt it (seen says so; at most 5 s, since they may
// all be answering from their caches), and comes back.
func (e *soakEnv) restart(ctx context.Context, gw *gatewaytest.Server, seen func() bool) (time.Duration, error) {
	n := e.restarts.Load() + 1
	for _, g := range e.gaps {
		g.pending.Store(n)
	}
	e.down.Store(true)
	start := time.Now()
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := gw.Stop(stopCtx); err != nil {
		return 0, fmt.Errorf("stopping the gateway: %w", err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(5 * time.Second); !seen() && time.Now().Before(deadline); {
		<-tick.C
	}
	if err := gw.Restart(); err != nil {
		return 0, err
	}
	gap := time.Since(start)
	e.down.Store(false)
	e.restarts.Store(n)
	return gap, nil
}

// soakUser is an active user of acme: its token, id and whether it is a
// viewer.
type soakUser struct {
	name, token, id string
	viewer          bool
}

// subject reads the sub claim of a token the reference server minted (the
// server signed it; the soak only needs the user's id).
func subject(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return "", err
	}
	if claims.Sub == "" {
		return "", errors.New("token without sub")
	}
	return claims.Sub, nil
}

// soakDecider is a legitimate service: one cached pep client asking for
// decisions with the tokens of the users it serves (forwarded per call, as
// the middleware does). Its cache should answer nearly every call.
type soakDecider struct {
	n      int
	rng    *rand.Rand
	client *pep.Client
	users  []soakUser
	tally  *soakTally
	env    *soakEnv
	gap    soakGap
	// asked holds the users the decider has asked for; only its own
	// goroutine touches it.
	asked map[string]bool
	// firstMisses counts the cache lookups no cache could have answered:
	// the pairs of a user's first call, when that call looked the cache up.
	// They are the load's warm-up, as many however long it runs, so they
	// are left out of the hit ratio: a short run on a loaded machine makes
	// few calls, and with them counted a working cache fell to 0.56.
	firstMisses uint64
}

// step asks for the four pairs for one of its users, one call in fifty
// bypassing the cache, and checks every answer against the policy: a GRANT
// the user should not have fails the soak at once, whenever it comes; a
// fail-closed DENY is tolerated only in the restart's gap.
func (d *soakDecider) step(ctx context.Context) error {
	u := pick(d.rng, d.users)
	var opts []pep.CallOption
	if d.rng.IntN(50) == 0 {
		opts = append(opts, pep.NoCache())
	}
	if !d.asked[u.name] {
		if d.asked == nil {
			d.asked = map[string]bool{}
		}
		d.asked[u.name] = true
		if len(opts) == 0 { // looked up: each of its pairs misses
			d.firstMisses += uint64(len(soakWant))
		}
	}
	restarted := d.env.restarts.Load()
	res, err := d.client.CheckMany(pep.WithToken(ctx, u.token), soakAsk, opts...)
	if err != nil {
		return fmt.Errorf("decider %d: CheckMany for %s: %w", d.n, u.name, err)
	}
	d.tally.decisionCalls.Add(1)
	d.tally.decisionPairs.Add(int64(len(res.Decisions)))
	if len(res.Decisions) != len(soakWant) {
		return fmt.Errorf("decider %d: %d decisions, want %d", d.n, len(res.Decisions), len(soakWant))
	}
	clean, fromGateway := true, false
	for _, dec := range res.Decisions {
		want := pep.Deny
		if u.viewer {
			want = soakWant[dec.Resource+"/"+dec.Scope]
		}
		if dec.Allowed() && want != pep.Grant {
			return fmt.Errorf("decider %d: false GRANT of %s/%s to %s (cause %v)", d.n, dec.Resource, dec.Scope, u.name, dec.Cause)
		}
		if dec.Cause != nil {
			if !d.gap.tolerates() || !errors.Is(dec.Cause, pep.ErrUnavailable) {
				return fmt.Errorf("decider %d: %s/%s for %s failed closed outside the restart: %w", d.n, dec.Resource, dec.Scope, u.name, dec.Cause)
			}
			d.tally.gapDenials.Add(1)
			clean = false
			continue
		}
		if dec.Status != want {
			return fmt.Errorf("decider %d: %s/%s for %s is %v, want %v", d.n, dec.Resource, dec.Scope, u.name, dec.Status, want)
		}
		fromGateway = fromGateway || !dec.Cached
	}
	if clean && fromGateway {
		d.gap.answered(restarted)
	}
	return nil
}

// soakJunk sends decision calls with tokens the gateway must refuse:
// garbage, a forged signature, an expired token, another realm's token.
type soakJunk struct {
	n      int
	rng    *rand.Rand
	client *pep.Client
	tokens []string
	tally  *soakTally
	env    *soakEnv
	gap    soakGap
}

// step sends one junk call: it must end in ErrUnauthorized (a 401) with
// nothing allowed, or, in the restart's gap, fail closed.
func (j *soakJunk) step(ctx context.Context) error {
	tok := pick(j.rng, j.tokens)
	restarted := j.env.restarts.Load()
	res, err := j.client.CheckMany(pep.WithToken(ctx, tok), soakAsk)
	j.tally.junkCalls.Add(1)
	if res.Allowed() {
		return fmt.Errorf("junk %d: a refused token was allowed", j.n)
	}
	for _, d := range res.Decisions {
		if d.Allowed() {
			return fmt.Errorf("junk %d: a refused token got GRANT for %s/%s", j.n, d.Resource, d.Scope)
		}
	}
	switch {
	case errors.Is(err, pep.ErrUnauthorized):
		j.tally.junkRefused.Add(1)
		j.gap.answered(restarted)
		return nil
	case err == nil && j.gap.tolerates() && len(res.Decisions) > 0 && errors.Is(res.Decisions[0].Cause, pep.ErrUnavailable):
		j.tally.gapDenials.Add(int64(len(res.Decisions)))
		return nil
	}
	return fmt.Errorf("junk %d: want ErrUnauthorized, got %v (decisions %+v)", j.n, err, res.Decisions)
}
