package store

import "time"

// Audit outcomes.
const (
	OutcomeSuccess = "SUCCESS"
	OutcomeFailure = "FAILURE"
)

// maxAudit bounds the audit log; the oldest entries go first.
const maxAudit = 100_000

// RecordAudit appends e to the audit log, filling in its id and timestamp
// when they are empty.
func (st *State) RecordAudit(e AuditEntry) {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = st.Now().UTC()
	}
	if len(st.Audit) >= maxAudit {
		// Drop the oldest tenth at once: trimming one entry per write
		// would move the whole log on every write once it is full.
		n := copy(st.Audit, st.Audit[len(st.Audit)-maxAudit+maxAudit/10:])
		clear(st.Audit[n:])
		st.Audit = st.Audit[:n]
	}
	st.Audit = append(st.Audit, e)
}

// AuditFilter selects audit entries; zero fields match everything. From and
// To are inclusive.
type AuditFilter struct {
	From, To                  time.Time
	ActorID, Action, TenantID string
}

// AuditEntries returns the entries matching f, newest first.
func (st *State) AuditEntries(f AuditFilter) []AuditEntry {
	var out []AuditEntry
	for i := len(st.Audit) - 1; i >= 0; i-- {
		e := st.Audit[i]
		switch {
		case !f.From.IsZero() && e.Timestamp.Before(f.From),
			!f.To.IsZero() && e.Timestamp.After(f.To),
			f.ActorID != "" && e.ActorID != f.ActorID,
			f.Action != "" && e.Action != f.Action,
			f.TenantID != "" && e.TenantID != f.TenantID:
			continue
		}
		out = append(out, e)
	}
	return out
}
