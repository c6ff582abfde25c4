package store

import (
	"container/heap"
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Audit outcomes.
const (
	OutcomeSuccess = "SUCCESS"
	OutcomeFailure = "FAILURE"
)

// Every tenant has an audit log of its own, in parts, and each part keeps
// its newest maxAudit entries in chunks of auditChunk. An entry goes to the
// part of its tenant, of who recorded it (the tenant's own callers, or the
// platform's administrators acting on the tenant from the master realm),
// and of its outcome (accepted, or refused: anything but SUCCESS). A part
// is pushed out only by entries of its own kind, so what a caller can push
// out is bounded by its own share: a tenant's callers, however many calls
// they make, never push out another tenant's history nor the platform's
// record of what it did to their tenant (its provisioning); and refused
// calls, which any authenticated caller can make without limit, push out
// only older refusals, never an accepted action. Only an accepted action,
// which takes the tenant's realm management, pushes out accepted actions.
//
// Entries are numbered in the order their part recorded them; entry n lives
// at n%auditChunk in chunk n/auditChunk. A chunk is written once, slot by
// slot, and never reused, so a reader that copied the list of chunks under
// the lock can read the entries recorded before that moment without it.
// Each entry also carries a sequence number from one counter for all parts,
// which orders a page that spans parts and tenants.
const (
	maxAudit   = 100_000
	auditChunk = 1024
)

// auditPart names one bounded part of a tenant's log.
type auditPart struct {
	tenant string
	// platform: recorded by a caller of another tenant, which can only be
	// the platform's administrators (the master realm's).
	platform bool
	refused  bool // the call was refused: its outcome is not SUCCESS
}

// auditRecord is an entry and its place in the platform's order.
type auditRecord struct {
	seq uint64
	AuditEntry
}

type auditChunkEntries [auditChunk]auditRecord

// auditLogs is the platform's audit: one log per part of each tenant's.
type auditLogs struct {
	seq atomic.Uint64
	// max is the most entries a part keeps: maxAudit when zero. Tests
	// lower it (LimitAudit), to fill a part with thousands of entries
	// rather than 100,000.
	max atomic.Int64

	mu     sync.RWMutex
	byPart map[auditPart]*auditLog
}

// limit returns the most entries a part keeps.
func (a *auditLogs) limit() int {
	if n := a.max.Load(); n != 0 {
		return int(n)
	}
	return maxAudit
}

// LimitAudit sets the most entries each part of a tenant's audit log keeps
// (100,000 by default) to n, which must be more than 1,024 (a part drops
// its oldest 1,024 entries at once; LimitAudit panics otherwise). Tests
// lower it, to fill a part quickly. It is safe to call at any time; a part
// fuller than n is cut down to n by its next entry.
func (s *Store) LimitAudit(n int) {
	if n <= auditChunk {
		panic("store: LimitAudit needs more than 1,024 entries")
	}
	s.audit.max.Store(int64(n))
}

// log returns the log of part, making it on first use.
func (a *auditLogs) log(part auditPart) *auditLog {
	a.mu.RLock()
	l := a.byPart[part]
	a.mu.RUnlock()
	if l != nil {
		return l
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if l = a.byPart[part]; l == nil {
		if a.byPart == nil {
			a.byPart = map[auditPart]*auditLog{}
		}
		l = &auditLog{}
		a.byPart[part] = l
	}
	return l
}

// auditLog is one part of a tenant's log. Recording an entry costs the
// same whatever the part holds.
type auditLog struct {
	mu     sync.Mutex
	chunks []*auditChunkEntries // chunks[0] is chunk number first
	first  int                  // number of chunks[0]
	oldest int                  // number of the oldest entry kept
	next   int                  // number of the next entry
}

// maxAuditField bounds, in bytes, each string an audit entry keeps whole:
// the ids the server assigns (36 bytes), realm names and aliases (at most
// 63), "config" and the actions fit. auditKeep records a longer one cut.
const maxAuditField = 64

// auditCut marks a value auditKeep cut.
const auditCut = "…sha256:"

// auditKeep returns v as an audit entry keeps it: whole when it is at most
// maxAuditField bytes and holds no auditCut; otherwise its first 32 bytes
// (cut at a character boundary), "…" and "sha256:" with the base64url
// SHA-256 of the whole. A caller's made-up id (a path's {id}, a body's
// userId) is thus at most 85 bytes however long it was sent, and still told
// apart from every other (the digest; an auditor matches a suspected id by
// its digest) and from any kept whole, by the mark (a cut of a value that is
// not UTF-8 can be shorter than maxAuditField, a-last10b): cut, so the
// reader sees what it began with, rather than a bare digest. It is the
// store's bound, not the rule of what a caller's value may be kept as:
// mockserver's recordAudit already describes, by its length, a resource id
// that is not an id or a public name (a-server14 F2), so a credential sent
// where an id goes reaches no entry.
func auditKeep(v string) string {
	if len(v) <= maxAuditField && !strings.Contains(v, auditCut) {
		return v // a value kept whole never holds the mark of a cut one
	}
	sum := sha256.Sum256([]byte(v))
	n := 32
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n] + auditCut + base64.RawURLEncoding.EncodeToString(sum[:])
}

// RecordAudit appends e to the part of its tenant's audit log that by (the
// tenant id of the caller's realm) and e's outcome choose, filling in its
// id and timestamp when they are empty: by is the platform when it is not
// e's tenant, and an outcome other than OutcomeSuccess is a refusal. When
// the part is full its oldest chunk of entries is dropped at once. Every
// string the entry keeps is bounded in bytes first (auditKeep).
func (s *Store) RecordAudit(by string, e AuditEntry) {
	by = auditKeep(by)
	e.ID, e.ActorID, e.Action = auditKeep(e.ID), auditKeep(e.ActorID), auditKeep(e.Action)
	e.TenantID, e.ResourceType, e.ResourceID = auditKeep(e.TenantID), auditKeep(e.ResourceType), auditKeep(e.ResourceID)
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = s.now().UTC()
	}
	l := s.audit.log(auditPart{tenant: e.TenantID, platform: by != e.TenantID, refused: e.Outcome != OutcomeSuccess})
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if n%auditChunk == 0 {
		l.chunks = append(l.chunks, new(auditChunkEntries))
	}
	// Numbered under the part's lock, so a part's entries are in sequence.
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

// views returns a view of each part of the log of tenant, or of every
// tenant's when tenant is empty.
func (a *auditLogs) views(tenant string) []*auditView {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if tenant != "" {
		var out []*auditView
		for _, platform := range []bool{false, true} {
			for _, refused := range []bool{false, true} {
				if l := a.byPart[auditPart{tenant: tenant, platform: platform, refused: refused}]; l != nil {
					out = append(out, l.view())
				}
			}
		}
		return out
	}
	out := make([]*auditView, 0, len(a.byPart))
	for _, l := range a.byPart {
		out = append(out, l.view())
	}
	return out
}

// skip moves the cursors of views past the n newest of their entries (in
// the platform's order, across views) and returns how many it skipped:
// fewer than n only when they hold fewer. It reads only the entries its
// binary searches compare: a search over sequence numbers for the one with
// n entries newer, each step counting each view's newer entries by a
// search of its own.
func skip(views []*auditView, n int) int {
	if n <= 0 {
		return 0
	}
	var hi uint64
	for _, v := range views {
		if v.cursor >= v.oldest {
			hi = max(hi, v.at(v.cursor).seq)
		}
	}
	newer := func(seq uint64) int {
		c := 0
		for _, v := range views {
			c += v.newer(seq)
		}
		return c
	}
	// The smallest seq with at most n entries newer: sequence numbers are
	// distinct, so exactly min(n, all) are newer than it.
	lo := uint64(0)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if newer(mid) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	skipped := 0
	for _, v := range views {
		k := v.newer(lo)
		v.cursor -= k
		skipped += k
	}
	return skipped
}

// newer counts the entries of v, from its cursor down, numbered after seq:
// the newest of them, as a part numbers its entries in sequence.
func (v *auditView) newer(seq uint64) int {
	held := v.cursor + 1 - v.oldest
	if held <= 0 {
		return 0
	}
	return held - sort.Search(held, func(i int) bool { return v.at(v.oldest+i).seq > seq })
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
// on the tenant reads that tenant's parts only; without other filters a
// page then costs the page it returns (the entries it skips are found by
// binary search), and across all tenants the entries it skips and returns,
// each at a logarithmic cost in the number of parts. Any other filter costs
// one pass over the entries of the parts it reads. Each part's lock is held
// only to copy its list of chunks.
func (s *Store) AuditPage(f AuditFilter, offset, count int) ([]AuditEntry, int) {
	views := s.audit.views(f.TenantID)
	rest := f
	rest.TenantID = ""
	var (
		out   = []AuditEntry{}
		total int
	)
	if rest.empty() {
		for _, v := range views {
			total += v.next - v.oldest
		}
		if f.TenantID != "" {
			offset -= skip(views, offset)
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
