package store

import (
	"sync"
	"time"
)

// Audit outcomes.
const (
	OutcomeSuccess = "SUCCESS"
	OutcomeFailure = "FAILURE"
)

// The audit log keeps the newest maxAudit entries in chunks of auditChunk.
// Entries are numbered in the order they were recorded; entry n lives at
// n%auditChunk in chunk n/auditChunk. A chunk is written once, slot by slot,
// and never reused, so a reader that copied the list of chunks under the
// lock can read the entries recorded before that moment without it.
const (
	maxAudit   = 100_000
	auditChunk = 1024
)

type auditChunkEntries [auditChunk]AuditEntry

// auditLog is the platform's audit log. Recording an entry costs the same
// whatever the log holds; a page without filters costs its page.
type auditLog struct {
	mu     sync.Mutex
	chunks []*auditChunkEntries // chunks[0] is chunk number first
	first  int                  // number of chunks[0]
	oldest int                  // number of the oldest entry kept
	next   int                  // number of the next entry
}

// RecordAudit appends e to the audit log, filling in its id and timestamp
// when they are empty. When the log is full the oldest chunk of entries is
// dropped at once.
func (s *Store) RecordAudit(e AuditEntry) {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = s.now().UTC()
	}
	l := &s.audit
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if n%auditChunk == 0 {
		l.chunks = append(l.chunks, new(auditChunkEntries))
	}
	l.chunks[n/auditChunk-l.first][n%auditChunk] = e
	l.next++
	for l.next-l.oldest > maxAudit {
		l.chunks[0] = nil // readers copy the chunk list; none sees this slot
		l.chunks = l.chunks[1:]
		l.first++
		l.oldest = l.first * auditChunk
	}
}

// auditView is a consistent copy of the log's bounds and chunk list,
// readable without the lock.
type auditView struct {
	chunks       []*auditChunkEntries
	first        int
	oldest, next int
}

func (s *Store) auditView() auditView {
	l := &s.audit
	l.mu.Lock()
	defer l.mu.Unlock()
	return auditView{chunks: append([]*auditChunkEntries(nil), l.chunks...), first: l.first, oldest: l.oldest, next: l.next}
}

// at returns entry number n, which must lie in [oldest, next).
func (v *auditView) at(n int) *AuditEntry {
	return &v.chunks[n/auditChunk-v.first][n%auditChunk]
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
// skipping offset of them, and the number of entries that match. Without a
// filter it costs the page it returns; a filter costs one pass over the
// entries it scans. The log's lock is held only to copy the list of chunks.
func (s *Store) AuditPage(f AuditFilter, offset, count int) ([]AuditEntry, int) {
	v := s.auditView()
	if f.empty() {
		total := v.next - v.oldest
		start := v.next - 1 - offset
		out := make([]AuditEntry, 0, max(0, min(count, total-offset)))
		for n := start; n >= v.oldest && len(out) < count; n-- {
			out = append(out, *v.at(n))
		}
		return out, total
	}
	var (
		out   []AuditEntry
		total int
	)
	for n := v.next - 1; n >= v.oldest; n-- {
		e := v.at(n)
		if !f.match(e) {
			continue
		}
		if total >= offset && len(out) < count {
			out = append(out, *e)
		}
		total++
	}
	if out == nil {
		out = []AuditEntry{}
	}
	return out, total
}
