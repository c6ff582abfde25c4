package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/onetime"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
)

// DefaultReplayPrefix is the key prefix of a ReplayStore made with an empty
// prefix.
const DefaultReplayPrefix = "orgauthz:dpop:"

// MaxReplicaWait is the longest timeout [WithReplicas] accepts: half of
// dpop.ReplayStoreTimeout, which bounds each call of the store (the
// Verifier's and the reference server's), so that the call's other round
// trips (the marker's script, the record) fit beside its WAIT.
const MaxReplicaWait = dpop.ReplayStoreTimeout / 2

// SinceKey is the name, after the prefix, of the key where a ReplayStore
// keeps the time (Unix milliseconds) from which the keyspace holds every
// proof recorded; see [ReplayStore].
const SinceKey = "since"

// ReplayStore is a [dpop.ReplayStore] on Redis or Valkey: replicas whose
// Verifiers share one (give it to each with dpop.WithReplayStore) accept a
// proof once between them. Each proof is one key, prefix + the Verifier's
// digest of the proof's key and jti (no token material), written with
// SET key 1 NX PXAT until, which is atomic on a single server, a
// Sentinel-managed primary and a Cluster alike. The Verifier's calls are
// [ReplayStore.RememberCharged], which also charges the record to the
// proof's key, so that one key holds a bounded number of records
// (dpop.WithReplayKeyLimit: one caller cannot fill Redis for every
// replica). Recorded reads a record
// back, RecordOnce writes a one-time record that is no DPoP proof, holding
// who wrote it, and Finish marks one answered, for exactly one of its
// writer's calls (the reference server's
// replicas share revocations, code spends and sign-outs through them:
// mockserver.WithReplayStore). It is safe for concurrent use.
//
// A Redis that loses writes would let proofs accepted before the loss be
// replayed: one that loses all its keys (restarted without persistence,
// flushed), and one that crashes and comes back from its last snapshot
// (RDB, or AOF with appendfsync everysec) without the records written
// after it. So the store keeps a marker, prefix + [SinceKey], holding when
// the keyspace began by Redis's own clock (TIME), the run of the server
// that began it, the high-water of Redis's clock since, and the marker's
// generation, raised by every write (see [replaymarker.Script]):
// "<ms>@<run_id>@<hw>@<gen>", run_id being INFO server's, new on every start of
// the server (with or without persistence) and different on a replica
// promoted by a failover. Every read of the marker is an EVAL of one
// script ([replaymarker.Script]) on the marker's key, with this process's
// clock reading, which decides it on the server in one atomic step: it
// keeps a marker of this run whose time and high-water are no later than
// TIME + [dpop.ReplayStoreMargin], and replaces any other (missing, not a
// time, in the future, or of another run: the server restarted or failed
// over, and may have lost writes; or a high-water in the future: Redis's
// clock stepped back after running ahead) by TIME and this run: the
// keyspace begins now.
//
// Redis expires records by its own clock (PXAT is absolute), so a Redis
// whose clock steps ahead (a bad NTP source, a resumed machine's clock
// corrected) loses at once every record whose until falls within the
// step, its run_id unchanged. So the script raises the marker's
// high-water to TIME (one write a second at most), and every call for
// which TIME or the high-water is later than the process's reading plus
// dpop.ReplayStoreMargin fails, saying that the clocks differ (the
// marker stays: no other process is refused for it). Which clock is wrong
// does not matter: a process whose clock is behind Redis's by more than
// the margin, or whose call was held (frozen) after its reading, has its
// own calls refused, never a record it counts as live missed; a Redis
// clock ahead of every process refuses every call until it is corrected,
// and, stepped back, begins the keyspace again. Likewise a process whose
// clock is ahead of Redis's by more than the margin has its calls refused:
// what it stamps (a token's iat, a proof window's start) could read as
// issued after a loss of Redis's keys that came after it. A step ahead and back
// between two calls (no call saw the high-water) cannot be seen. A proof that could have been accepted before the marker's
// time (iat earlier than the marker plus maxSkew, plus
// dpop.ReplayStoreMargin for the replicas' clocks) is refused with an
// error, which the Verifier reports as [dpop.ErrReplayStoreUnavailable].
// After a loss, a restart or a failover, and on a keyspace's first use,
// proofs are refused for maxSkew + dpop.ReplayStoreMargin (70 s with the
// Verifier's defaults); then the service is whole again, without
// restarting anything. Because the script decides where the marker is
// stored, a write delivered late (its process paused, its bytes held in a
// partitioned connection) can never move a newer marker, written after a
// loss, earlier; a marker dated ahead (by hand, or by an older version
// from a replica whose clock ran ahead) cannot lock the replicas out. A
// bare time "<ms>" (an operator vouching for a keyspace, or an older
// version's marker) is bound to the running server without moving: an
// operator who knows a new keyspace never held proofs may set the marker
// to an earlier time (a snapshot taken before the store's next call holds
// it bare, and a restore of that snapshot is then taken at the operator's
// word). A server whose INFO server shows no run_id fails every call,
// saying so. The record and the script are sent in one pipeline, in that
// order, so the marker judged is one the record's server had when it took
// the record.
//
// A failover promotes a server of another run_id, so the marker sees it,
// lagging replica or not: proofs are refused for the 70 s, and records
// asked about from before it cannot be vouched for. One case it does not
// see: a failover back to the server that wrote the marker, after that
// server resynced from a replica that lagged and that no call of the
// store reached while it was primary (the marker names the running server
// again). [WithReplicas] covers it: the store counts a record only once
// that many replicas hold it (WAIT), so with n the number of replicas no
// failover loses one. On a Cluster the marker lives on one shard and sees
// that shard's restarts, failovers and evictions only (keep every master's
// maxmemory-policy noeviction), and WithReplicas is not
// supported: a shard failed over to a lagging replica forgets the newest
// records of its slots. Likewise the clock rule reads the marker's shard's
// clock only: keep every shard's clock right (a shard whose clock alone
// steps ahead expires its records unseen).
//
// A Redis that may evict keys cannot vouch for its keyspace: an evicted
// record is a forgotten proof or revocation (every record has an expiry,
// so volatile-* policies take them), and under allkeys-* the marker
// itself can go. So the script reads INFO memory, and every call fails,
// with an error that says to set maxmemory-policy noeviction, unless
// maxmemory is 0 (Redis's default) or the policy is noeviction (also the
// default; managed services often set another: ElastiCache's is
// volatile-lru); a Verifier reports it as dpop.ErrReplayStoreUnavailable,
// the reference server as 503. It reads INFO stats too: evicted_keys
// rising (an evicting policy set and reset between two calls) begins the
// keyspace again, as a restart does, and so does a call of SWAPDB, MOVE,
// DEBUG or CONFIG RESETSTAT (INFO commandstats), which lose or replace keys,
// or hide that they did, while run_id stays. The client's Redis user must be
// allowed INFO (server, memory, stats and commandstats) inside EVAL.
//
// Remember returns by ctx's deadline whatever the client's configuration
// (ContextTimeoutEnabled or not): the commands run on a goroutine of their
// own, which ends when go-redis gives up. A ReplayStore is safe for
// concurrent use.
type ReplayStore struct {
	client redis.UniversalClient
	prefix string
	since  string
	// gen is the highest generation of the marker seen (replaymarker).
	gen replaymarker.Generation
	// lifetime is how long before its until a record may have been
	// taken: maxAge + maxSkew, plus twice the margin.
	lifetime time.Duration
	// replicas is how many replicas must acknowledge a record (WAIT)
	// before it counts as first, within wait; 0 for none.
	replicas int
	wait     time.Duration
	// optErr is the misuse of an option that NewReplayStore reports.
	optErr string
}

