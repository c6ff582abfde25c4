package issuer

import (
	"crypto"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// keyMakers are the issuer's two kinds of key, by the algorithm of their
// tokens.
var keyMakers = []struct {
	alg string
	gen func() (crypto.Signer, string, error)
}{
	{"RS256", GenerateRSAKey},
	{"ES256", GenerateKey},
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	for _, km := range keyMakers {
		t.Run(km.alg, func(t *testing.T) {
			t.Parallel()
			key, kid := testkit.Must2(km.gen())(t)
			other, otherKid, err := km.gen()
			require.NoError(t, err)
			now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			iss := RealmIssuer("http://localhost:8080/", "acme")
			require.Equal(t, "http://localhost:8080/realms/acme", iss)

			claims := &Claims{
				Claims:            jwt.Claims{Issuer: iss, Subject: "u1", Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now)},
				Type:              TypeAccess,
				AuthorizedParty:   "admin-cli",
				PreferredUsername: "alice",
				RealmAccess:       &Access{Roles: []string{"realm-admin"}},
				ResourceAccess:    map[string]Access{"realm-management": {Roles: []string{"manage-realm"}}},
				Organization:      "org1",
				Confirmation:      &Confirmation{JKT: "thumb"},
			}
			raw := testkit.Must(Sign(key, kid, claims))(t)

			got := testkit.Must(Verify(raw, key.Public(), kid, iss, now))(t)
			require.Equal(t, "u1", got.Subject)
			require.True(t, got.HasRealmRole("realm-admin"))
			require.False(t, got.HasRealmRole("viewer"))
			require.True(t, got.HasClientRole("realm-management", "manage-realm"))
			require.Equal(t, "org1", got.Organization)
			require.Equal(t, "thumb", got.JKT())

			forged := testkit.Must(Sign(other, kid, claims))(t) // right kid, wrong key
			otherKey := testkit.Must(Sign(other, otherKid, claims))(t)
			later := *claims
			later.NotBefore = jwt.NewNumericDate(now.Add(time.Hour))
			notYet := testkit.Must(Sign(key, kid, &later))(t)
			later.NotBefore = jwt.NewNumericDate(now)
			validFromNow := testkit.Must(Sign(key, kid, &later))(t)
			testkit.Must(Verify(validFromNow, key.Public(), kid, iss, now))(t, "nbf equal to now is valid")
			untyped := *claims
			untyped.Type = ""
			noType := testkit.Must(Sign(key, kid, &untyped))(t)
			endless := *claims
			endless.Expiry = nil
			noExpiry := testkit.Must(Sign(key, kid, &endless))(t)

			jwk := PublicJWK(key, kid)
			require.True(t, jwk.IsPublic())
			require.Equal(t, km.alg, jwk.Algorithm)
			require.Equal(t, kid, jwk.KeyID)
			require.Equal(t, "sig", jwk.Use)

			type verifyCase struct {
				name, raw, iss string
				now            time.Time
				want           error
			}
			cases := []verifyCase{
				{"garbage", "not-a-token", iss, now, ErrMalformed},
				{"other key id", otherKey, iss, now, ErrKey},
				{"forged signature", forged, iss, now, ErrSignature},
				{"other issuer", raw, RealmIssuer("http://localhost:8080", "other"), now, ErrIssuer},
				{"not an access token", noType, iss, now, ErrType},
				{"expired", raw, iss, now.Add(time.Minute), ErrExpired},
				{"not yet valid", notYet, iss, now, ErrNotYetValid},
				{"TestVerifyRejectsMissingExpiry", noExpiry, iss, now, ErrExpired},
			}
			if km.alg == "RS256" {
				// A token is checked in its key's algorithm only: the
				// other algorithm's is malformed, whatever its kid. An ID
				// token, signed by the key of RS256 access tokens, is
				// no access token.
				ec, _ := testkit.Must2(GenerateKey())(t)
				es := testkit.Must(Sign(ec, kid, claims))(t)
				id := testkit.Must(SignIDToken(key, kid, &IDClaims{Claims: claims.Claims}))(t)
				cases = append(cases, verifyCase{"TestVerifyAcceptsOnlyTheKeysAlgorithm", es, iss, now, ErrMalformed},
					verifyCase{"TestIDTokenIsNotAnAccessToken", id, iss, now, ErrType})
			} else {
				_, err = SignIDToken(key, kid, &IDClaims{})
				require.Error(t, err, "ID tokens are RS256")
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					_, err := Verify(tc.raw, key.Public(), kid, tc.iss, tc.now)
					require.ErrorIs(t, err, tc.want)
				})
			}
		})
	}
}

