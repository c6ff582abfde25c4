package hangguard_test

import (
	"fmt"
	"path/filepath"
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

// TestTestClientsHaveAHangGuard: every pep and authzen client the tests of
// the tree's packages make, nested modules included, comes from
// hangguard.NewPep or NewAuthZEN, or from a helper of the guard (exempt,
// "the helper itself"; adaptertest's Start through CheckSupport), whose
// calls the guard bounds, never the production default of 2 s. A clean
// call beside the rest of the suite on a loaded machine can overrun it and
// fails closed (a DENY whose Cause is ErrUnavailable and a nil error; the
// middleware's 403 or 503, the interceptor's PermissionDenied) in a test
// about something else: a DPoP test of an expired token got a nil error
// where its refused token must be ErrUnauthorized; added client by client,
// the guard missed that test and was lost in a merge. Examples are skipped
// (they show the defaults, or give their own generous timeout in words a
// reader can copy), and so are benchmarks (they measure the defaults).
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	const helper = "the helper itself"
	newValidates := "New's own validation is the subject, with the options as given; its clients send nothing"
	mw := []string{"example_test.go", "example_authzen_test.go", "bench_test.go"}
	for _, c := range []struct {
		dir, pkg string
		exempt   map[string]string
		skip     []string
	}{
		{"pep", "pep", map[string]string{
			"TestNewValidates": newValidates,
			"freezeChild":      "a child process frozen on purpose: its clock and its deadlines are what it measures",
		}, []string{"example_test.go", "bench_test.go"}},
		{"authzen", "authzen", map[string]string{"TestNewValidates": newValidates}, []string{"example_test.go"}},
		{"redisstore", "pep", map[string]string{
			"freezeChild": "the frozen replica runs with the production settings, as pep's freezeChild does",
			"TestCloseDoesNotWaitForAPurgeWithoutDeadline": "it holds that Close waits for a Purge no longer than the client's own timeout, the production one",
		}, nil},
		{"middleware", "pep", nil, mw},
		{"middleware", "authzen", nil, mw},
		{"grpcpep", "pep", nil, []string{"example_test.go"}},
		{"echopep", "pep", nil, nil},
		{"ginpep", "pep", nil, nil},
		{"mockserver", "authzen", map[string]string{"searchClient": helper}, nil},
		{"mockserver", "pep", map[string]string{"pepClient": helper}, nil},
		{"mockserver/mockservertest", "pep", map[string]string{"client": helper}, []string{"example_test.go"}},
		{"integration/telemetry", "pep", nil, []string{"bench_test.go"}},
		{"integration/telemetry", "authzen", nil, []string{"bench_test.go"}},
		{"integration/soak", "pep", map[string]string{"newSoakClient": helper}, nil},
		{"integration/faults", "pep", nil, nil},
		{"examples/middleware", "pep", nil, nil},
		{"examples/replicas", "pep", nil, nil},
		{"examples/quickstart", "pep", nil, nil},
		{"examples/dpop", "pep", nil, nil},
	} {
		t.Run(c.dir+" "+c.pkg, func(t *testing.T) {
			t.Parallel()
			hangguard.Check(t, filepath.Join("..", "..", filepath.FromSlash(c.dir)), c.pkg, c.exempt, c.skip...)
		})
	}
	hangguard.CheckSupport(t, filepath.Join("..", "adaptertest"), "pep", map[string]string{"newClient": helper})
}