var _ dpop.ChargedReplayStore = (*ReplayStore)(nil)

// ReplayOption configures a [ReplayStore].
type ReplayOption func(*ReplayStore)

// WithIATWindow tells the store the iat window of the Verifiers that use it
// (dpop.WithIATWindow's maxAge and maxSkew); the default is
// dpop.DefaultMaxAge and dpop.DefaultMaxSkew. It must be at least as wide as
// every such Verifier's, or a proof accepted just before Redis lost its keys
// could be accepted again after. NewReplayStore panics when maxAge is not
// from dpop.MinMaxAge (1 s) to dpop.MaxIATWindow (1 h) or maxSkew not
// from 0 to dpop.MaxIATWindow, as dpop.WithIATWindow refuses them.
func WithIATWindow(maxAge, maxSkew time.Duration) ReplayOption {
	return func(s *ReplayStore) {
		if maxAge < dpop.MinMaxAge || maxAge > dpop.MaxIATWindow || maxSkew < 0 || maxSkew > dpop.MaxIATWindow {
			s.optErr = fmt.Sprintf("WithIATWindow(%v, %v): give maxAge from %v to %v and maxSkew from 0 to %v, the Verifiers' own window",
				maxAge, maxSkew, dpop.MinMaxAge, dpop.MaxIATWindow, dpop.MaxIATWindow)
			return
		}
		s.lifetime = maxAge + maxSkew + 2*dpop.ReplayStoreMargin
	}
}

