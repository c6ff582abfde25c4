package core

import (
	"crypto/sha256"
	"encoding/base64"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/respell"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// decodedIdentity is a token's identity as a verifier reads the token
// (Go's base64.RawURLEncoding, as go-jose): the segments of a compact JWS
// (its header and payload) or JWE (all five) decoded and encoded again,
// which drops whatever the decoder ignores; any other token as it is. A
// segment with a line break, which the decoder skips, is no segment here:
// no header, and so no token sent, holds one.
func decodedIdentity(token string) string {
	segs := strings.Split(token, ".")
	if len(segs) != 3 && len(segs) != 5 || strings.ContainsAny(token, "\r\n") {
		return token
	}
	for i, s := range segs {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return token
		}
		segs[i] = base64.RawURLEncoding.EncodeToString(b)
	}
	if len(segs) == 3 {
		segs = segs[:2] // a JWS's signature is left out
	}
	return strings.Join(segs, ".")
}

// wantIdentity is the identity's digest every replica computes: the
// SHA-256 of its domain and the identity.
func wantIdentity(token string) [digestBytes]byte {
	return sha256.Sum256([]byte("orgauthz/invalidation/identity/v1\x00" + decodedIdentity(token)))
}

// jws is an ES256-shaped compact JWS: a header of 38 characters, a payload
// of 143 and a signature of 86 (2, 3 and 2 more than a multiple of 4: the
// last character of each has unused bits).
var jws = func() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"ES256","typ":"JWT","kid":"k1"}`)[:28]) + "." +
		enc([]byte(strings.Repeat(`{"sub":"carol","azp":"orders-api"}`, 4)[:107])) + "." +
		enc([]byte(strings.Repeat("\x17\xa9", 32)))
}()

// TestEverySpellingOfATokenHasItsIdentity: the spellings a verifier reads
// as one token (the unused bits of each segment's last character, the
// ECDSA twin of the signature, any signature) have one identity, which
// every replica computes alike; tokens that differ in what a verifier
// reads differ in identity; what is no compact JWS or JWE is its own.
func TestEverySpellingOfATokenHasItsIdentity(t *testing.T) { // not parallel: AllocsPerRun
	twin := testkit.Must(respell.ECDSATwin(jws))(t)
	forged := testkit.Must(respell.Forged(jws))(t)
	same := map[string]string{"ECDSA twin": twin, "forged": forged}
	for _, seg := range []respell.Segment{respell.Header, respell.Payload, respell.Signature} {
		alt := testkit.Must(respell.UnusedBits(jws, seg))(t)
		same["unused bits of the "+seg.String()] = alt
	}
	jwe := "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..bWFkZSB1cCBpdg.Y2lwaGVydGV4dA.dGFnIG9mIDE2IGJ5dGVz"
	jweAlt := strings.Replace(jwe, "Y2lwaGVydGV4dA", "Y2lwaGVydGV4dB", 1) // "A" and "B" differ in unused bits
	same["a JWE's unused bits"] = jweAlt

	for name, alt := range same {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, jws, alt)
			want := wantIdentity(jws)
			if strings.Count(alt, ".") == 4 {
				want = wantIdentity(jwe)
			}
			require.Equal(t, want, identityDigest(alt))
		})
	}

	other := map[string]string{
		"another payload":           strings.Replace(jws, ".", ".X", 1),
		"a used bit of the header":  flipChar(jws, strings.IndexByte(jws, '.')-1, 32),
		"a used bit of the payload": flipChar(jws, strings.LastIndexByte(jws, '.')-1, 32),
		"a JWE's used bit":          strings.Replace(jwe, "Y2lwaGVydGV4dA", "Y2lwaGVydGV4dQ", 1),
	}
	for name, tok := range other {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, wantIdentity(tok), identityDigest(tok))
			require.NotEqual(t, identityDigest(jws), identityDigest(tok))
			require.NotEqual(t, identityDigest(jwe), identityDigest(tok))
		})
	}

	for _, tok := range []string{
		"", "opaque-token", "a.b", "a.b.c.d", "a.b.c.d.e.f", // no JWS or JWE
		"abcde.abc.abc", "ab+c.abc.abc", "ab=.abc.abc", "ab c.abc.abc", "ab\n.abc.abc", // no segment decodes
	} {
		require.Equal(t, sha256.Sum256([]byte("orgauthz/invalidation/identity/v1\x00"+tok)), identityDigest(tok), "%q is its own identity", tok)
	}

	long := jws[:40] + strings.Repeat("A", 3*shortToken) + jws[40:] // hashed through the heap
	require.Equal(t, wantIdentity(long), identityDigest(long))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = identityDigest(jws) }), "a per-call token's is made for each request")
}

// flipChar returns s with its i-th character, of the base64url alphabet,
// replaced by the one whose value differs by bit.
func flipChar(s string, i int, bit int8) string {
	return s[:i] + string(base64URL[base64URLValue[s[i]]^bit]) + s[i+1:]
}

// FuzzIdentity: whatever the token, its identity is the one a verifier
// reads (decodedIdentity), and computing it does not panic.
func FuzzIdentity(f *testing.F) {
	for _, s := range []string{jws, "a.b.c", "ab.cd.ef.gh.ij", "", "..", "....", "x", "ab=.c.d", "ab\r.cd.ef"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		require.Equal(t, wantIdentity(tok), identityDigest(tok))
	})
}

// TestRetirementFindsEverySpelling: a token's retirement drops the cached
// decisions of every spelling of it under its scheme, and only those;
// another replica's purge by identity (msgIdentity) under every scheme; a
// purge of a replica of an earlier version (msgToken, by one spelling's
// own digest) every spelling of that spelling's token. A spelling cached
// again after its retirement is found by the next one.
func TestRetirementFindsEverySpelling(t *testing.T) {
	t.Parallel()
	alt := testkit.Must(respell.UnusedBits(jws, respell.Signature))(t)
	twin := testkit.Must(respell.ECDSATwin(jws))(t)
	dpop := transport.Ident{Scheme: transport.SchemeDPoP, Token: alt}
	unrelated := bearer(strings.Replace(jws, ".", ".X", 1))
	all := []transport.Ident{bearer(jws), bearer(alt), bearer(twin), dpop, unrelated}
	cached := func(d *decisions) (out []transport.Ident) {
		for _, id := range all {
			if _, ok := d.lru.Get(id, "k"); ok {
				out = append(out, id)
			}
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		retire func(d *decisions)
		left   []transport.Ident
	}{
		{"a retirement under one scheme", func(d *decisions) { d.retire(bearer(jws), identityDigest(jws), schemeBit(transport.SchemeBearer)) },
			[]transport.Ident{dpop, unrelated}},
		{"another replica's purge", func(d *decisions) { d.retire(transport.Ident{}, identityDigest(twin), allSchemes) },
			[]transport.Ident{unrelated}},
		{"a purge of a replica of an earlier version", func(d *decisions) { purgeDigest(d, tokenDigest(twin)) },
			[]transport.Ident{unrelated}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := indexed(t, 100)
			for range 2 { // and again, once retired
				for _, id := range all {
					store(d, id, "k")
				}
				require.Equal(t, all, cached(d))
				tt.retire(d)
				require.Equal(t, tt.left, cached(d))
			}
		})
	}
}

// TestDigestIndexSharesTheCachesCopyOfTheToken: the index keeps the
// cache's copy of a token, not the caller's bytes (a token is often cut
// from a request's header) nor a copy of its own; and when the cache let
// the token's group go and made it again, the copy the cache holds now,
// not the old one.
func TestDigestIndexSharesTheCachesCopyOfTheToken(t *testing.T) {
	t.Parallel()
	d := testkit.Must(newDecisions(&Settings{CacheSize: 10, CacheMaxBytes: math.MaxInt64, AllowTTL: time.Hour, DenyTTL: time.Hour}))(t)
	header := "Bearer " + jws
	tok := header[len("Bearer "):]
	for round := range 2 { // the second with the group made again
		w := d.writer(bearer(tok))
		kept := w.w.GroupValue().Token
		require.True(t, unsafe.StringData(kept) != unsafe.StringData(tok), "the cache keeps a copy of its own")
		d.digests.mu.RLock()
		require.Len(t, d.digests.ids, 1)
		for indexed, sp := range d.digests.ids {
			require.Equal(t, jws, indexed)
			require.True(t, unsafe.StringData(kept) == unsafe.StringData(indexed) && unsafe.StringData(kept) == unsafe.StringData(sp.token),
				"round %d: the index holds the caller's bytes, a copy of its own or an old one", round)
		}
		d.digests.mu.RUnlock()
		w.Close() // nothing stored: the cache lets the group go
		require.False(t, d.lru.Holds(bearer(tok)))
	}
}
