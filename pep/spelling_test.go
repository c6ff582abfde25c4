package pep_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/respell"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// spellings are the other spellings of an ES256 token of the reference
// server that it reads as the token itself: a flipped unused bit of the
// last character of each segment (carol's header and payload are 2 more
// than a multiple of 4 long, as an ES256 signature's 86 characters are),
// and the ECDSA twin (r, n-s) of its signature.
var spellings = []struct {
	name  string
	spell func(tok string) (string, error)
}{
	{"unused bits of the header", func(tok string) (string, error) { return respell.UnusedBits(tok, respell.Header) }},
	{"unused bits of the payload", func(tok string) (string, error) { return respell.UnusedBits(tok, respell.Payload) }},
	{"unused bits of the signature", func(tok string) (string, error) { return respell.UnusedBits(tok, respell.Signature) }},
	{"ECDSA twin", respell.ECDSATwin},
}

// TestEverySpellingOfARetiredTokenIsRetired: a token has other spellings
// the gateway reads as the same token, and a caller may send any of them
// (the middleware forwards a caller's Bearer token as it is). Each is
// granted by the gateway and cached as a token of its own: a decision is
// served only to the exact string the gateway answered for. But when the
// token is retired (Purge, a 401, SetToken or ClearToken replacing it,
// another replica's Purge or 401), every cached spelling of it is retired
// with it: the next call with another spelling asks the gateway, which
// refuses the revoked token, and is never granted from the cache.
func TestEverySpellingOfARetiredTokenIsRetired(t *testing.T) {
	t.Parallel()
	retirements := []struct {
		name string
		// own makes tok the client's own token (cached) before the
		// retirement, which replaces it.
		own bool
		// remote: the retirement happens on another replica, which tells
		// this one over the invalidation channel.
		remote bool
		retire func(t *testing.T, g *reference, c *pep.Client, tok string)
	}{
		{name: "Purge", retire: func(t *testing.T, _ *reference, c *pep.Client, tok string) {
			require.NoError(t, c.Purge(t.Context(), tok))
		}},
		{name: "401", retire: func(t *testing.T, _ *reference, c *pep.Client, tok string) {
			_, err := c.Check(pep.WithToken(t.Context(), tok), "invoices", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized)
		}},
		{name: "SetToken", own: true, retire: func(t *testing.T, g *reference, c *pep.Client, _ string) {
			c.SetToken(g.token(t, "dave"))
		}},
		{name: "ClearToken", own: true, retire: func(_ *testing.T, _ *reference, c *pep.Client, _ string) {
			c.ClearToken()
		}},
		{name: "another replica's Purge", remote: true, retire: func(t *testing.T, _ *reference, other *pep.Client, tok string) {
			require.NoError(t, other.Purge(t.Context(), tok))
		}},
		{name: "another replica's 401", remote: true, retire: func(t *testing.T, _ *reference, other *pep.Client, tok string) {
			_, err := other.Check(pep.WithToken(t.Context(), tok), "invoices", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized)
		}},
	}
	// Which spellings share an identity is internal/core's
	// (TestEverySpellingOfATokenHasItsIdentity): each retirement here runs
	// with one of them, and each spelling with at least one retirement.
	for i, rt := range retirements {
		sp := spellings[i%len(spellings)]
		t.Run(rt.name+"/"+sp.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			tok := g.token(t, "carol", mockserver.TokenClient(testClient))
			alt := testkit.Must(sp.spell(tok))(t)
			require.NotEqual(t, tok, alt)

			var c, other *pep.Client
			if rt.remote {
				b := newLongBus()
				c, other = b.client(t, g), b.client(t, g)
				b.Beat(time.Now())
			} else {
				c = g.newClient(t)
			}
			ctx := pep.WithToken(t.Context(), tok)
			if rt.own {
				c.SetToken(tok)
				ctx = t.Context()
			}
			// The token and its other spelling: each granted by the
			// gateway, then from the cache; the spelling is not served
			// the token's cached decision.
			for _, ctx := range []context.Context{ctx, pep.WithToken(t.Context(), alt)} {
				before := g.count()
				d := checkedIn(t, c, ctx, "orders", "read")
				require.True(t, d.Allowed(), "the gateway grants the spelling: %+v", d)
				require.Greater(t, g.count(), before, "served another spelling's cached decision")
				d = checkedIn(t, c, ctx, "orders", "read")
				require.True(t, d.Allowed() && d.Cached, "%+v", d)
			}

			g.revoke(t, tok)
			if rt.remote {
				rt.retire(t, g, other, tok)
				// A 401's purge is published on a goroutine of its
				// own; its message for this version comes first.
				require.Eventually(t, func() bool { return c.Stats().Invalidations > 0 }, 10*time.Second, 2*time.Millisecond, "the purge reaches the replica")
			} else {
				rt.retire(t, g, c, tok)
			}

			s, asked := checkServed(t, g, c, alt)
			require.True(t, asked, "the retired token's other spelling was served from the cache")
			require.NotEqual(t, pep.Grant, s)
		})
	}
}