// WithReplicas makes the store count a proof as first only once at least
// n replicas of the Redis primary acknowledged its record: after the SET,
// on the same connection, it sends WAIT n timeout, and refuses the proof
// (the Verifier reports dpop.ErrReplayStoreUnavailable) when fewer than n
// acknowledged within timeout (rounded up to the millisecond). A proof
// accepted is then on n replicas, so a failover to any of them (with n
// the number of replicas, to whichever Sentinel promotes) still refuses
// its replay. Without it (the default), a failover to an asynchronous
// replica that missed the newest records accepts their proofs again.
//
// Each proof then waits for the replicas' acknowledgement (about one
// round trip between the primary and its replicas); a replica down or
// lagging makes proofs refused, up to timeout each, until it is back or n
// is lowered. The same holds for RecordOnce's records, and for the
// records Recorded finds (see them). timeout must be at most
// [MaxReplicaWait] (1 s, half of dpop.ReplayStoreTimeout, which bounds
// each call of the store): the rest is left for the call's other round
// trips, so that a WAIT that falls short is answered as such within the
// bound rather than cut by it; a few hundred milliseconds suit most
// deployments. It needs a *redis.Client (a single server, or
// redis.NewFailoverClient for Sentinel): a Cluster or a Ring spreads a
// pipeline over servers. NewReplayStore panics when n < 1, timeout <= 0
// or timeout > MaxReplicaWait, or the client is not a *redis.Client.
func WithReplicas(n int, timeout time.Duration) ReplayOption {
	return func(s *ReplayStore) {
		if n < 1 || timeout <= 0 {
			s.optErr = fmt.Sprintf("WithReplicas(%d, %v): give n >= 1 replicas and a timeout > 0", n, timeout)
			return
		}
		if timeout > MaxReplicaWait {
			s.optErr = fmt.Sprintf("WithReplicas(%d, %v): give a timeout of at most redisstore.MaxReplicaWait (%v): each call of the store, WAIT and its other round trips together, is bounded by dpop.ReplayStoreTimeout (%v)", n, timeout, MaxReplicaWait, dpop.ReplayStoreTimeout)
			return
		}
		s.replicas, s.wait = n, (timeout + time.Millisecond - 1).Truncate(time.Millisecond)
	}
}

