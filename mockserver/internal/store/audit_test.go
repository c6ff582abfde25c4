package store

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func auditStore() *Store { return New(func() time.Time { return time.Unix(0, 0) }) }

// testAudit is the bound of the logs of smallAuditStore: a few chunks and
// a part, as maxAudit (97 chunks and 672 entries) is whole chunks and a
// part, so that the tests that fill a log past its bound record thousands
// of entries, not 100,000, through the same code.
const testAudit = 5*auditChunk + 7

// smallAuditStore is auditStore with logs that keep testAudit entries.
func smallAuditStore() *Store {
	s := auditStore()
	s.LimitAudit(testAudit)
	return s
}

func resourceIDs(entries []AuditEntry) []int {
	out := make([]int, len(entries))
	for i, e := range entries {
		out[i], _ = strconv.Atoi(e.ResourceID)
	}
	return out
}

// TestRecordAuditIsBounded: a full log drops its oldest chunk in one step,
// keeps the newest entries contiguous and in order, and never holds more
// than its bound.
func TestRecordAuditIsBounded(t *testing.T) {
	t.Parallel()
	s := smallAuditStore()
	total := testAudit + 3*auditChunk + 5
	for i := range total {
		s.RecordAudit("", AuditEntry{ResourceID: strconv.Itoa(i)})
		_, n := s.AuditPage(AuditFilter{}, 0, 1)
		require.LessOrEqual(t, n, testAudit)
	}
	all, n := s.AuditPage(AuditFilter{}, 0, testAudit)
	require.Len(t, all, n)
	require.Greater(t, n, testAudit-auditChunk, "at most a chunk is dropped at once")
	ids := resourceIDs(all)
	require.Equal(t, total-1, ids[0], "the newest entry comes first")
	for i := 1; i < len(ids); i++ {
		require.Equal(t, ids[i-1]-1, ids[i], "entries stay contiguous and newest first")
	}
	require.NotEmpty(t, all[0].ID)
}

// TestAuditPage: pages without a filter are windows of the newest-first log;
// with a filter, totalRows counts the matches and the page skips offset of
// them.
func TestAuditPage(t *testing.T) {
	t.Parallel()
	s := auditStore()
	for i := range 2*auditChunk + 10 {
		action := "even"
		if i%2 == 1 {
			action = "odd"
		}
		s.RecordAudit("", AuditEntry{ResourceID: strconv.Itoa(i), Action: action})
	}
	last := 2*auditChunk + 9
	tests := []struct {
		name          string
		f             AuditFilter
		offset, count int
		want          []int
		total         int
	}{
		{"first page", AuditFilter{}, 0, 3, []int{last, last - 1, last - 2}, last + 1},
		{"across a chunk boundary", AuditFilter{}, last - auditChunk - 1, 3, []int{auditChunk + 1, auditChunk, auditChunk - 1}, last + 1},
		{"last entries", AuditFilter{}, last - 1, 5, []int{1, 0}, last + 1},
		{"past the end", AuditFilter{}, last + 5, 5, []int{}, last + 1},
		{"filtered", AuditFilter{Action: "odd"}, 1, 2, []int{last - 2, last - 4}, (last + 1) / 2},
		{"filtered past the end", AuditFilter{Action: "odd"}, last, 2, []int{}, (last + 1) / 2},
		{"no match", AuditFilter{ActorID: "nobody"}, 0, 2, []int{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, total := s.AuditPage(tt.f, tt.offset, tt.count)
			require.Equal(t, tt.want, resourceIDs(got))
			require.Equal(t, tt.total, total)
		})
	}
}

// TestAuditConcurrentAppendAndPage: readers page while writers append and
// the log drops chunks; the race detector checks that readers never read a
// slot being written.
func TestAuditConcurrentAppendAndPage(t *testing.T) {
	t.Parallel()
	s := smallAuditStore()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range testAudit/2 + auditChunk {
				s.RecordAudit("", AuditEntry{ResourceID: strconv.Itoa(w*testAudit + i), Action: "x"})
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			page, total := s.AuditPage(AuditFilter{}, 0, 20)
			require.LessOrEqual(t, len(page), 20)
			require.LessOrEqual(t, total, testAudit)
			_, _ = s.AuditPage(AuditFilter{Action: "x"}, 50, 20)
		}
	})
	wg.Wait()
}

// TestAuditLogsAreTenantsOwn: a tenant whose callers record more entries
// than a log keeps (an attack sent 100,001 refused calls) pushes out only
// its own history: the platform's record of another tenant's creation stays.
func TestAuditLogsAreTenantsOwn(t *testing.T) {
	t.Parallel()
	s := smallAuditStore()
	s.RecordAudit("master", AuditEntry{TenantID: "victim", Action: "tenant.create", Outcome: OutcomeSuccess})
	for i := range testAudit + auditChunk {
		s.RecordAudit("acme", AuditEntry{TenantID: "acme", Action: "organization.delete", ResourceID: strconv.Itoa(i), Outcome: OutcomeSuccess})
	}
	got, n := s.AuditPage(AuditFilter{Action: "tenant.create"}, 0, 10)
	require.Equal(t, 1, n, "the other tenant's entry is kept")
	require.Equal(t, "victim", got[0].TenantID)
	_, acme := s.AuditPage(AuditFilter{TenantID: "acme"}, 0, 1)
	require.LessOrEqual(t, acme, testAudit, "acme's own log is bounded")
	_, all := s.AuditPage(AuditFilter{}, 0, 1)
	require.Equal(t, acme+1, all, "an unfiltered total counts every tenant's log")
}