// TestAForgedSpellingIsRefusedAndOnlyCostsAQuestion: a token's identity
// leaves its signature out, so a forged token (the header and payload of a
// real one, a signature no key made) has the real token's identity. It
// is never granted: the gateway refuses it (401), and its refusal retires
// the real token's cached decisions, which the gateway is then asked for
// again and grants.
func TestAForgedSpellingIsRefusedAndOnlyCostsAQuestion(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	tok := g.token(t, "carol", mockserver.TokenClient(testClient))
	forged := testkit.Must(respell.Forged(tok))(t)
	require.NotEqual(t, tok, forged)
	checkServed(t, g, c, tok)
	s, asked := checkServed(t, g, c, tok)
	require.False(t, asked)
	require.Equal(t, pep.Grant, s)

	for range 2 { // refused each time, never from the cache
		before := g.count()
		d, err := c.Check(pep.WithToken(t.Context(), forged), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
		require.False(t, d.Allowed(), "%+v", d)
		require.Greater(t, g.count(), before)
	}

	s, asked = checkServed(t, g, c, tok)
	require.True(t, asked, "the forged spelling's refusal left the real token's decisions cached")
	require.Equal(t, pep.Grant, s, "the real token is valid")
	s, asked = checkServed(t, g, c, tok)
	require.False(t, asked)
	require.Equal(t, pep.Grant, s)
}

// TestPurgesAcrossVersions: during a rolling upgrade, replicas of earlier
// versions hear this version's purges, and this version theirs. A Purge
// publishes the message replicas of earlier versions know (version 1,
// kind 't', the SHA-256 of the token under its domain) beside the one
// that names the token's identity (kind 'i', the SHA-256 of its header and
// payload, decoded and encoded again, under a domain of its own); and an
// earlier version's purge of a token, which names that one spelling, here
// retires every spelling of it the replica holds.
func TestPurgesAcrossVersions(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	b := newLongBus()
	c := b.client(t, g)
	b.Beat(time.Now())
	tok := g.token(t, "carol", mockserver.TokenClient(testClient))
	alt := testkit.Must(respell.UnusedBits(tok, respell.Payload))(t)
	earlier := func(tok string) []byte {
		d := sha256.Sum256([]byte("orgauthz/invalidation/v1\x00" + tok))
		return append([]byte{1, 't'}, d[:]...)
	}
	segs := strings.Split(tok, ".")
	for i := range segs[:2] {
		raw := testkit.Must(base64.RawURLEncoding.DecodeString(segs[i]))(t)
		segs[i] = base64.RawURLEncoding.EncodeToString(raw)
	}
	d := sha256.Sum256([]byte("orgauthz/invalidation/identity/v1\x00" + segs[0] + "." + segs[1]))
	identity := append([]byte{1, 'i'}, d[:]...)

	require.NoError(t, c.Purge(t.Context(), alt))
	require.Equal(t, [][]byte{identity, earlier(alt)}, b.Published())

	for _, s := range []string{tok, alt} {
		checkServed(t, g, c, s)
		_, asked := checkServed(t, g, c, s)
		require.False(t, asked)
	}
	g.revoke(t, tok)
	b.Deliver(earlier(tok)) // a replica of an earlier version's purge of tok
	for _, s := range []string{tok, alt} {
		st, asked := checkServed(t, g, c, s)
		require.True(t, asked, "a spelling's cached decision outlived an earlier version's purge of the token")
		require.NotEqual(t, pep.Grant, st)
	}
}
