package dpop

import (
	"bytes"
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// hostClock is a host's two clocks as a test drives them: the wall clock
// and the monotonic one, which a wall-clock step does not move and a
// suspended machine does not advance.
type hostClock struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Duration
}

func (c *hostClock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *hostClock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Pass lets d go by on both clocks.
func (c *hostClock) Pass(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall, c.mono = c.wall.Add(d), c.mono+d
}

// Step moves the wall clock alone.
func (c *hostClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

var nonceSecret = bytes.Repeat([]byte{7}, MinNonceSecretSize)

func testNonces(t *testing.T, c *hostClock, lifetime time.Duration, secret []byte, older ...[]byte) *hmacNonces {
	t.Helper()
	return testkit.Must(newHMACNonces(secret, lifetime, older, c.Wall, c.Elapsed))(t)
}

func next(t *testing.T, n Nonces) string {
	t.Helper()
	return testkit.Must(n.Next(t.Context()))(t)
}

// TestHMACNoncesSharedByReplicas: a nonce minted by one replica is valid
// at another holding the same secret and lifetime, and at none holding
// another secret or lifetime; nothing but a minted nonce is valid.
func TestHMACNoncesSharedByReplicas(t *testing.T) {
	t.Parallel()
	c := &hostClock{wall: testNow}
	a := testNonces(t, c, time.Minute, nonceSecret)
	b := testNonces(t, c, time.Minute, nonceSecret)
	other := testNonces(t, c, time.Minute, bytes.Repeat([]byte{8}, MinNonceSecretSize))
	longer := testNonces(t, c, 2*time.Minute, nonceSecret)
	n := next(t, a)
	require.True(t, b.Valid(t.Context(), n))
	require.True(t, a.Valid(t.Context(), n))
	require.False(t, other.Valid(t.Context(), n))
	require.False(t, longer.Valid(t.Context(), n))

	tampered := []byte(n)
	tampered[len(tampered)-1] ^= 1
	for _, bad := range []string{"", "x", string(tampered), n + "A", n[:len(n)-1], base64.RawURLEncoding.EncodeToString(make([]byte, 24))} {
		require.False(t, b.Valid(t.Context(), bad), "%q", bad)
	}
}

// TestHMACNoncesLifetime: wherever in its step a nonce is minted, it is
// valid for lifetime/2 and no longer valid once lifetime has passed.
func TestHMACNoncesLifetime(t *testing.T) {
	t.Parallel()
	const lifetime = time.Minute
	for _, at := range []time.Duration{0, time.Nanosecond, 10 * time.Second, lifetime/2 - time.Nanosecond} {
		c := &hostClock{wall: time.Unix(0, 0).Add(1_000_000 * lifetime / 2).Add(at)}
		n := testNonces(t, c, lifetime, nonceSecret)
		nonce := next(t, n)
		c.Pass(lifetime/2 - time.Nanosecond)
		require.True(t, n.Valid(t.Context(), nonce), "minted %v into its step, at lifetime/2", at)
		c.Pass(lifetime/2 + time.Nanosecond)
		require.False(t, n.Valid(t.Context(), nonce), "minted %v into its step, at lifetime", at)
	}
}

// TestHMACNoncesRefuseTheFuture: a nonce of a step not yet begun (minted
// by a replica whose clock runs more than a step ahead) is refused, not
// held to become valid later.
func TestHMACNoncesRefuseTheFuture(t *testing.T) {
	t.Parallel()
	behind := &hostClock{wall: testNow}
	ahead := &hostClock{wall: testNow.Add(time.Minute)}
	n := next(t, testNonces(t, ahead, time.Minute, nonceSecret))
	require.False(t, testNonces(t, behind, time.Minute, nonceSecret).Valid(t.Context(), n))
}

// TestHMACNoncesClockStepsAndFreezes: a nonce never becomes valid again,
// or stays valid past its lifetime, when the wall clock steps back an
// hour (old nonces would match the stepped-back clock), nor when the
// process's monotonic clock stood still for an hour while the wall clock
// went on (a suspended machine; the process then runs as if no time had
// passed). After a wall clock step ahead and back the source keeps
// minting nonces that its own checks accept.
func TestHMACNoncesClockStepsAndFreezes(t *testing.T) {
	t.Parallel()
	t.Run("wall clock steps back", func(t *testing.T) {
		t.Parallel()
		c := &hostClock{wall: testNow}
		n := testNonces(t, c, time.Minute, nonceSecret)
		old := next(t, n)
		c.Pass(time.Hour)
		c.Step(-time.Hour)
		require.False(t, n.Valid(t.Context(), old), "an hour-old nonce is valid again after the wall clock stepped back")
		require.True(t, n.Valid(t.Context(), next(t, n)))
	})
	t.Run("monotonic clock stood still", func(t *testing.T) {
		t.Parallel()
		c := &hostClock{wall: testNow}
		n := testNonces(t, c, time.Minute, nonceSecret)
		old := next(t, n)
		c.Step(time.Hour)
		require.False(t, n.Valid(t.Context(), old), "a nonce is valid an hour after it was minted")
		require.True(t, n.Valid(t.Context(), next(t, n)))
	})
	t.Run("wall clock steps ahead and back", func(t *testing.T) {
		t.Parallel()
		c := &hostClock{wall: testNow}
		n := testNonces(t, c, time.Minute, nonceSecret)
		c.Step(time.Hour)
		ahead := next(t, n)
		c.Step(-time.Hour)
		fresh := next(t, n)
		require.True(t, n.Valid(t.Context(), fresh))
		c.Pass(time.Minute)
		require.False(t, n.Valid(t.Context(), ahead), "a nonce minted while the clock was ahead outlives its lifetime")
		require.False(t, n.Valid(t.Context(), fresh))
	})
}

// TestHMACNoncesRotation: with the old secret among the older ones, the
// nonces minted under it stay valid, and new ones are minted under the new
// secret only.
func TestHMACNoncesRotation(t *testing.T) {
	t.Parallel()
	c := &hostClock{wall: testNow}
	newSecret := bytes.Repeat([]byte{9}, MinNonceSecretSize)
	before := testNonces(t, c, time.Minute, nonceSecret)
	during := testNonces(t, c, time.Minute, newSecret, nonceSecret)
	after := testNonces(t, c, time.Minute, newSecret)

	old := next(t, before)
	require.True(t, during.Valid(t.Context(), old))
	require.False(t, after.Valid(t.Context(), old))
	minted := next(t, during)
	require.True(t, after.Valid(t.Context(), minted))
	require.False(t, before.Valid(t.Context(), minted))
}

// TestNewHMACNoncesRefusesBadInput: each mistake gets an error that says
// what to fix; the source copies the secret.
func TestNewHMACNoncesRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		secret   []byte
		lifetime time.Duration
		older    [][]byte
		want     string
	}{
		{"short secret", []byte("hunter2"), time.Minute, nil, "the secret is 7 bytes: use at least 32 random bytes"},
		{"no secret", nil, time.Minute, nil, "the secret is 0 bytes"},
		{"zero lifetime", nonceSecret, 0, nil, "lifetime 0s is too short: use at least 2s"},
		{"negative lifetime", nonceSecret, -time.Minute, nil, "too short"},
		{"short older secret", nonceSecret, time.Minute, [][]byte{nonceSecret, []byte("old")}, "the older secret 2 is 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewHMACNonces(tc.secret, tc.lifetime, tc.older...)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "dpop: NewHMACNonces: ")
		})
	}

	secret := bytes.Clone(nonceSecret)
	n := testkit.Must(NewHMACNonces(secret, time.Minute))(t)
	nonce := testkit.Must(n.Next(context.Background()))(t)
	secret[0] ^= 1
	require.True(t, n.Valid(t.Context(), nonce))
}

// TestHMACNoncesWithVerifier: a Verifier using HMAC nonces asks for one,
// and accepts the proof that carries the nonce another replica minted.
func TestHMACNoncesWithVerifier(t *testing.T) {
	t.Parallel()
	c := &hostClock{wall: testNow}
	a := newTestVerifier(t, WithNonces(testNonces(t, c, time.Minute, nonceSecret)))
	b := newTestVerifier(t, WithNonces(testNonces(t, c, time.Minute, nonceSecret)))
	f := newFixture(t)
	_, err := a.Verify(t.Context(), f.request(f.proof(t, nil)))
	requireOnlyNonce(t, err, ErrNonceRequired, nil)
	var ne *NonceError
	require.ErrorAs(t, err, &ne)
	verified(t, b, f.request(f.proof(t, func(_, cl map[string]any) { cl["nonce"] = ne.Nonce })))
}