// NewReplayStore returns a ReplayStore keeping its keys under prefix
// ([DefaultReplayPrefix] when empty; give replicas of one service the same
// prefix and other services other ones) in client. It panics if client is
// nil or neither a *redis.Client nor a *redis.ClusterClient (a redis.Ring
// would lay records on servers no marker watches), or an option is misused
// ([WithReplicas] says how).
func NewReplayStore(client redis.UniversalClient, prefix string, opts ...ReplayOption) *ReplayStore {
	if client == nil {
		panic("redisstore: NewReplayStore: nil client")
	}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
	default: // a Ring, or a wrapper of one, spreads records over servers no marker watches
		panic(fmt.Sprintf("redisstore: NewReplayStore: a %T may spread records over servers that no keyspace marker watches (a restart or an eviction there forgets proofs and revocations unseen); use a *redis.Client (one server, or Sentinel's redis.NewFailoverClient) or a *redis.ClusterClient", client))
	}
	if prefix == "" {
		prefix = DefaultReplayPrefix
	}
	s := &ReplayStore{client: client, prefix: prefix, since: prefix + SinceKey,
		lifetime: dpop.DefaultMaxAge + dpop.DefaultMaxSkew + 2*dpop.ReplayStoreMargin}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	if s.optErr != "" {
		panic("redisstore: NewReplayStore: " + s.optErr)
	}
	if _, single := client.(*redis.Client); s.replicas > 0 && !single {
		panic(fmt.Sprintf("redisstore: NewReplayStore: WithReplicas needs a *redis.Client (a single server or Sentinel's failover client), not a %T: WAIT must follow the SET on its connection", client))
	}
	return s
}

// markers reads the marker's script's answers; its errors are the
// store's about the keyspace.
var (
	markers                                       = replaymarker.NewReader("redisstore: ")
	errKeyspaceNew, errCallerAhead, errClockAhead = markers.KeyspaceNew, markers.CallerAhead, markers.ClockAhead
)

// errNotReplicated is the error of a proof whose record too few replicas
// acknowledged (WithReplicas).
var errNotReplicated = errors.New("redisstore: too few replicas acknowledged the proof's record")

// Remember records key until until with SET NX PXAT and reports whether it
// was not recorded already. It fails, whatever SET answered, when the
// keyspace began too late to hold every earlier record of the proof, or
// Redis's clock ran ahead of this process's by more than the margin (see
// ReplayStore), when fewer replicas than [WithReplicas] asks acknowledged
// the record, and on any Redis error.
func (s *ReplayStore) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	// Round up: the key must not expire before until.
	ms := replaymarker.CeilMilli(until)
	var set, wait, marker *redis.Cmd
	// bounded: the call returns by ctx's deadline whatever the client's
	// configuration (a frozen Redis, no ContextTimeoutEnabled).
	if err := s.pipelined(ctx, func(pipe redis.Pipeliner) {
		set = pipe.Do(ctx, "SET", s.prefix+key, "1", "NX", "PXAT", ms)
		wait = s.queueWait(ctx, pipe)
		marker = s.decideMarker(ctx, pipe, true)
	}); err != nil {
		return false, err
	}
	first, err := setResult(set)
	if err != nil || !first {
		return false, err
	}
	if err := s.replicated(wait); err != nil {
		return false, err
	}
	return markers.First(&s.gen, ms, s.lifetime, marker)
}

// errOverLimit is the error of a proof dated no later than a record its
// key had to drop to stay within the Verifier's limit (RememberCharged):
// the Verifier refuses it with dpop.ErrReplayCacheFull, that key's alone.
var errOverLimit = fmt.Errorf("redisstore: the proof is dated no later than a record its key dropped to stay within its limit (dpop.WithReplayKeyLimit): %w", dpop.ErrReplayCacheFull)

