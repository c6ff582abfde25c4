package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/invalidation"
)

// DefaultChannel is the Redis channel an Invalidator made with an empty
// channel name uses.
const DefaultChannel = "orgauthz:invalidations"

// The Invalidator's heartbeat: a publication on the session's own
// heartbeat channel every heartbeatEvery, at most maxPending unanswered. A
// session whose oldest unanswered heartbeat is older than lostAfter, or
// that reads nothing for lostAfter, is taken as broken and made again.
const (
	heartbeatEvery = 250 * time.Millisecond
	maxPending     = 64
	lostAfter      = invalidation.DefaultTrust
	// The pauses between attempts to subscribe after a break.
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

// Invalidator carries the cache purges of pep and authzen clients between
// replicas over Redis pub/sub (pep.WithInvalidator,
// authzen.WithInvalidator).
//
// Publish sends a purge on the channel. Subscribe subscribes, on one
// connection, to the channel and to a heartbeat channel of its own
// ("<channel>:hb:<nonce>", in the channel's cluster slot), and publishes
// on the latter, every 250 ms and through the same client call as the
// purges, a heartbeat carrying a fresh random 128-bit token whose send
// time it keeps. Only the echo of a token sent and not yet back counts
// (the nonce is in the channel's name, which anyone may list): an echo
// that matches nothing is ignored, and can neither vouch for the channel
// nor hide a heartbeat that did not come back. Both channels are ordered by
// the one Redis process that takes the purges, so a heartbeat that comes
// back says that every purge published before it was sent has been
// received: that is invalidation.Receiver.Heartbeat, stamped with the send
// time (read before the publication, on the monotonic clock). A client
// trusts its cache for invalidation.DefaultTrust (2 s) after a heartbeat
// was sent. A PING would not do: it proves that the subscriber's own node
// is current, not that the node the purges were published on has passed
// them on.
//
// A heartbeat that comes back proves only that the server it was
// published on passed it on: Redis accepts PUBLISH on a replica and
// delivers it to that replica's own subscribers only, so a replica whose
// pooled connections a failover left on the demoted primary (Redis's
// FAILOVER, a REPLICAOF, a DNS name or proxy switched without closing
// connections) would hear its own heartbeats while the other replicas,
// subscribed on the promoted server, never hear its purges. So every
// publication, purge, purge-all and heartbeat alike, is one Lua script
// (EVALSHA) that publishes only once the same server, in the same step,
// has proved it is the primary: it deletes "<channel>:primary" (a write
// that changes nothing; a read-only replica refuses it, and so does a
// primary refusing writes under min-replicas-to-write or MISCONF) and
// reads role:master in INFO replication (which a writable replica does
// not answer). Nothing else may store anything under that key, and the
// client's Redis user must be allowed EVALSHA, EVAL, INFO and DEL of that
// key besides pub/sub (a refusal fails the publication). A replica
// answers READONLY, on which go-redis drops the connection and retries on
// another: a retry that reaches the primary publishes there, and
// otherwise Publish fails and a heartbeat refused ends the session
// (reported lost, the cache untrusted until a session on a primary is
// up). Publish returns nil only once a primary took the publication. The
// script costs the primary about 8 µs of CPU per publication where a bare
// PUBLISH costs 0.2 µs (Redis 7.0, INFO commandstats), some 35 µs a
// second for each subscribed replica's four heartbeats; a publication's
// round trip is that much longer (BenchmarkPublish).
//
// Being the primary is not enough: a failover done in two steps (a
// replica promoted and the client's name switched to it, then the old
// primary demoted) leaves two primaries between the steps, and a
// subscriber on the old one never hears a purge the new one took, not
// even once the old one is demoted and resyncs (pub/sub is in no
// snapshot), while its heartbeats, refused there, would be retried on the
// new primary and replicated back to it. So the script also answers the
// primary's master_replid (from the same INFO replication, at no extra
// cost), and each subscription is tied to the replication history of the
// first primary that takes one of its heartbeats or of the Invalidator's
// purges: a heartbeat counts only when its echo arrives and a primary of
// that history took it, and a heartbeat or purge taken under another
// master_replid ends the subscription (reported lost; the next one purges
// the whole cache). Once the old primary is demoted, a replica subscribed
// there stops trusting its cache at its next heartbeat (about 250 ms; at
// most lostAfter when the refused heartbeat's retries are slow); while
// both are primaries, purges taken by one reach only the subscribers of
// the other's history, so such a gap must stay short (Redis's FAILOVER
// demotes before it promotes). A primary's first replica (or the first
// after its backlog was freed, repl-backlog-ttl) begins a new history
// too, which ends every subscription once.
//
// A subscription that fails, whose heartbeat does not come back within
// 2 s, or that reads nothing for 2 s, is reported lost (the client stops
// serving its cache) and made again, after a pause that grows from 50 ms
// to 2 s; the next heartbeat purges the whole cache before it is trusted.
// So Redis restarting needs nothing of the replicas, and after a Sentinel
// failover (go-redis leaves subscriptions on the old master) the
// subscription moves to the new master within 2 s, the cache untrusted
// meanwhile.
//
// The topologies (the client's type says which; each subscription also
// asks the server, through the client's ordinary command path, before it
// subscribes):
//
//   - a single server or a Sentinel-managed primary (redis.NewClient,
//     redis.NewFailoverClient): PUBLISH and SUBSCRIBE. The server must
//     pass the publications' primary check and must not be a Cluster node
//     (INFO cluster): a Sentinel client made with ReplicaOnly or RouteRandomly
//     lands on replicas, where a publication reaches only that replica's
//     subscribers, and a Cluster carries classic pub/sub over its bus,
//     unordered with the heartbeats. Otherwise the subscription fails,
//     reported lost with an error that says what to use, and the clients
//     never trust their caches (fail closed);
//   - a Cluster (redis.NewClusterClient, including ReadOnly, RouteByLatency
//     and RouteRandomly): sharded pub/sub, SPUBLISH and SSUBSCRIBE (Redis
//     7 or later), which sends the purges and the heartbeats to the
//     channel's slot master, and a subscription on one of its replicas
//     receives both through the same replication stream. A channel name
//     with a '}' but no hash tag is refused (its heartbeat channel could
//     not share its slot);
//   - a redis.Ring, or any other redis.UniversalClient, is refused: its
//     channels may sit on servers that do not order each other's
//     messages. Every Publish and Subscribe of such an Invalidator fails
//     with an error that says what to use, and the clients never trust
//     their caches.
//
// Every Publish returns by ctx's deadline whatever the client's
// configuration (ContextTimeoutEnabled or not): the command runs on a
// goroutine of its own, which ends when go-redis gives up.
//
// An Invalidator is safe for concurrent use, and one may serve several
// clients, each Subscribe call holding a connection of its own.
type Invalidator struct {
	client  redis.UniversalClient
	channel string
	sharded bool  // a Cluster: SPUBLISH and SSUBSCRIBE
	err     error // why the client or channel is refused

	mu       sync.Mutex
	sessions map[*history]struct{} // the running sessions (join)
}

// NewInvalidator returns an Invalidator on channel (DefaultChannel when
// empty) through client, which the caller keeps and closes. Every replica
// of a service must use the same channel; services whose caches must not
// purge each other use different ones. client must be a *redis.Client
// (single server, Sentinel) or a *redis.ClusterClient; with a nil client,
// a redis.Ring or any other type, every Publish and Subscribe fails with
// an error that says what to use.
func NewInvalidator(client redis.UniversalClient, channel string) *Invalidator {
	if channel == "" {
		channel = DefaultChannel
	}
	v := &Invalidator{client: client, channel: channel}
	switch client.(type) {
	case nil:
		v.err = errNoClient
	case *redis.Client:
	case *redis.ClusterClient:
		v.sharded = true
		if !hasHashTag(channel) && strings.Contains(channel, "}") {
			v.err = fmt.Errorf("redisstore: NewInvalidator: the channel %q has a '}' but no hash tag, so its heartbeat channel cannot share its Cluster slot; give it a hash tag (\"{orders-api}:invalidations\") or drop the '}'", channel)
		}
	case *redis.Ring:
		v.err = errors.New("redisstore: NewInvalidator: a redis.Ring spreads channels over servers that do not order each other's messages, so no heartbeat could vouch for the purges; use a redis.Client (one server, or Sentinel's redis.NewFailoverClient) or a redis.ClusterClient")
	default:
		v.err = fmt.Errorf("redisstore: NewInvalidator: unsupported Redis client %T; use a *redis.Client (one server, or Sentinel's redis.NewFailoverClient) or a *redis.ClusterClient", client)
	}
	return v
}

var _ invalidation.Invalidator = (*Invalidator)(nil)

// errNoClient is the error of an Invalidator without a client.
var errNoClient = errors.New("redisstore: the Invalidator has no Redis client; pass one to NewInvalidator")

// hasHashTag reports whether a Cluster hashes name by a hash tag: a '{'
// followed, not at once, by a '}'.
func hasHashTag(name string) bool {
	i := strings.IndexByte(name, '{')
	if i < 0 {
		return false
	}
	return strings.IndexByte(name[i+1:], '}') > 0
}

// heartbeatChannel is the channel of a session's heartbeats: the same
// Cluster slot as the purges' channel.
func (v *Invalidator) heartbeatChannel(nonce string) string {
	if !v.sharded || hasHashTag(v.channel) {
		return v.channel + ":hb:" + nonce
	}
	return "{" + v.channel + "}:hb:" + nonce
}

// Publish publishes msg on the channel and returns once Redis answered, or
// with ctx's error once ctx is done, whatever the client's configuration.
// It returns nil only once a primary took the publication; a server that
// is a replica refuses it, with an error that says so.
func (v *Invalidator) Publish(ctx context.Context, msg []byte) error {
	if v.err != nil {
		return v.err
	}
	replid, err := v.publish(ctx, v.channel, msg)
	if err != nil {
		return fmt.Errorf("redisstore: publishing an invalidation: %w", err)
	}
	v.tookPurge(replid)
	return nil
}

// publish sends msg on channel, the purges and the heartbeats alike,
// through the one script that publishes on a primary only
// (publishOnPrimary), and returns by ctx's deadline (bounded). A nil
// error says that a primary took the publication, and replid is that
// primary's master_replid.
func (v *Invalidator) publish(ctx context.Context, channel string, msg []byte) (replid string, err error) {
	payload := string(msg) // a copy: msg is the caller's once this returns
	var id string
	err = bounded(ctx, func() error {
		var err error
		id, err = v.publishOnPrimary(ctx, channel, payload)
		return err
	})
	if err != nil {
		return "", err // id may still be written: not read
	}
	return id, nil
}

// Subscribe subscribes to the channel and reports its messages and
// heartbeats to r until ctx is done, making the subscription again, after
// r.Lost, whenever it breaks. It returns ctx's error, or at once the error
// of a refused client.
func (v *Invalidator) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	if v.err != nil {
		return v.err
	}
	pause := retryMin
	for ctx.Err() == nil {
		beat, err := v.session(ctx, r)
		if ctx.Err() != nil {
			break
		}
		r.Lost(err)
		if beat {
			pause = retryMin
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		pause = min(2*pause, retryMax)
	}
	return ctx.Err()
}

// The heartbeat's message: a version byte, hbKind and a fresh random
// 128-bit token. The nonce names the session's heartbeat channel, which
// anyone may list (PUBSUB CHANNELS): it is no secret, and only the token,
// which nothing sends before the heartbeat itself, makes an echo count.
const (
	hbVersion  = 2
	hbKind     = 'h'
	nonceBytes = 16
	tokenBytes = 16
	hbBytes    = 2 + tokenBytes
)

// heartbeat is a heartbeat sent and not yet back.
type heartbeat struct {
	sent  time.Time     // read just before the publication
	taken chan struct{} // closed once the publication was taken
	ours  bool          // set before taken is closed: taken under the session's history
}

// session runs one subscription until it breaks or ctx is done, and
// reports why it ended and whether it delivered a heartbeat.
func (v *Invalidator) session(ctx context.Context, r invalidation.Receiver) (beat bool, err error) {
	if err := v.checkTopology(ctx); err != nil {
		return false, err
	}
	var nonce [nonceBytes]byte
	_, _ = rand.Read(nonce[:])
	hb := v.heartbeatChannel(hex.EncodeToString(nonce[:]))

	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var ps *redis.PubSub
	if v.sharded {
		ps = v.client.SSubscribe(sctx)
	} else {
		ps = v.client.Subscribe(sctx)
	}
	// Subscribing dials, and may wait for a frozen Redis past ctx
	// (bounded) holding the subscription's lock, which Close takes: a
	// subscription given up on is closed on a goroutine, which ends when
	// go-redis gives up.
	err = bounded(sctx, func() error {
		if v.sharded {
			return ps.SSubscribe(sctx, v.channel, hb)
		}
		return ps.Subscribe(sctx, v.channel, hb)
	})
	if err != nil {
		// Close runs the user's Redis client (its hooks, its dialer) on a
		// goroutine of the store's own: under safego, as every one.
		go func() { _ = safego.Call(func() { _ = ps.Close() }) }()
		return false, fmt.Errorf("redisstore: subscribing to the invalidation channel: %w", err)
	}
	defer func() { _ = ps.Close() }()
	// A read waits for its timeout, not for ctx: closing the
	// subscription ends it at once.
	context.AfterFunc(sctx, func() { _ = ps.Close() })
	// A heartbeat published before Redis took the subscription would
	// never come back: wait for both confirmations first.
	for subscribed := 0; subscribed < 2; {
		m, err := ps.ReceiveTimeout(sctx, lostAfter)
		if err != nil {
			return false, fmt.Errorf("redisstore: subscribing to the invalidation channel: %w", err)
		}
		if s, ok := m.(*redis.Subscription); ok && (s.Kind == "subscribe" || s.Kind == "ssubscribe") {
			subscribed++
		}
	}

	// The session is tied to the replication history of the primary
	// that takes its first publication (history): a heartbeat, or a
	// purge of this Invalidator, taken under another ends it.
	h := &history{end: stop}
	defer v.join(h)()

	// pending maps the token of each heartbeat not yet back to when it
	// was sent; the sender stops when the session ends. Only an echo of a
	// pending token counts, and it removes its own entry only: an echo
	// that matches nothing (forged, or from another session) is ignored,
	// so it can neither vouch for the channel nor hide a heartbeat that
	// did not come back. An echo counts only once its publication's
	// answer says the session's history took it: the echo may come first,
	// and then waits for that answer (the sender's publication ends by
	// lostAfter, or ends the session).
	var (
		mu      sync.Mutex
		pending = make(map[[tokenBytes]byte]*heartbeat)
		wg      sync.WaitGroup
	)
	defer func() { stop(nil); wg.Wait() }()
	send := func() error {
		mu.Lock()
		for _, b := range pending {
			if time.Since(b.sent) > lostAfter {
				mu.Unlock()
				return fmt.Errorf("redisstore: a heartbeat did not come back within %v", lostAfter)
			}
		}
		if len(pending) >= maxPending {
			mu.Unlock()
			return nil // the echoes are late: the heartbeat goes stale on its own
		}
		var token [tokenBytes]byte
		_, _ = rand.Read(token[:])
		// The time is read before the publication: its echo comes after
		// every purge Redis took before it.
		b := &heartbeat{sent: time.Now(), taken: make(chan struct{})}
		pending[token] = b
		mu.Unlock()
		msg := append([]byte{hbVersion, hbKind}, token[:]...)
		pctx, cancel := context.WithTimeout(sctx, lostAfter)
		defer cancel()
		replid, err := v.publish(pctx, hb, msg)
		if err != nil {
			return fmt.Errorf("redisstore: publishing a heartbeat: %w", err)
		}
		b.ours = h.took(replid)
		close(b.taken)
		if !b.ours {
			return errHistoryMoved
		}
		return nil
	}
	wg.Go(func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			if err := send(); err != nil {
				stop(err) // the receiving loop ends, saying why
				return
			}
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	})

	for {
		m, err := ps.ReceiveTimeout(sctx, lostAfter)
		if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
			return beat, cause
		}
		if err != nil {
			return beat, fmt.Errorf("redisstore: receiving from the invalidation channel: %w", err)
		}
		switch m := m.(type) {
		case *redis.Message:
			switch m.Channel {
			case v.channel:
				r.Message([]byte(m.Payload))
			case hb:
				p := m.Payload
				if len(p) != hbBytes || p[0] != hbVersion || p[1] != hbKind {
					continue
				}
				token := [tokenBytes]byte([]byte(p[2:]))
				mu.Lock()
				b, ok := pending[token]
				mu.Unlock()
				if !ok {
					continue
				}
				select {
				case <-b.taken:
				case <-sctx.Done():
					continue // the next receive ends the session, saying why
				}
				mu.Lock()
				delete(pending, token)
				mu.Unlock()
				if b.ours {
					r.Heartbeat(b.sent)
					beat = true
				}
			}
		case *redis.Subscription:
			if m.Kind == "unsubscribe" || m.Kind == "sunsubscribe" {
				// Redis dropped the subscription (a Cluster's slot moved).
				return beat, fmt.Errorf("redisstore: Redis ended the subscription to %s", m.Channel)
			}
		}
	}
}
