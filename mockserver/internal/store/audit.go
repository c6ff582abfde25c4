package store

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// Audit outcomes.
const (
	OutcomeSuccess = "SUCCESS"
	OutcomeFailure = "FAILURE"
)

// Every tenant has an audit log of its own, which keeps its newest
// maxAudit entries in chunks of auditChunk: a tenant's callers, however many
// calls they make (a refused call is recorded too), can only push out their
// own tenant's history, never another's or the platform's. Entries are
// numbered in the order their log recorded them; entry n lives at
// n%auditChunk in chunk n/auditChunk. A chunk is written once, slot by slot,
// and never reused, so a reader that copied the list of chunks under the
// lock can read the entries recorded before that moment without it. Each
// entry also carries a sequence number from one counter for all logs, which
// orders a page that spans tenants.
const (
	maxAudit   = 100_000
	auditChunk = 1024
)

// auditRecord is an entry and its place in the platform's order.
type auditRecord struct {
	seq uint64
	AuditEntry
}

type auditChunkEntries [auditChunk]auditRecord

// auditLogs is the platform's audit: one log per tenant id.
type auditLogs struct {
	seq atomic.Uint64
	// max is the most entries a log keeps: maxAudit when zero. Tests lower
	// it, to fill a log with thousands of entries rather than 100,000.
	max int

	mu       sync.RWMutex
	byTenant map[string]*auditLog
}

// limit returns the most entries a log keeps.
func (a *auditLogs) limit() int {
	if a.max == 0 {
		return maxAudit
	}
	return a.max
}

// log returns tenant's log, making it on first use.
func (a *auditLogs) log(tenant string) *auditLog {
	a.mu.RLock()
	l := a.byTenant[tenant]
	a.mu.RUnlock()
	if l != nil {
		return l
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if l = a.byTenant[tenant]; l == nil {
		if a.byTenant == nil {
			a.byTenant = map[string]*auditLog{}
		}
		l = &auditLog{}
		a.byTenant[tenant] = l
	}
	return l
}

// auditLog is one tenant's log. Recording an entry costs the same whatever
// the log holds.
type auditLog struct {
	mu     sync.Mutex
	chunks []*auditChunkEntries // chunks[0] is chunk number first
	first  int                  // number of chunks[0]
	oldest int                  // number of the oldest entry kept
	next   int                  // number of the next entry
}

// RecordAudit appends e to its tenant's audit log, filling in its id and
// timestamp when they are empty. When the log is full its oldest chunk of
// entries is dropped at once.
func (s *Store) RecordAudit(e AuditEntry) {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = s.now().UTC()
	}
	l := s.audit.log(e.TenantID)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if n%auditChunk == 0 {
		l.chunks = append(l.chunks, new(auditChunkEntries))
	}
	// Numbered under the log's lock, so a log's entries are in sequence.
	l.chunks[n/auditChunk-l.first][n%auditChunk] = auditRecord{seq: s.audit.seq.Add(1), AuditEntry: e}
	l.next++
	for l.next-l.oldest > s.audit.limit() {
		l.chunks[0] = nil // readers copy the chunk list; none sees this slot
		l.chunks = l.chunks[1:]
		l.first++
		l.oldest = l.first * auditChunk
	}
}

// auditView is a consistent copy of one log's bounds and chunk list,
// readable without the lock, with a cursor that walks it newest first.
type auditView struct {
	chunks       []*auditChunkEntries
	first        int
	oldest, next int
	cursor       int // the next entry to read; below oldest when done
}

func (l *auditLog) view() *auditView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &auditView{chunks: append([]*auditChunkEntries(nil), l.chunks...), first: l.first,
		oldest: l.oldest, next: l.next, cursor: l.next - 1}
}

// at returns entry number n, which must lie in [oldest, next).
func (v *auditView) at(n int) *auditRecord {
	return &v.chunks[n/auditChunk-v.first][n%auditChunk]
}

