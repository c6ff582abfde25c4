package redisstore

import (
	"context"
	"errors"
	"sync"
)

// errHistoryMoved ends a session one of whose publications a primary of
// another replication history took.
var errHistoryMoved = errors.New("redisstore: a publication was taken by a primary of another replication history (a failover promoted a server): the subscription may have missed the purges published there")

// history ties a session to the replication history (master_replid) of
// the primary that took the first publication it saw, its heartbeat's
// or a purge's of the same Invalidator. Two servers that both answer
// role:master (a failover's promotion done, the old primary not yet
// demoted) carry apart what each takes: a subscriber of one never hears
// the other's purges, and once the old one is demoted and resyncs, what
// it missed is not in the snapshot it loads (pub/sub is in no snapshot),
// while the heartbeats it is refused are retried on the new primary and
// replicated to it, so they would come back. So a publication taken
// under another replid ends the session: reported lost, the cache
// untrusted, and purged whole at the next session's first heartbeat.
type history struct {
	end context.CancelCauseFunc // ends the session, saying why

	mu     sync.Mutex
	replid string // "" until the first publication
}

// took records that a primary whose master_replid is replid took one of
// the Invalidator's publications, and reports whether that is the
// session's history: the first replid it is given is, and any other ends
// the session (errHistoryMoved). Safe for concurrent use.
func (h *history) took(replid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.replid == "" {
		h.replid = replid
	}
	if h.replid == replid {
		return true
	}
	h.end(errHistoryMoved)
	return false
}

// join registers h, so the purges the Invalidator publishes are checked
// against its history, until the returned function is called.
func (v *Invalidator) join(h *history) (leave func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sessions == nil {
		v.sessions = make(map[*history]struct{})
	}
	v.sessions[h] = struct{}{}
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		delete(v.sessions, h)
	}
}

// tookPurge checks a purge that a primary whose master_replid is replid
// took against every session of the Invalidator: a session on another
// history ends (history.took).
func (v *Invalidator) tookPurge(replid string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for h := range v.sessions {
		h.took(replid)
	}
}
