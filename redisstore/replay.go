package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgauthz/orgauthz/dpop"
)

// DefaultReplayPrefix is the key prefix of a ReplayStore made with an empty
// prefix.
const DefaultReplayPrefix = "orgauthz:dpop:"

// SinceKey is the name, after the prefix, of the key where a ReplayStore
// keeps the time (Unix milliseconds) from which the keyspace holds every
// proof recorded; see [ReplayStore].
const SinceKey = "since"

// ReplayStore is a [dpop.ReplayStore] on Redis or Valkey: replicas whose
// Verifiers share one (give it to each with dpop.WithReplayStore) accept a
// proof once between them. Each proof is one key, prefix + the Verifier's
// digest of the proof's key and jti (no token material), written with
// SET key 1 NX PXAT until, which is atomic on a single server, a
// Sentinel-managed primary and a Cluster alike. It is safe for concurrent
// use.
//
// A Redis that loses its keys (restarted without persistence, flushed,
// failed over to a replica that missed the last writes of a single
// server) would let proofs accepted before the loss be replayed. So the
// store keeps a marker, prefix + [SinceKey], holding when the keyspace
// began: written, if missing, by the first Remember that finds it missing,
// with the replica's clock. A proof that could have been accepted before
// that time (iat earlier than the marker plus maxSkew, plus
// [dpop.ReplayStoreMargin] for the replicas' clocks) is refused with an
// error, which the Verifier reports as [dpop.ErrReplayStoreUnavailable].
// After a loss, and on a keyspace's first use, proofs are refused for
// maxSkew + dpop.ReplayStoreMargin (70 s with the Verifier's defaults);
// then the service is whole again, without restarting anything. An
// operator who knows a new keyspace never held proofs may set the marker
// to an earlier time. The record and the marker are read in one pipeline,
// in that order, so the marker read is one the record's server had when
// it took the record.
//
// Configure Redis with maxmemory-policy noeviction (the default): an
// evicted key is a forgotten proof. On a Cluster the marker lives on one
// shard and detects the loss of that shard only.
//
// Remember returns by ctx's deadline whatever the client's configuration
// (ContextTimeoutEnabled or not): the commands run on a goroutine of their
// own, which ends when go-redis gives up. A ReplayStore is safe for
// concurrent use.
type ReplayStore struct {
	client redis.UniversalClient
	prefix string
	since  string
	// lifetime is how long before its until a record may have been
	// taken: maxAge + maxSkew, plus twice the margin.
	lifetime time.Duration
	now      func() time.Time // the clock of the marker
}

var _ dpop.ReplayStore = (*ReplayStore)(nil)

// ReplayOption configures a [ReplayStore].
type ReplayOption func(*ReplayStore)

// WithIATWindow tells the store the iat window of the Verifiers that use it
// (dpop.WithIATWindow's maxAge and maxSkew); the default is
// dpop.DefaultMaxAge and dpop.DefaultMaxSkew. It must be at least as wide as
// every such Verifier's, or a proof accepted just before Redis lost its keys
// could be accepted again after. Values that are not positive (maxAge) or
// negative (maxSkew) are ignored.
func WithIATWindow(maxAge, maxSkew time.Duration) ReplayOption {
	return func(s *ReplayStore) {
		if maxAge > 0 && maxSkew >= 0 {
			s.lifetime = maxAge + maxSkew + 2*dpop.ReplayStoreMargin
		}
	}
}

// NewReplayStore returns a ReplayStore keeping its keys under prefix
// ([DefaultReplayPrefix] when empty; give replicas of one service the same
// prefix and other services other ones) in client. It panics if client is
// nil.
func NewReplayStore(client redis.UniversalClient, prefix string, opts ...ReplayOption) *ReplayStore {
	if client == nil {
		panic("redisstore: NewReplayStore: nil client")
	}
	if prefix == "" {
		prefix = DefaultReplayPrefix
	}
	s := &ReplayStore{client: client, prefix: prefix, since: prefix + SinceKey,
		lifetime: dpop.DefaultMaxAge + dpop.DefaultMaxSkew + 2*dpop.ReplayStoreMargin, now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// errKeyspaceNew is the error of a proof the store cannot vouch for: it
// could have been accepted before the keyspace's marker.
var errKeyspaceNew = errors.New("redisstore: the replay keyspace is younger than the proof's window (Redis lost its keys, or is new)")

// Remember records key until until with SET NX PXAT and reports whether it
// was not recorded already. It fails, whatever SET answered, when the
// keyspace began too late to hold every earlier record of the proof (see
// ReplayStore), and on any Redis error.
func (s *ReplayStore) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	// Round up: the key must not expire before until, nor the marker
	// claim an earlier time than it was written.
	ms := ceilMilli(until)
	now := ceilMilli(s.now())
	var set *redis.Cmd
	var since *redis.StringCmd
	err := bounded(ctx, func() error {
		pipe := s.client.Pipeline()
		set = pipe.Do(ctx, "SET", s.prefix+key, "1", "NX", "PXAT", ms)
		pipe.SetNX(ctx, s.since, now, 0)
		since = pipe.Get(ctx, s.since)
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("redisstore: %w", err)
	}
	first, err := setResult(set)
	if err != nil || !first {
		return false, err
	}
	began, err := strconv.ParseInt(since.Val(), 10, 64)
	if since.Err() != nil || err != nil {
		return false, fmt.Errorf("redisstore: the replay keyspace's marker %q is unreadable", s.since)
	}
	if ms < began+s.lifetime.Milliseconds() {
		return false, errKeyspaceNew
	}
	return first, nil
}

// setResult reads the answer to SET NX: OK when the key was set, nil when
// it was there.
func setResult(c *redis.Cmd) (bool, error) {
	switch err := c.Err(); {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("redisstore: %w", err)
	case c.Val() != "OK":
		return false, fmt.Errorf("redisstore: SET answered %v", c.Val())
	}
	return true, nil
}

// ceilMilli returns t in Unix milliseconds, rounded up.
func ceilMilli(t time.Time) int64 {
	return (t.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}