// RememberCharged is Remember, charging the record to owner (the
// Verifier's digest of the proof's key, dpop.ChargedReplayStore): the
// record and its charge are one EVAL ([replaymarker.ChargeScript]), in
// place of the SET, in the same pipeline as the marker's script. The owner
// holds at most limit records, its oldest (by iat) dropped to make room,
// and a proof dated no later than the newest record it dropped is
// refused, writing nothing, with an error wrapping dpop.ErrReplayCacheFull
// (it cannot be told from that record's replay): fresh proofs always
// pass, as in memory. So one caller's key cannot fill Redis: it holds at
// most limit records (with the Verifier's defaults, 10,000, some 3 MB with
// their names in its set), a sorted set of their names and a mark.
//
// On a Cluster the record and its owner's keys lie in different slots,
// which one script cannot touch. There the record is written first
// (Remember: a replay stops there, having changed nothing), then charged
// in a round trip of its own on the owner's slot
// ([replaymarker.ChargeCountScript]); a proof over its key's limit has
// its record deleted again (it was refused: no replay of it can be
// accepted), and the records the charge dropped are deleted once the
// key's mark outlives them (dropRecords). The order is the rule (a-rep14,
// a-rep14b): no step deletes what decides the request under way (the
// charge once popped a replay's own record, which the SET then wrote
// again), and stopping after any step leaves the store at least as strict
// as before.
func (s *ReplayStore) RememberCharged(ctx context.Context, key, owner string, limit int, iat, until time.Time) (bool, error) {
	a := replaymarker.ChargeArgs(iat, until, limit)
	set, mark := replaymarker.ChargeKeys(s.prefix, owner)
	if _, single := s.client.(*redis.Client); single {
		return s.rememberCharged(ctx, key, set, mark, a, until)
	}
	first, err := s.Remember(ctx, key, until)
	if err != nil || !first {
		return first, err
	}
	var answer []any
	err = bounded(ctx, func() error {
		var err error
		answer, err = s.client.Eval(ctx, replaymarker.ChargeCountScript, []string{set, mark}, a[0], a[1], a[2], a[3], s.prefix+key).Slice()
		return err
	})
	var n int64 = -2
	if len(answer) > 0 {
		n, _ = answer[0].(int64)
	}
	switch {
	case err != nil:
		return false, fmt.Errorf("redisstore: charging the proof to its key: %w", err)
	case n == replaymarker.ChargeOverLimit:
		// The record just written goes with its refused proof, so a flood of
		// one key's stragglers stores nothing. Failing to delete it leaves
		// only a record until its own expiry.
		_ = bounded(ctx, func() error { return s.client.Del(ctx, s.prefix+key).Err() })
		return false, errOverLimit
	case n != replaymarker.ChargeFirst || len(answer) < 2:
		return false, fmt.Errorf("redisstore: the charge's script answered %v", answer)
	}
	markValue, _ := answer[1].(string)
	if err := s.dropRecords(ctx, mark, markValue, answer[2:]); err != nil {
		return false, err
	}
	return true, nil
}

// dropRecords deletes, on a Cluster, the records the charge dropped (each
// in a slot of its own), after keeping the key's mark (markValue, the
// charge's) until each would have expired (replaymarker.ExtendMarkScript,
// on the mark's slot, which writes the mark again if it lapsed meanwhile):
// the count script, on another slot, could not read their own expiry,
// which a Verifier of a wider window than the charging one chose. The
// order is the rule (a-rep14 F1): a record, the evidence of its proof's
// replay, is deleted only once the mark that refuses that replay lasts as
// long as it would have, so a failure or a stall after any step leaves
// the store at least as strict as before: a record not deleted still
// refuses its replay, and is only uncounted until it expires.
func (s *ReplayStore) dropRecords(ctx context.Context, mark, markValue string, dropped []any) error {
	names := make([]string, 0, len(dropped))
	var longest time.Duration
	for _, d := range dropped {
		name, ok := d.(string)
		if !ok {
			continue
		}
		err := bounded(ctx, func() error {
			left, err := s.client.PTTL(ctx, name).Result()
			longest = max(longest, left)
			return err
		})
		if err != nil {
			return fmt.Errorf("redisstore: reading a dropped record's expiry: %w", err)
		}
		names = append(names, name)
	}
	if longest > 0 {
		err := bounded(ctx, func() error {
			return s.client.Eval(ctx, replaymarker.ExtendMarkScript, []string{mark}, longest.Milliseconds()+1, markValue).Err()
		})
		if err != nil {
			return fmt.Errorf("redisstore: keeping the mark of the proof's key: %w", err)
		}
	}
	for _, name := range names {
		if err := bounded(ctx, func() error { return s.client.Del(ctx, name).Err() }); err != nil {
			return fmt.Errorf("redisstore: dropping a record of the proof's key: %w", err)
		}
	}
	return nil
}