// TestAuditRefusalsNeverPushOutAcceptedActions: refused calls, which any
// authenticated caller of a tenant can make without limit, push out only
// older refusals: the tenant's accepted actions stay, however many
// refusals follow them, and the refusals kept are bounded.
func TestAuditRefusalsNeverPushOutAcceptedActions(t *testing.T) {
	t.Parallel()
	s := smallAuditStore()
	s.RecordAudit("acme", AuditEntry{TenantID: "acme", ActorID: "alice", Action: "organization.create", Outcome: OutcomeSuccess})
	for i := range testAudit + auditChunk {
		s.RecordAudit("acme", AuditEntry{TenantID: "acme", ActorID: "bob", Action: "organization.create",
			ResourceID: strconv.Itoa(i), Outcome: OutcomeFailure})
	}
	got, n := s.AuditPage(AuditFilter{ActorID: "alice"}, 0, 10)
	require.Equal(t, 1, n, "alice's accepted action is kept")
	require.Equal(t, OutcomeSuccess, got[0].Outcome)
	_, refused := s.AuditPage(AuditFilter{ActorID: "bob"}, 0, 1)
	require.LessOrEqual(t, refused, testAudit, "the refusals kept are bounded")
	page, _ := s.AuditPage(AuditFilter{TenantID: "acme"}, 0, 1)
	require.Equal(t, strconv.Itoa(testAudit+auditChunk-1), page[0].ResourceID, "the newest refusal is kept")
}

// TestAuditTenantCannotPushOutThePlatformsRecord: the platform's record of
// what it did to a tenant (its provisioning) is in the tenant's log, where
// the tenant's admin finds it, but no number of the tenant's own calls,
// accepted or refused, pushes it out.
func TestAuditTenantCannotPushOutThePlatformsRecord(t *testing.T) {
	t.Parallel()
	s := smallAuditStore()
	s.RecordAudit("master", AuditEntry{TenantID: "globex", ActorID: "platform-admin", Action: "tenant.create", Outcome: OutcomeSuccess})
	for i := range testAudit + auditChunk {
		for _, outcome := range []string{OutcomeSuccess, OutcomeFailure} {
			s.RecordAudit("globex", AuditEntry{TenantID: "globex", ActorID: "root", Action: "organization.create",
				ResourceID: strconv.Itoa(i), Outcome: outcome})
		}
	}
	got, n := s.AuditPage(AuditFilter{Action: "tenant.create"}, 0, 10)
	require.Equal(t, 1, n, "the platform's record of the provisioning is kept")
	require.Equal(t, "platform-admin", got[0].ActorID)
	_, n = s.AuditPage(AuditFilter{TenantID: "globex", Action: "tenant.create"}, 0, 10)
	require.Equal(t, 1, n, "it is in the tenant's log")
}

// TestAuditPagesAcrossTenants compares pages of logs written by several
// tenants at once with a model: every entry recorded, in the order the
// store numbered them. Unfiltered and filtered pages, at every offset, must
// be the model's newest-first windows.
func TestAuditPagesAcrossTenants(t *testing.T) {
	t.Parallel()
	s := auditStore()
	tenants := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for w, tenant := range tenants {
		wg.Go(func() {
			for i := range 700 + 300*w {
				action := "even"
				if i%2 == 1 {
					action = "odd"
				}
				// Every part of a tenant's log: its own callers' and the
				// platform's, accepted and refused.
				by, outcome := tenant, OutcomeFailure
				if i%5 == 0 {
					by = "master"
				}
				if i%3 == 0 {
					outcome = OutcomeSuccess
				}
				s.RecordAudit(by, AuditEntry{TenantID: tenant, Action: action, ResourceID: strconv.Itoa(i), Outcome: outcome})
			}
		})
	}
	wg.Wait()

	// The model: every record, newest first by the store's own numbering.
	var model []auditRecord
	for _, v := range s.audit.views("") {
		for n := v.next - 1; n >= v.oldest; n-- {
			model = append(model, *v.at(n))
		}
	}
	slices.SortFunc(model, func(x, y auditRecord) int { return cmp.Compare(y.seq, x.seq) })
	window := func(f AuditFilter, offset, count int) ([]AuditEntry, int) {
		var match []AuditEntry
		for _, r := range model {
			if f.match(&r.AuditEntry) {
				match = append(match, r.AuditEntry)
			}
		}
		lo, hi := min(offset, len(match)), min(offset+count, len(match))
		return append([]AuditEntry{}, match[lo:hi]...), len(match)
	}
	for _, f := range []AuditFilter{{}, {Action: "odd"}, {TenantID: "c"}, {TenantID: "b", Action: "even"}, {TenantID: "nobody"}} {
		for _, offset := range []int{0, 1, 19, 700, 2599, 3999, 4000, 5000} {
			want, wantTotal := window(f, offset, 20)
			got, total := s.AuditPage(f, offset, 20)
			require.Equal(t, wantTotal, total, "total of %+v", f)
			require.Equal(t, want, got, "page of %+v at offset %d", f, offset)
		}
	}
}
