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
				// Another Verifier's start (a replica's, a-dpop15 F4) is
				// taken off: the server's nonce passes as itself, and
				// vouches for no proof dated before this Verifier.
				{"another Verifier's start", func(_, fresh, _ string) string { return fresh + "~" + rand.Text() },
					[2][2]bool{{false, true}, {false, true}}},
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

// TestReplicasTakeEachOthersStartNonceOff (a-dpop15 F4): replicas each
// with a Verifier of their own, sharing an HMAC nonce secret. A start
// nonce not the Verifier's own is taken off before the server's nonce is
// judged (a replica's answer is not refused whole by the next replica),
// vouches for nothing (a proof dated before this Verifier still needs its
// own: a proof captured before a restart, carrying the start nonce of the
// process before, is asked again, and its resend needs the new one), and
// is handed on with the Verifier's answer, so that a client's next proof
// passes both replicas. Only start-shaped parts are handed on, at most
// maxStartParts.
func TestReplicasTakeEachOthersStartNonceOff(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	slow := key.WithClock(func() time.Time { return time.Now().Add(-5 * time.Second) })
	const url, token = "https://api.example/orders/42", "bound-access-token"
	secret := make([]byte, MinNonceSecretSize)
	_, _ = rand.Read(secret)
	replica := func(opts ...Option) *Verifier {
		return mustVerifier(t, append(opts, WithNonces(testkit.Must(NewHMACNonces(secret, time.Minute))(t)))...)
	}
	verify := func(v *Verifier, s *Signer, nonce string) (*NonceError, error) {
		_, err := v.Verify(t.Context(), Request{Proofs: []string{proofOf(t, s, "GET", url, token, nonce)},
			Method: "GET", URL: url, AccessToken: token, JKT: key.Thumbprint()})
		var nerr *NonceError
		errors.As(err, &nerr)
		return nerr, err
	}
	asked := func(v *Verifier, s *Signer, nonce string) string {
		t.Helper()
		nerr, err := verify(v, s, nonce)
		require.Error(t, err)
		require.NotNil(t, nerr, "refused for its nonce: %v", err)
		require.NotEmpty(t, nerr.Nonce)
		return nerr.Nonce
	}

	t.Run("the other replica started long before", func(t *testing.T) {
		t.Parallel()
		a, old := replica(), replica(WithClock(time.Now))
		fromA := asked(a, slow, "")
		_, err := verify(old, slow, fromA)
		require.NoError(t, err, "A's answer is refused whole by the other replica")
	})
	t.Run("both started within the client's lag", func(t *testing.T) {
		t.Parallel()
		a, b := replica(), replica()
		fromA := asked(a, slow, "")
		fromB := asked(b, slow, fromA) // B's own start is missing
		require.True(t, strings.HasSuffix(fromB, "~"+a.startNonce+"~"+b.startNonce), "B's answer hands A's start nonce on")
		for _, v := range []*Verifier{a, b, a} {
			_, err := verify(v, slow, fromB)
			require.NoError(t, err)
		}
	})
	t.Run("a captured proof with the start nonce of the process before", func(t *testing.T) {
		t.Parallel()
		before := replica()
		fromBefore := asked(before, slow, "")
		_, err := verify(before, slow, fromBefore)
		require.NoError(t, err)
		restarted := replica()
		nerr, err := verify(restarted, slow, fromBefore)
		require.Error(t, err, "the captured proof passes the restarted Verifier")
		require.NotNil(t, nerr, "refused for its nonce: %v", err)
		require.True(t, strings.HasSuffix(nerr.Nonce, "~"+restarted.startNonce))
		_, err = verify(restarted, slow, nerr.Nonce)
		require.NoError(t, err, "the resend with the restarted Verifier's answer")
		// An on-time proof needs no start nonce: another's is taken off.
		_, err = verify(restarted, key, fromBefore)
		require.NoError(t, err)
	})
	t.Run("only start nonces are handed on, at most maxStartParts", func(t *testing.T) {
		t.Parallel()
		a := replica()
		next := testkit.Must(a.nonces.Next(t.Context()))(t)
		many := next
		for range 2 * maxStartParts {
			many += "~" + rand.Text()
		}
		for _, nonce := range []string{next + "~not-a-start-nonce", many, "~" + rand.Text() + "\r\nX: y"} {
			answer := asked(a, slow, nonce)
			parts := strings.Split(answer, "~")
			require.LessOrEqual(t, len(parts)-1, maxStartParts)
			require.Equal(t, a.startNonce, parts[len(parts)-1])
			for _, p := range parts[1:] {
				require.True(t, isStartNonce(p), "handed on: %q", p)
			}
			_, err := verify(a, slow, answer)
			require.NoError(t, err)
		}
	})
}