// rememberCharged is RememberCharged on a single server: the record and
// its charge in one script.
func (s *ReplayStore) rememberCharged(ctx context.Context, key, set, mark string, a [4]string, until time.Time) (bool, error) {
	var rec, wait, marker *redis.Cmd
	if err := s.pipelined(ctx, func(pipe redis.Pipeliner) {
		rec = pipe.Eval(ctx, replaymarker.ChargeScript, []string{s.prefix + key, set, mark}, a[0], a[1], a[2], a[3])
		wait = s.queueWait(ctx, pipe)
		marker = s.decideMarker(ctx, pipe, true)
	}); err != nil {
		return false, err
	}
	n, err := rec.Int64()
	switch {
	case err != nil:
		return false, fmt.Errorf("redisstore: %w", err)
	case n == replaymarker.ChargeOverLimit:
		return false, errOverLimit
	case n == replaymarker.ChargeTaken:
		return false, nil
	case n != replaymarker.ChargeFirst:
		return false, fmt.Errorf("redisstore: the record's script answered %d", n)
	}
	if err := s.replicated(wait); err != nil {
		return false, err
	}
	return markers.First(&s.gen, replaymarker.CeilMilli(until), s.lifetime, marker)
}

// Recorded reports whether key was recorded (by [ReplayStore.Remember] or
// [ReplayStore.RecordOnce]) and has not expired, with GET of the key and
// the marker's script in one pipeline, writing nothing (but the marker,
// decided as Remember does). It fails when the keyspace began after since
// less [dpop.ReplayStoreMargin] (a record made since since may have been
// lost with the keys) or Redis's clock ran ahead of this process's by more
// than the margin (the record may have expired early; see ReplayStore),
// and on any Redis error. The reference server reads
// revocations, spent authorization codes and web UI logouts with it
// (mockserver.SharedStore).
//
// With [WithReplicas], a record found is answered only once the replicas
// hold it, as RecordOnce's are: a second round trip writes it back as it
// is ([onetime.Script]) and sends WAIT, and too few acknowledgements fail
// the call. So no answer stands on a record that a failover could lose
// (one whose writer's WAIT is still pending, or failed). A record not
// found costs no wait.
func (s *ReplayStore) Recorded(ctx context.Context, key string, since time.Time) (bool, error) {
	var val *redis.StringCmd
	var marker *redis.Cmd
	if err := s.pipelined(ctx, func(pipe redis.Pipeliner) {
		val = pipe.Get(ctx, s.prefix+key)
		marker = s.decideMarker(ctx, pipe, false)
	}); err != nil {
		return false, err
	}
	if err := val.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("redisstore: %w", err)
	}
	if _, err := markers.Vouch(&s.gen, since, marker); err != nil {
		return false, err
	}
	found := val.Err() == nil
	if found && s.replicas > 0 {
		if err := s.heldByReplicas(ctx, key); err != nil {
			return false, err
		}
	}
	return found, nil
}

// heldByReplicas waits (WithReplicas) for the replicas to acknowledge the
// record key that a read found, whoever wrote it: [onetime.Script] writes
// it back as it is, on this connection, and WAIT follows; an error unless
// enough replicas acknowledged within the timeout. A record that expired
// meanwhile is not written again.
func (s *ReplayStore) heldByReplicas(ctx context.Context, key string) error {
	var rec, wait *redis.Cmd
	if err := s.pipelined(ctx, func(pipe redis.Pipeliner) {
		rec = pipe.Eval(ctx, onetime.Script, []string{s.prefix + key}, "", 0, "1")
		wait = s.queueWait(ctx, pipe)
	}); err != nil {
		return err
	}
	if _, _, err := recordResult(rec); err != nil {
		return err
	}
	return s.replicated(wait)
}

