package dpop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/asn1"
	"encoding/base64"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// p256Params is P-256's order n and n/2, from the standard library, as the
// tests' own reference.
func p256Params() (n, half *big.Int) {
	n = elliptic.P256().Params().N
	return n, new(big.Int).Rsh(n, 1)
}

// proofS returns the s of an ES256 proof's signature.
func proofS(t testing.TB, proof string) *big.Int {
	t.Helper()
	sig := testkit.Must(base64.RawURLEncoding.Strict().DecodeString(proof[strings.LastIndexByte(proof, '.')+1:]))(t)
	require.Len(t, sig, 64)
	return new(big.Int).SetBytes(sig[32:])
}

// twin returns proof with its ES256 signature's other valid form: (r, n - s)
// for (r, s). Anyone who saw proof can make it, without the key.
func twin(t testing.TB, proof string) string {
	t.Helper()
	dot := strings.LastIndexByte(proof, '.')
	sig := testkit.Must(base64.RawURLEncoding.Strict().DecodeString(proof[dot+1:]))(t)
	n, _ := p256Params()
	s := new(big.Int).Sub(n, new(big.Int).SetBytes(sig[32:]))
	s.FillBytes(sig[32:])
	return proof[:dot+1] + base64.RawURLEncoding.EncodeToString(sig)
}

// highSKey signs with key and returns the high-S form of every signature,
// as other ECDSA implementations may.
func highSKey(key *ecdsa.PrivateKey) crypto.Signer {
	return opaqueKey{pub: key.Public(), sign: func(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
		der, err := key.Sign(r, digest, opts)
		if err != nil {
			return nil, err
		}
		var sig struct{ R, S *big.Int }
		if _, err := asn1.Unmarshal(der, &sig); err != nil {
			return nil, err
		}
		if n, half := p256Params(); sig.S.Cmp(half) <= 0 {
			sig.S.Sub(n, sig.S)
		}
		return asn1.Marshal(sig)
	}}
}

// TestSignerES256ProofsAreLowS: every ES256 proof a Signer makes carries
// the low-S form of its signature (s at most n/2), whatever form the key
// returned (the standard library's key returns either, at random; an HSM
// may always return the high one), and still verifies, at a Verifier and
// at go-jose.
func TestSignerES256ProofsAreLowS(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	_, half := p256Params()
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{
		{"standard library key", testP256},
		{"a key returning high-S signatures", highSKey(testP256)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustSigner(t, tc.key)
			v := mustVerifier(t)
			const url = "https://rs.example/r"
			for range 100 {
				proof := proofOf(t, s, "GET", url, "", "")
				require.LessOrEqual(t, proofS(t, proof).Cmp(half), 0, "a high-S signature")
				verified(t, v, Request{Proofs: []string{proof}, Method: "GET", URL: url})
				require.NoError(t, verifyWithGoJose(proof))
			}
		})
	}
}

// TestVerifierProofIdentityIsKeyAndJTI: a Verifier accepts a high-S ES256
// proof of another signer (interop: crypto/ecdsa and other implementations
// return either form), and refuses the other form of an accepted proof,
// which anyone who saw it can make without the key, as a replay: a proof is
// its key and jti, never its bytes. With a shared ReplayStore too.
func TestVerifierProofIdentityIsKeyAndJTI(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	_, half := p256Params()
	const url = "https://rs.example/r"
	for _, tc := range []struct {
		name  string
		store bool
	}{
		{"replay cache", false},
		{"replay store", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []Option
			if tc.store {
				opts = append(opts, WithReplayStore(newMemStore(time.Now)))
			}
			v := mustVerifier(t, opts...)
			verify := func(ctx context.Context, proof string) error {
				_, err := v.Verify(ctx, Request{Proofs: []string{proof}, Method: "GET", URL: url})
				return err
			}
			low := testkit.Must(mustSigner(t, testP256).Proof("GET", url, "", ""))(t)
			high := twin(t, low)
			require.Positive(t, proofS(t, high).Cmp(half), "the twin is the high-S form")

			require.NoError(t, verify(t.Context(), high), "another signer's high-S proof")
			require.ErrorIs(t, verify(t.Context(), low), ErrReplay, "its low-S twin")
			require.ErrorIs(t, verify(t.Context(), high), ErrReplay, "itself again")

			low = testkit.Must(mustSigner(t, testP256).Proof("GET", url, "", ""))(t)
			require.NoError(t, verify(t.Context(), low), "a Signer's proof")
			require.ErrorIs(t, verify(t.Context(), twin(t, low)), ErrReplay, "its high-S twin, made without the key")
		})
	}
}

// TestP256LowS: p256LowS leaves an s up to n/2 as it is, turns a larger
// one into n - s, and refuses an r or s not below n.
func TestP256LowS(t *testing.T) {
	t.Parallel()
	n, half := p256Params()
	one := big.NewInt(1)
	for _, tc := range []struct {
		name    string
		r, s    *big.Int
		want    *big.Int // the s written back; nil when refused
		wantErr bool
	}{
		{"s = 1", one, one, one, false},
		{"s = n/2", one, half, half, false},
		{"s = n/2 + 1", one, new(big.Int).Add(half, one), new(big.Int).Sub(n, new(big.Int).Add(half, one)), false},
		{"s = n - 1", one, new(big.Int).Sub(n, one), one, false},
		{"s = n", one, n, nil, true},
		{"r = n", n, one, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sig := make([]byte, 64)
			tc.r.FillBytes(sig[:32])
			tc.s.FillBytes(sig[32:])
			err := p256LowS(sig)
			if tc.wantErr {
				require.ErrorIs(t, err, errOutOfRangeECDSA)
				return
			}
			require.NoError(t, err)
			require.Zero(t, tc.want.Cmp(new(big.Int).SetBytes(sig[32:])), "s = %x", sig[32:])
			require.Zero(t, tc.r.Cmp(new(big.Int).SetBytes(sig[:32])), "r unchanged")
		})
	}
}
