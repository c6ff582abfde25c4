package hangguard_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheck: every use of pep.New outside the exempt functions and the
// skipped files is reported at its line with its function, called or not;
// other packages' New are not pep's; an exempt name no file defines is
// reported.
func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		exempt map[string]string
		skip   []string
		want   []string
	}{
		{
			name:   "helper exempt, examples skipped",
			exempt: map[string]string{"newTestClient": "the helper"},
			skip:   []string{"example_test.go"},
			want:   []string{"clients_test.go:10:10: TestDirect", "clients_test.go:13:48: TestAsAValue"},
		},
		{
			name:   "examples read too",
			exempt: map[string]string{"newTestClient": "the helper"},
			want:   []string{"clients_test.go:10:10: TestDirect", "clients_test.go:13:48: TestAsAValue", "example_test.go:3:26: Example"},
		},
		{
			name: "nothing exempt",
			skip: []string{"example_test.go"},
			want: []string{"clients_test.go:4:9: newTestClient", "clients_test.go:10:10: TestDirect", "clients_test.go:13:48: TestAsAValue"},
		},
		{
			name:   "an exempt name nobody defines",
			exempt: map[string]string{"newTestClient": "the helper", "TestGone": "was deleted"},
			skip:   []string{"example_test.go"},
			want:   []string{"clients_test.go:10:10: TestDirect", "clients_test.go:13:48: TestAsAValue", "hangguard: TestGone is exempt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			hangguard.Check(r, "testdata", "pep", tt.exempt, tt.skip...)
			if assert.Len(t, r.errs, len(tt.want), "%q", r.errs) {
				for i, want := range tt.want {
					assert.Contains(t, r.errs[i], want)
				}
			}
		})
	}
}

// TestCheckSupport: in a test-support package the files that are not tests
// are read, with the same rules, and its test files are not.
func TestCheckSupport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		exempt map[string]string
		want   []string
	}{
		{
			name:   "helper exempt",
			exempt: map[string]string{"newClient": "the helper"},
			want:   []string{"support.go:7:24: Start"},
		},
		{
			name: "nothing exempt",
			want: []string{"support.go:4:9: newClient", "support.go:7:24: Start"},
		},
		{
			name:   "an exempt name only a test file defines",
			exempt: map[string]string{"newClient": "the helper", "newTestClient": "a test's helper"},
			want:   []string{"support.go:7:24: Start", "hangguard: newTestClient is exempt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			hangguard.CheckSupport(r, "testdata", "pep", tt.exempt)
			if assert.Len(t, r.errs, len(tt.want), "%q", r.errs) {
				for i, want := range tt.want {
					assert.Contains(t, r.errs[i], want)
				}
			}
		})
	}
}