// RecordOnce records key until until, written by writer, unless it is
// recorded, and reports whether the record is the caller's: true when it
// was not recorded (the call wrote it) or when writer wrote it (the
// call's own retry after a failure that came after its write reached
// Redis: too few replicas acknowledged it, or its answer came late);
// false for a record of another writer. writer must be 1 to
// [onetime.MaxWriter] bytes: a digest of what makes the same request
// recognisable and nobody else's (the reference server's code spends use
// one of the code, the client and the PKCE verifier); callers for whom any
// retry is the same (a revocation) give one constant. The record holds it
// as its value; [ReplayStore.Remember]'s records hold "1" and never match
// a writer (a DPoP proof is strictly one-time).
//
// It is a one-time record of something issued at since (the reference
// server's revocations, spent authorization codes and web UI logouts:
// mockserver.SharedStore). It decides first, by the marker's script (one
// round trip), whether the keyspace began no later than since less
// [dpop.ReplayStoreMargin], as [ReplayStore.Recorded] does, and fails with
// nothing written when it did not, or on any Redis error before the
// write: a call that fails there changes nothing for its retry. No DPoP
// proof window applies (Remember's: a record taken and then refused for
// the window would make its retry find it taken). The write is
// [onetime.Script] (EVAL: the record is written unless it is there, and
// its value read back, in one atomic step), sent with the marker's script
// again: a marker begun or changed between the two (Redis lost its keys,
// restarted or failed over meanwhile) fails the call, the record then
// being in a keyspace that cannot vouch for since, which every retry's
// first step refuses. The two are compared as numbers (the script's
// answer parsed).
//
// With [WithReplicas], the call succeeds only once the replicas
// acknowledged the record, whoever wrote it: the script writes a record
// it finds back as it is (a write on this connection after the record's,
// whichever call made it) and WAIT follows, so "recorded already" too is
// answered only for a record the replicas hold; too few acknowledgements
// fail the call. A record once written is never withdrawn (a concurrent
// call may have answered on it already): it stays, its writer's retry
// waits for the replicas again and then succeeds, and anyone else's is
// refused. Calls return by ctx's deadline, as Remember's do.
func (s *ReplayStore) RecordOnce(ctx context.Context, key, writer string, until, since time.Time) (bool, error) {
	if err := onetime.CheckWriter("redisstore: ", writer); err != nil {
		return false, err
	}
	var marker *redis.Cmd
	if err := s.pipelined(ctx, func(pipe redis.Pipeliner) {
		marker = s.decideMarker(ctx, pipe, false)
	}); err != nil {
		return false, err
	}
	began, err := markers.Vouch(&s.gen, since, marker)
	if err != nil {
		return false, err
	}
	var rec, wait, again *redis.Cmd
	if err := s.pipelined(ctx, func(pipe redis.Pipeliner) {
		rec = pipe.Eval(ctx, onetime.Script, []string{s.prefix + key}, writer, replaymarker.CeilMilli(until), s.rewrite())
		wait = s.queueWait(ctx, pipe)
		again = s.decideMarker(ctx, pipe, true)
	}); err != nil {
		return false, err
	}
	state, value, err := recordResult(rec)
	if err != nil {
		return false, err
	}
	if err := markers.Same(&s.gen, began, again); err != nil {
		return false, err // the keys may have been lost between the reads
	}
	// New, the caller's or another's, the record stands only once the
	// replicas hold it; it is never deleted (a twin may have answered on
	// it).
	if err := s.replicated(wait); err != nil {
		return false, err
	}
	return state == onetime.New || value == writer, nil
}

