package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecordAuditIsBounded: a full log drops its oldest entries in one step,
// keeps the newest in order, and never holds more than maxAudit.
func TestRecordAuditIsBounded(t *testing.T) {
	t.Parallel()
	st := &State{Now: func() time.Time { return time.Unix(0, 0) }}
	total := maxAudit + maxAudit/10 + 5
	for i := range total {
		st.RecordAudit(AuditEntry{ResourceID: strconv.Itoa(i)})
		require.LessOrEqual(t, len(st.Audit), maxAudit)
	}
	last := st.Audit[len(st.Audit)-1]
	require.Equal(t, strconv.Itoa(total-1), last.ResourceID, "the newest entry is kept")
	for i := 1; i < len(st.Audit); i++ {
		prev, _ := strconv.Atoi(st.Audit[i-1].ResourceID)
		cur, _ := strconv.Atoi(st.Audit[i].ResourceID)
		require.Equal(t, prev+1, cur, "entries stay contiguous and in order")
	}
	require.Greater(t, len(st.Audit), maxAudit-maxAudit/10, "at most a tenth is dropped at once")
	require.NotEmpty(t, last.ID)
}
