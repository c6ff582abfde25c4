package core

import (
	"fmt"
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
			wantErrs: []string{"pep: WithRetry: max must be from 0 (no retries) to 10, got -1"}},
		{name: "most retries", set: func(s *Settings) { s.RetryMax = 10 }},
		{name: "retries that flood the gateway", set: func(s *Settings) { s.RetryMax = 1 << 30 },
			wantErrs: []string{"pep: WithRetry: max must be from 0 (no retries) to 10, got 1073741824"}},
		{name: "shortest minWait", set: func(s *Settings) { s.RetryMinWait, s.RetryMaxWait = time.Millisecond, time.Millisecond }},
		{name: "minWait too short to spread the retries", set: func(s *Settings) { s.RetryMinWait, s.RetryMaxWait = time.Nanosecond, time.Nanosecond },
			wantErrs: []string{"pep: WithRetry: minWait must be at least 1ms when retrying, got 1ns"}},
		{name: "zero minWait", set: func(s *Settings) { s.RetryMinWait = 0 },
			wantErrs: []string{"pep: WithRetry: minWait must be at least 1ms when retrying, got 0s"}},
		{name: "maxWait below minWait", set: func(s *Settings) { s.RetryMinWait, s.RetryMaxWait = time.Second, time.Millisecond },
			wantErrs: []string{"pep: WithRetry: maxWait (1ms) must be at least minWait (1s)"}},
		{name: "zero timeout", set: func(s *Settings) { s.Timeout = 0 },
			wantErrs: []string{"pep: WithTimeout: the timeout must be positive, got 0s"}},
		{name: "negative cache size", set: func(s *Settings) { s.CacheSize = -1 },
			wantErrs: []string{"pep: WithCache: size must be from 0 (no cache) to 2147483648 entries, got -1"}},
		{name: "largest cache size", set: func(s *Settings) { s.CacheSize = 1 << 31 }},
		{name: "cache size past the cache's limit", set: func(s *Settings) { s.CacheSize = 1<<31 + 1 },
			wantErrs: []string{"pep: WithCache: size must be from 0 (no cache) to 2147483648 entries, got 2147483649"}},
		{name: "negative TTL", set: func(s *Settings) { s.AllowTTL = -time.Second },
			wantErrs: []string{"pep: WithCache: TTLs must not be negative"}},
		{name: "zero byte bound", set: func(s *Settings) { s.CacheMaxBytes = 0 },
			wantErrs: []string{fmt.Sprintf("pep: WithCacheMaxBytes: the byte bound must be at least %d (one decision of the longest token and key the cache keeps), got 0", MinCacheMaxBytes)}},
		{name: "byte bound of one longest decision", set: func(s *Settings) { s.CacheMaxBytes = MinCacheMaxBytes }},
		{name: "byte bound no decision fits in", set: func(s *Settings) { s.CacheMaxBytes = 1 },
			wantErrs: []string{fmt.Sprintf("pep: WithCacheMaxBytes: the byte bound must be at least %d (one decision of the longest token and key the cache keeps), got 1", MinCacheMaxBytes)}},
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