// Finish finishes key's one-time record, which writer's
// [ReplayStore.RecordOnce] found its own, before the caller answers on it,
// and reports whether this call finished it: the record then holds
// [onetime.Finished] (its expiry kept), and no later RecordOnce or Finish
// of writer finds it its own, so the request it stands for is answered
// once, whoever repeats it and however concurrently (the reference
// server's code redemption: a retry after a failure before the finish
// passes, a repeat or a twin does not). It is one EVAL
// ([onetime.FinishScript]); false, with no error, for a record finished
// already, another writer's or none; an error on any Redis error (the
// finish may then have been written: the caller must not answer on it).
// It does not wait for replicas: a record a failover loses its finish for
// holds writer again, which only that writer's own repeat finds its own.
// Calls return by ctx's deadline.
func (s *ReplayStore) Finish(ctx context.Context, key, writer string) (bool, error) {
	var res string
	err := bounded(ctx, func() error {
		var err error
		res, err = s.client.Eval(ctx, onetime.FinishScript, []string{s.prefix + key}, writer).Text()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("redisstore: finishing a one-time record: %w", err)
	}
	// A write: the marker's generation rises, in a round trip of its own
	// whose answer only raises what this store has seen. The record is
	// finished whatever it says: an error here would refuse a redemption
	// whose record is spent, and its retry too.
	var marker *redis.Cmd
	if s.pipelined(ctx, func(pipe redis.Pipeliner) { marker = s.decideMarker(ctx, pipe, true) }) == nil {
		_, _, _ = markers.Result(&s.gen, marker)
	}
	return res == "1", nil
}

// rewrite is [onetime.Script]'s last argument: "1" (write a record found
// back, so that WAIT covers it) with WithReplicas, "0" without.
func (s *ReplayStore) rewrite() string {
	if s.replicas > 0 {
		return "1"
	}
	return "0"
}

// recordResult reads the answer to [onetime.Script]: its state and the
// record's value.
func recordResult(c *redis.Cmd) (state, value string, err error) {
	res, err := c.Slice()
	if err != nil {
		return "", "", fmt.Errorf("redisstore: writing a one-time record: %w", err)
	}
	if len(res) == 2 {
		state, _ = res[0].(string)
		value, _ = res[1].(string)
		if state == onetime.New || state == onetime.Found || state == onetime.Absent {
			return state, value, nil
		}
	}
	return "", "", fmt.Errorf("redisstore: writing a one-time record: the script answered %v", res)
}

// replicated checks the answer to WAIT, nil when WithReplicas is not set:
// an error unless the replicas it asks for acknowledged the write.
func (s *ReplayStore) replicated(wait *redis.Cmd) error {
	if wait == nil {
		return nil
	}
	n, err := wait.Int64()
	if err != nil {
		return fmt.Errorf("redisstore: WAIT: %w", err)
	}
	if n < int64(s.replicas) {
		return fmt.Errorf("%w: %d of %d within %v", errNotReplicated, n, s.replicas, s.wait)
	}
	return nil
}

// pipelined sends the commands queue queues in one pipeline, bounded by
// ctx; a key not found (redis.Nil) is the command's answer, not an error.
func (s *ReplayStore) pipelined(ctx context.Context, queue func(redis.Pipeliner)) error {
	err := bounded(ctx, func() error {
		pipe := s.client.Pipeline()
		queue(pipe)
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstore: %w", err)
	}
	return nil
}

// queueWait queues WAIT for the replicas WithReplicas asks for in pipe, on
// the connection of the writes queued before; nil without WithReplicas.
func (s *ReplayStore) queueWait(ctx context.Context, pipe redis.Pipeliner) *redis.Cmd {
	if s.replicas == 0 {
		return nil
	}
	return pipe.Do(ctx, "WAIT", s.replicas, s.wait.Milliseconds())
}

// decideMarker queues [replaymarker.Script] on the marker in pipe, with
// this process's clock reading: the server decides the marker in one
// atomic step, by its own clock and run_id, and answers its time and
// whether it began the keyspace now, or that its clock ran ahead of the
// reading (markerResult reads the answer). Every read of the marker is
// this script: one parser, one rule. wrote says that a record was queued
// before it in pipe, which raises the marker's generation.
func (s *ReplayStore) decideMarker(ctx context.Context, pipe redis.Pipeliner, wrote bool) *redis.Cmd {
	a := replaymarker.Args(&s.gen, wrote)
	return pipe.Eval(ctx, replaymarker.Script, []string{s.since}, a[0], a[1], a[2], a[3])
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