// views returns a view of the log of tenant, or of every log when tenant
// is empty.
func (a *auditLogs) views(tenant string) []*auditView {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if tenant != "" {
		if l := a.byTenant[tenant]; l != nil {
			return []*auditView{l.view()}
		}
		return nil
	}
	out := make([]*auditView, 0, len(a.byTenant))
	for _, l := range a.byTenant {
		out = append(out, l.view())
	}
	return out
}

// AuditFilter selects audit entries; zero fields match everything. From and
// To are inclusive.
type AuditFilter struct {
	From, To                  time.Time
	ActorID, Action, TenantID string
}

func (f AuditFilter) empty() bool { return f == AuditFilter{} }

func (f AuditFilter) match(e *AuditEntry) bool {
	switch {
	case !f.From.IsZero() && e.Timestamp.Before(f.From),
		!f.To.IsZero() && e.Timestamp.After(f.To),
		f.ActorID != "" && e.ActorID != f.ActorID,
		f.Action != "" && e.Action != f.Action,
		f.TenantID != "" && e.TenantID != f.TenantID:
		return false
	}
	return true
}

// AuditPage returns at most count entries matching f, newest first, after
// skipping offset of them, and the number of entries that match. A filter
// on the tenant reads that tenant's log only; without other filters a page
// then costs the page it returns, and across all tenants the entries it
// skips and returns, each at a logarithmic cost in the number of tenants.
// Any other filter costs one pass over the entries of the logs it reads.
// Each log's lock is held only to copy its list of chunks.
func (s *Store) AuditPage(f AuditFilter, offset, count int) ([]AuditEntry, int) {
	views := s.audit.views(f.TenantID)
	rest := f
	rest.TenantID = ""
	if rest.empty() && len(views) <= 1 {
		var out []AuditEntry
		total := 0
		if len(views) == 1 {
			v := views[0]
			total = v.next - v.oldest
			out = make([]AuditEntry, 0, max(0, min(count, total-offset)))
			for n := v.next - 1 - offset; n >= v.oldest && len(out) < count; n-- {
				out = append(out, v.at(n).AuditEntry)
			}
		}
		if out == nil {
			out = []AuditEntry{}
		}
		return out, total
	}
	var (
		out   = []AuditEntry{}
		total int
	)
	if rest.empty() {
		for _, v := range views {
			total += v.next - v.oldest
		}
	}
	h := make(auditHeap, 0, len(views))
	for _, v := range views {
		if v.cursor >= v.oldest {
			h = append(h, v)
		}
	}
	heap.Init(&h)
	// next returns the newest entry not yet read, from whichever log
	// holds it; with one log it reads on without the heap.
	next := func() *auditRecord {
		v := h[0]
		r := v.at(v.cursor)
		switch v.cursor--; {
		case v.cursor < v.oldest:
			heap.Pop(&h)
		case len(h) > 1:
			heap.Fix(&h, 0)
		}
		return r
	}
	for len(h) > 0 {
		if rest.empty() {
			if len(out) == count {
				break // the total is known: no need to read further
			}
			r := next()
			if offset > 0 {
				offset--
				continue
			}
			out = append(out, r.AuditEntry)
			continue
		}
		r := next()
		if !rest.match(&r.AuditEntry) {
			continue
		}
		total++
		if total > offset && len(out) < count {
			out = append(out, r.AuditEntry)
		}
	}
	return out, total
}

// auditHeap orders views by the sequence number of the entry under their
// cursor, newest first. Only views with an entry left are in it.
type auditHeap []*auditView

func (h auditHeap) Len() int { return len(h) }
func (h auditHeap) Less(i, j int) bool {
	return h[i].at(h[i].cursor).seq > h[j].at(h[j].cursor).seq
}
func (h auditHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *auditHeap) Push(x any)   { *h = append(*h, x.(*auditView)) }
func (h *auditHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