// TestVerifyOwn: VerifyOwn takes any token the realm's key signed for the
// realm, whatever base URL its iss names and whatever the time (what
// revoking a token needs), and refuses the rest as Verify does.
func TestVerifyOwn(t *testing.T) {
	t.Parallel()
	key, kid := testkit.Must2(GenerateKey())(t)
	other, _ := testkit.Must2(GenerateKey())(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sign := func(k crypto.Signer, iss, typ string, nbf time.Time) string {
		raw := testkit.Must(Sign(k, kid, &Claims{Claims: jwt.Claims{Issuer: iss, ID: "j", Expiry: jwt.NewNumericDate(now.Add(time.Minute)),
			NotBefore: jwt.NewNumericDate(nbf)}, Type: typ}))(t)
		return raw
	}
	for _, tc := range []struct {
		name string
		raw  string
		want error
	}{
		{"minted under this name", sign(key, "http://127.0.0.1:8080/realms/acme", TypeAccess, now), nil},
		{"minted under another name", sign(key, "http://localhost:8080/realms/acme", TypeAccess, now), nil},
		{"not valid yet", sign(key, "http://localhost:8080/realms/acme", TypeAccess, now.Add(time.Hour)), nil},
		{"another realm's issuer", sign(key, "http://localhost:8080/realms/other", TypeAccess, now), ErrIssuer},
		{"no base", sign(key, "/realms/acme", TypeAccess, now), ErrIssuer},
		{"not an access token", sign(key, "http://localhost:8080/realms/acme", "ID", now), ErrType},
		{"forged signature", sign(other, "http://localhost:8080/realms/acme", TypeAccess, now), ErrSignature},
		{"garbage", "not-a-token", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := VerifyOwn(tc.raw, key.Public(), kid, "acme")
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "j", c.ID)
		})
	}
}

// BenchmarkVerify measures one uncached token check by algorithm: what a
// request with a token the verified-token cache does not hold costs.
func BenchmarkVerify(b *testing.B) {
	for _, km := range keyMakers {
		b.Run(km.alg, func(b *testing.B) {
			key, kid, err := km.gen()
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			raw, err := Sign(key, kid, &Claims{Claims: jwt.Claims{Issuer: "i", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, Type: TypeAccess})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Verify(raw, key.Public(), kid, "i", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSign measures minting one access token by algorithm.
func BenchmarkSign(b *testing.B) {
	for _, km := range keyMakers {
		b.Run(km.alg, func(b *testing.B) {
			key, kid, err := km.gen()
			if err != nil {
				b.Fatal(err)
			}
			c := &Claims{Claims: jwt.Claims{Issuer: "i", Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}, Type: TypeAccess}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Sign(key, kid, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestIsRealmIssuer: IsRealmIssuer is RealmIssuer's equality, for bases
// with and without a trailing slash, and nothing near it.
func TestIsRealmIssuer(t *testing.T) {
	t.Parallel()
	bases := []string{"", "/", "http://localhost:8080", "http://localhost:8080/", "https://idp.example/auth"}
	realms := []string{"acme", "", "a/b", "realms"}
	var candidates []string
	for _, b := range bases {
		for _, r := range realms {
			iss := RealmIssuer(b, r)
			candidates = append(candidates, iss, iss+"x", iss+"/", "x"+iss, strings.Replace(iss, "/realms/", "/realm/", 1), strings.ToUpper(iss))
		}
	}
	for _, b := range bases {
		for _, r := range realms {
			for _, iss := range candidates {
				require.Equal(t, iss == RealmIssuer(b, r), IsRealmIssuer(iss, b, r), "iss %q base %q realm %q", iss, b, r)
			}
		}
	}
}
