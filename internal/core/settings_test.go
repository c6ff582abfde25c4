package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
)

// TestValidate: every invalid setting is reported at once, each error
// naming the client and the option to fix; the defaults and everything
// disabled are valid.
func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		set      func(*Settings)
		wantErrs []string // substrings, each must appear; none for valid settings
	}{
		{name: "defaults", set: func(*Settings) {}},
		{name: "everything disabled", set: func(s *Settings) {
			s.CacheSize, s.AllowTTL, s.DenyTTL, s.RetryMax, s.RetryMinWait, s.RetryMaxWait, s.BreakerFailures, s.BreakerCoolDown = 0, 0, 0, 0, 0, 0, 0, 0
		}},
		{name: "zero TTLs keep nothing of their kind", set: func(s *Settings) { s.AllowTTL, s.DenyTTL = 0, 0 }},
		{name: "nil http client", set: func(s *Settings) { s.HTTPClient = nil },
			wantErrs: []string{"pep: WithHTTPClient: the *http.Client is nil"}},
		{name: "negative retries", set: func(s *Settings) { s.RetryMax = -1 },
			wantErrs: []string{"pep: WithRetry: max must be 0 (no retries) or more, got -1"}},
		{name: "zero minWait", set: func(s *Settings) { s.RetryMinWait = 0 },
			wantErrs: []string{"pep: WithRetry: minWait must be positive"}},
		{name: "maxWait below minWait", set: func(s *Settings) { s.RetryMinWait, s.RetryMaxWait = time.Second, time.Millisecond },
			wantErrs: []string{"pep: WithRetry: maxWait (1ms) must be at least minWait (1s)"}},
		{name: "zero timeout", set: func(s *Settings) { s.Timeout = 0 },
			wantErrs: []string{"pep: WithTimeout: the timeout must be positive, got 0s"}},
		{name: "negative cache size", set: func(s *Settings) { s.CacheSize = -1 },
			wantErrs: []string{"pep: WithCache: size must be 0 (no cache) or more, got -1"}},
		{name: "negative TTL", set: func(s *Settings) { s.AllowTTL = -time.Second },
			wantErrs: []string{"pep: WithCache: TTLs must not be negative"}},
		{name: "zero byte bound", set: func(s *Settings) { s.CacheMaxBytes = 0 },
			wantErrs: []string{"pep: WithCacheMaxBytes: the byte bound must be positive, got 0"}},
		{name: "zero batch", set: func(s *Settings) { s.BatchSize = 0 },
			wantErrs: []string{"pep: WithBatchSize: the batch size must be positive, got 0"}},
		{name: "zero token bound", set: func(s *Settings) { s.MaxTokenBytes = 0 },
			wantErrs: []string{"pep: WithMaxTokenBytes: the bound must be positive, got 0"}},
		{name: "negative breaker", set: func(s *Settings) { s.BreakerFailures = -1 },
			wantErrs: []string{"pep: WithBreaker: failures must be 0 (no breaker) or more, got -1"}},
		{name: "breaker without cool-down", set: func(s *Settings) { s.BreakerCoolDown = 0 },
			wantErrs: []string{"pep: WithBreaker: coolDown must be positive, got 0s"}},
		{name: "nil event handler", set: func(s *Settings) { s.Handlers = []events.Handler{func(events.Event) {}, nil} },
			wantErrs: []string{"pep: WithEventHandler: the handler is nil"}},
		{name: "all at once", set: func(s *Settings) { s.Timeout, s.BatchSize, s.CacheSize = 0, 0, -1 },
			wantErrs: []string{"WithTimeout", "WithBatchSize", "WithCache"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Defaults(100)
			tt.set(&s)
			err := s.Validate("pep")
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErrs {
				assert.Contains(t, err.Error(), want)
			}
			assert.Len(t, strings.Split(err.Error(), "\n"), len(tt.wantErrs), "one line per setting")
		})
	}
}
