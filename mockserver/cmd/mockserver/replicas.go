package main

import (
	"fmt"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/internal/redisreplay"
)

// This file turns the flags that make replicas act as one (-key-seed,
// -redis, -nonce-secret) into options. The binary talks to Redis with
// redisreplay, a minimal RESP2 client of its own: the root module, which
// holds the binary, must not require a Redis client.

// nonceLifetime is the lifetime of -nonce-secret's nonces: as long as the
// server's own nonces stay valid (one minute current, one more previous).
const nonceLifetime = 2 * time.Minute

// replicaOptions returns the options of the replica flags (none for empty
// values) and a function that releases what they opened.
func replicaOptions(keySeed, redisURL, redisPrefix, nonceSecret string) ([]mockserver.Option, func(), error) {
	var opts []mockserver.Option
	closeAll := func() {}
	if keySeed != "" {
		if len(keySeed) < 16 {
			return nil, nil, fmt.Errorf("-key-seed is %d bytes: use at least 16 (e.g. openssl rand -base64 24)", len(keySeed))
		}
		opts = append(opts, mockserver.WithKeySeed([]byte(keySeed)))
	}
	if nonceSecret != "" {
		n, err := dpop.NewHMACNonces([]byte(nonceSecret), nonceLifetime)
		if err != nil {
			return nil, nil, fmt.Errorf("-nonce-secret: %w", err)
		}
		opts = append(opts, mockserver.WithNonces(n))
	}
	if redisURL != "" {
		st, err := redisreplay.Open(redisURL, redisPrefix)
		if err != nil {
			return nil, nil, fmt.Errorf("-redis: %w", err)
		}
		opts = append(opts, mockserver.WithReplayStore(st))
		closeAll = func() { _ = st.Close() }
	}
	return opts, closeAll, nil
}

// redactedURL returns rawURL without its user information, for the log.
func redactedURL(rawURL string) string { return redisreplay.Redacted(rawURL) }
