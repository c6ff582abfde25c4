package dpop

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rotatingNonces accept only the current nonce; rotate moves to the next.
type rotatingNonces struct{ cur atomic.Int64 }

func (r *rotatingNonces) Valid(_ context.Context, n string) bool {
	return n == "n"+strconv.FormatInt(r.cur.Load(), 10)
}
func (r *rotatingNonces) Next(context.Context) (string, error) {
	return "n" + strconv.FormatInt(r.cur.Load(), 10), nil
}

// TestAttackSlowClientRefusedAfterRotation: a client whose clock runs slow
// (within maxAge) dates its proofs before a fresh Verifier's start, so with
// WithNonces it must send "server~start". When the server's nonce goes
// stale, the Verifier's use_dpop_nonce answer to the proof "old~start"
// carries the server's new nonce WITHOUT the start part (before is false
// since the proof had the start nonce), so the client's one resend with the
// nonce it was given is refused again: a valid client refused even after
// following the nonce it was handed (RFC 9449 8: one resend must pass).
func TestAttackSlowClientRefusedAfterRotation(t *testing.T) {
	key := newKey(t)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	req := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "GET", URL: url, AccessToken: token, JKT: key.Thumbprint()}
	}
	slow := key.WithClock(func() time.Time { return time.Now().Add(-30 * time.Second) })
	rot := &rotatingNonces{}
	v, err := NewVerifier(WithNonces(rot))
	require.NoError(t, err)
	ctx := context.Background()

	// first contact: no nonce, asked for one
	p, err := slow.Proof("GET", url, token, "")
	require.NoError(t, err)
	_, err = v.Verify(ctx, req(p))
	var ne *NonceError
	require.True(t, errors.As(err, &ne), "%v", err)
	nonce := ne.Nonce
	p, err = slow.Proof("GET", url, token, nonce)
	require.NoError(t, err)
	_, err = v.Verify(ctx, req(p))
	require.NoError(t, err, "the slow client's resend with the nonce given passes")

	// the server's nonce rotates: the client's held nonce is stale now
	rot.cur.Add(1)
	p, err = slow.Proof("GET", url, token, nonce)
	require.NoError(t, err)
	_, err = v.Verify(ctx, req(p))
	require.True(t, errors.As(err, &ne), "stale nonce asked again: %v", err)
	nonce = ne.Nonce
	// the client does what it is told, once
	p, err = slow.Proof("GET", url, token, nonce)
	require.NoError(t, err)
	_, err = v.Verify(ctx, req(p))
	require.NoError(t, err, "a valid slow client that resent with the nonce it was just given is refused again (given %q)", nonce)
}

// TestAttackSlowClientRefusedAfterHMACRotation: the same break with the
// package's own NewHMACNonces (lifetime 2 s) on the real clock: once the
// nonce the slow client holds ("hmac~start") has gone stale, the nonce the
// Verifier hands back lacks the start part and the resend with it is
// refused.
func TestAttackSlowClientRefusedAfterHMACRotation(t *testing.T) {
	key := newKey(t)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	req := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "GET", URL: url, AccessToken: token, JKT: key.Thumbprint()}
	}
	slow := key.WithClock(func() time.Time { return time.Now().Add(-30 * time.Second) })
	secret := make([]byte, MinNonceSecretSize)
	hn, err := NewHMACNonces(secret, 2*time.Second)
	require.NoError(t, err)
	v, err := NewVerifier(WithNonces(hn))
	require.NoError(t, err)
	ctx := context.Background()

	p, _ := slow.Proof("GET", url, token, "")
	_, err = v.Verify(ctx, req(p))
	var ne *NonceError
	require.True(t, errors.As(err, &ne), "%v", err)
	nonce := ne.Nonce
	p, _ = slow.Proof("GET", url, token, nonce)
	_, err = v.Verify(ctx, req(p))
	require.NoError(t, err)

	server, _, _ := strings.Cut(nonce, "~")
	deadline := time.Now().Add(5 * time.Second)
	for hn.Valid(ctx, server) { // wait for the real clock to make it stale
		require.True(t, time.Now().Before(deadline))
		time.Sleep(50 * time.Millisecond)
	}
	p, _ = slow.Proof("GET", url, token, nonce)
	_, err = v.Verify(ctx, req(p))
	require.True(t, errors.As(err, &ne), "%v", err)
	p, _ = slow.Proof("GET", url, token, ne.Nonce)
	_, err = v.Verify(ctx, req(p))
	require.NoError(t, err, "the resend with the nonce just given is refused again")
}
