package dpop

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestAProofDatedBeforeTheVerifierNeedsANonceGivenSince: a Verifier's
// in-memory replay cache begins empty, so a restarted process accepted a
// captured request's proof again for the rest of its window (a-dpop11 F1);
// and a client whose clock runs a few seconds slow dates its fresh proofs
// before a Verifier only seconds old, which refusing every such proof
// locked out (a-dpop13 F1). Only something the server gave since its start
// tells the two apart: a proof dated before the Verifier was made is asked
// for a nonce (use_dpop_nonce, ErrIATTooOld and ErrNonceRequired), the
// captured one can never carry it, and the slow client's resend with it
// passes. With WithNonces the server's nonce does the same; with a
// ReplayStore the store's keyspace rule decides, and with a clock of the
// caller's (WithClock) there is no restart to guard.
func TestAProofDatedBeforeTheVerifierNeedsANonceGivenSince(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	request := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "DELETE", URL: url, AccessToken: token, JKT: key.Thumbprint()}
	}
	slow := key.WithClock(func() time.Time { return time.Now().Add(-3 * time.Second) })
	hmacNonces := func(secret []byte) Nonces {
		if secret == nil {
			secret = make([]byte, MinNonceSecretSize)
			_, _ = rand.Read(secret)
		}
		n := testkit.Must(NewHMACNonces(secret, time.Minute))(t)
		return n
	}
	kept := make([]byte, MinNonceSecretSize)
	_, _ = rand.Read(kept)
	nextOf := func(n Nonces) string {
		next := testkit.Must(n.Next(t.Context()))(t)
		return next
	}

	for _, tc := range []struct {
		name string
		opts []Option
		// nonce is the captured proof's: the nonce the process before
		// the restart gave (a client puts its latest in every proof).
		nonce string
		// tooOld: the refusal names the date (the server's nonces, when
		// required of every proof and missing, refuse it first).
		tooOld bool
	}{
		{"the Verifier's own nonce", nil, "", true},
		{"the server's nonces", []Option{WithNonces(hmacNonces(nil))}, "", false},
		// The server's Nonces cannot say when a nonce was given, so one
		// they accept does not vouch alone (a-fix13 F3).
		{"a secret kept across the restart", []Option{WithNonces(hmacNonces(kept))}, nextOf(hmacNonces(kept)), true},
		{"a requirement switched off", []Option{WithNonces(optionalNonces{hmacNonces(nil)})}, nextOf(hmacNonces(nil)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Captured three seconds before the process (re)started.
			captured := proofOf(t, slow, "DELETE", url, token, tc.nonce)
			restarted := mustVerifier(t, tc.opts...)
			_, err := restarted.Verify(t.Context(), request(captured))
			var nerr *NonceError
			require.ErrorAs(t, err, &nerr, "a proof issued before the Verifier was made, without a nonce given since")
			require.Equal(t, tc.tooOld, errors.Is(err, ErrIATTooOld))
			require.ErrorIs(t, err, ErrNonceRequired)
			require.Equal(t, CodeUseNonce, ErrorCode(err))
			require.NotEmpty(t, nerr.Nonce)
			require.NotContains(t, err.Error(), token)
			require.NotContains(t, err.Error(), nerr.Nonce)

			// The slow client's fresh proof, dated before the start too,
			// passes with the nonce it was sent; the captured one is still
			// refused.
			testkit.Must(restarted.Verify(t.Context(), request(proofOf(t, slow, "DELETE", url, token, nerr.Nonce))))(t, "a slow client's proof with the nonce given since the start")
			_, err = restarted.Verify(t.Context(), request(captured))
			require.ErrorIs(t, err, ErrNonceRequired, "the captured proof, sent again")
			testkit.Must(restarted.Verify(t.Context(), request(proofOf(t, key, "DELETE", url, token, nerr.Nonce))))(t, "a proof dated after the start")
		})
	}

	captured := proofOf(t, slow, "DELETE", url, token, "")
	t.Run("another Verifier's nonce", func(t *testing.T) {
		_, err := mustVerifier(t).Verify(t.Context(), request(captured))
		var before *NonceError
		require.ErrorAs(t, err, &before)
		restarted := mustVerifier(t)
		_, err = restarted.Verify(t.Context(), request(proofOf(t, slow, "DELETE", url, token, before.Nonce)))
		require.ErrorIs(t, err, ErrNonceRequired, "a nonce the process before the restart gave")
	})

	withStore := mustVerifier(t, WithReplayStore(newMemStore(time.Now)))
	testkit.Must(withStore.Verify(t.Context(), request(captured)))(t, "a store that vouches for the window decides, not the Verifier's age")

	ownClock := mustVerifier(t, WithClock(time.Now))
	testkit.Must(ownClock.Verify(t.Context(), request(captured)))(t, "on the caller's clock")
}

// optionalNonces is Nonces whose requirement is off: while it is, any
// nonce is acceptable (the contract lets Valid say so; the reference
// server's sharedNonces does).
type optionalNonces struct{ Nonces }

func (optionalNonces) Valid(context.Context, string) bool { return true }

// TestAProofDatedBeforeTheVerifierNeedsANonceAfterAClockStep: a wall clock
// stepped back (65 s, after the proofs' 70 s window had passed since the
// start) brings a request captured before the restart back into the iat
// window; the start read on the wall clock then still dates it before the
// Verifier, so it is asked for a nonce it cannot carry (a-fix13).
func TestAProofDatedBeforeTheVerifierNeedsANonceAfterAClockStep(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	v := mustVerifier(t)
	v.made = time.Now().Add(-2 * time.Minute)                             // started two minutes ago
	v.now = func() time.Time { return time.Now().Add(-65 * time.Second) } // the wall clock since stepped back
	captured := proofOf(t, key.WithClock(func() time.Time { return v.made.Add(-3 * time.Second) }), "DELETE", url, token, "")
	_, err := v.Verify(t.Context(), Request{Proofs: []string{captured}, Method: "DELETE", URL: url, AccessToken: token, JKT: key.Thumbprint()})
	require.ErrorIs(t, err, ErrNonceRequired, "a proof captured before the start, back in the window after the clock stepped back")
}
