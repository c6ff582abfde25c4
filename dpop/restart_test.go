package dpop

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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

// rotatingNonces accept only the current nonce, "n<cur>"; rotating moves
// to the next, so the nonce a client holds goes stale.
type rotatingNonces struct{ cur atomic.Int64 }

func (r *rotatingNonces) Valid(_ context.Context, n string) bool {
	return n == r.current()
}

func (r *rotatingNonces) Next(context.Context) (string, error) { return r.current(), nil }

func (r *rotatingNonces) current() string { return "n" + strconv.FormatInt(r.cur.Load(), 10) }

// TestANonceAnswerCarriesAllTheResendNeeds: RFC 9449 8 gives a client one
// resend with the nonce it was handed, and pep and authzen resend once. So
// for any proof the Verifier refuses with a *NonceError, the same proof
// signed again with NonceError.Nonce is never refused for a nonce cause:
// whether the answer carries the Verifier's start nonce is decided from
// the proof's iat alone, not from what the refused proof carried.
// a-dpop14 F1: a slow client (dated before a fresh Verifier) holding
// "old~start" whose server part went stale was answered with the bare next
// nonce, and its one resend was refused again.
func TestANonceAnswerCarriesAllTheResendNeeds(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	request := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "GET", URL: url, AccessToken: token, JKT: key.Thumbprint()}
	}
	clocks := []struct {
		name   string
		signer *Signer
	}{
		{"on time", key},
		// Within the iat window, but dated before the Verifier began.
		{"before start", key.WithClock(func() time.Time { return time.Now().Add(-30 * time.Second) })},
	}
	for _, withNonces := range []bool{false, true} {
		for _, clock := range clocks {
			for _, tc := range []struct {
				name string
				// nonce builds the refused proof's nonce from the
				// server's stale and current nonces and the start nonce.
				nonce func(stale, fresh, start string) string
				// refused: whether the first proof is refused, by
				// [WithNonces][dated before the start] (the property is
				// checked on every refusal; the others must pass).
				refused [2][2]bool
			}{
				{"no nonce", func(_, _, _ string) string { return "" },
					[2][2]bool{{false, true}, {true, true}}},
				{"fresh", func(_, fresh, _ string) string { return fresh },
					[2][2]bool{{false, true}, {false, true}}},
				{"stale server part", func(stale, _, _ string) string { return stale },
					[2][2]bool{{false, true}, {true, true}}},
				{"stale with start part", func(stale, _, start string) string { return stale + "~" + start },
					[2][2]bool{{false, false}, {true, true}}},
				{"another Verifier's start", func(_, fresh, _ string) string { return fresh + "~" + rand.Text() },
					[2][2]bool{{false, true}, {true, true}}},
			} {
				name := fmt.Sprintf("nonces=%t/%s/%s", withNonces, clock.name, tc.name)
				t.Run(name, func(t *testing.T) {
					var (
						opts  []Option
						stale = "n0"
						fresh = "n1"
					)
					if withNonces {
						rot := &rotatingNonces{}
						rot.cur.Store(1)
						opts = append(opts, WithNonces(rot))
					} else {
						stale, fresh = rand.Text(), ""
					}
					v := mustVerifier(t, opts...)
					nonce := tc.nonce(stale, fresh, v.startNonce)
					_, err := v.Verify(t.Context(), request(proofOf(t, clock.signer, "GET", url, token, nonce)))
					if !tc.refused[b2i(withNonces)][b2i(clock.signer != key)] {
						require.NoError(t, err)
						return
					}
					var nerr *NonceError
					require.ErrorAs(t, err, &nerr)
					require.NotEmpty(t, nerr.Nonce)
					_, err = v.Verify(t.Context(), request(proofOf(t, clock.signer, "GET", url, token, nerr.Nonce)))
					require.NoError(t, err, "the resend with the nonce just given (%s)", nonceShape(nerr.Nonce, v.startNonce))
				})
			}
		}
	}
}

// nonceShape says whether a nonce carries the start nonce, without
// printing either.
func nonceShape(nonce, start string) string {
	if strings.HasSuffix(nonce, "~"+start) || nonce == start {
		return "with the start nonce"
	}
	return "without the start nonce"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
