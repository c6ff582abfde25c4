package issuer

import (
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	key, kid, err := GenerateKey()
	require.NoError(t, err)
	other, otherKid, err := GenerateKey()
	require.NoError(t, err)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	iss := RealmIssuer("http://localhost:8080/", "acme")
	require.Equal(t, "http://localhost:8080/realms/acme", iss)

	claims := &Claims{
		Claims:            jwt.Claims{Issuer: iss, Subject: "u1", Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now)},
		AuthorizedParty:   "admin-cli",
		PreferredUsername: "alice",
		RealmAccess:       &Access{Roles: []string{"realm-admin"}},
		ResourceAccess:    map[string]Access{"realm-management": {Roles: []string{"manage-realm"}}},
		Organization:      "org1",
		Confirmation:      &Confirmation{JKT: "thumb"},
	}
	raw, err := Sign(key, kid, claims)
	require.NoError(t, err)

	got, err := Verify(raw, key.Public(), kid, iss, now)
	require.NoError(t, err)
	require.Equal(t, "u1", got.Subject)
	require.True(t, got.HasRealmRole("realm-admin"))
	require.False(t, got.HasRealmRole("viewer"))
	require.True(t, got.HasClientRole("realm-management", "manage-realm"))
	require.Equal(t, "org1", got.Organization)
	require.Equal(t, "thumb", got.JKT())

	forged, err := Sign(other, kid, claims) // right kid, wrong key
	require.NoError(t, err)
	otherKey, err := Sign(other, otherKid, claims)
	require.NoError(t, err)
	later := *claims
	later.NotBefore = jwt.NewNumericDate(now.Add(time.Hour))
	notYet, err := Sign(key, kid, &later)
	require.NoError(t, err)
	later.NotBefore = jwt.NewNumericDate(now)
	validFromNow, err := Sign(key, kid, &later)
	require.NoError(t, err)
	_, err = Verify(validFromNow, key.Public(), kid, iss, now)
	require.NoError(t, err, "nbf equal to now is valid")

	cases := []struct {
		name string
		raw  string
		iss  string
		now  time.Time
		want error
	}{
		{"garbage", "not-a-token", iss, now, ErrMalformed},
		{"other key id", otherKey, iss, now, ErrKey},
		{"forged signature", forged, iss, now, ErrSignature},
		{"other issuer", raw, RealmIssuer("http://localhost:8080", "other"), now, ErrIssuer},
		{"expired", raw, iss, now.Add(time.Minute), ErrExpired},
		{"not yet valid", notYet, iss, now, ErrNotYetValid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.raw, key.Public(), kid, tc.iss, tc.now)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestVerifyRejectsMissingExpiry(t *testing.T) {
	t.Parallel()
	key, kid, err := GenerateKey()
	require.NoError(t, err)
	raw, err := Sign(key, kid, &Claims{Claims: jwt.Claims{Issuer: "i"}})
	require.NoError(t, err)
	_, err = Verify(raw, key.Public(), kid, "i", time.Now())
	require.ErrorIs(t, err, ErrExpired)
}

func TestPublicJWK(t *testing.T) {
	t.Parallel()
	key, kid, err := GenerateKey()
	require.NoError(t, err)
	jwk := PublicJWK(key, kid)
	require.True(t, jwk.IsPublic())
	require.Equal(t, "ES256", jwk.Algorithm)
	require.Equal(t, kid, jwk.KeyID)
}
