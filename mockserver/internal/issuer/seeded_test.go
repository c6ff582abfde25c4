package issuer

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestSeededKeys: one seed and realm name give one key, in any process
// (each call derives it anew); another seed or realm another key; the keys
// sign tokens that verify; a short seed is refused.
func TestSeededKeys(t *testing.T) {
	t.Parallel()
	seed := bytes.Repeat([]byte("s"), MinSeedSize)
	other := bytes.Repeat([]byte("t"), MinSeedSize)
	for name, derive := range map[string]func([]byte, string) (any, string, error){
		"P-256": func(s []byte, r string) (any, string, error) { return SeededKey(s, r) },
		"RSA": func(s []byte, r string) (any, string, error) {
			k, kid, err := SeededRSAKey(s, r)
			if err == nil {
				require.Equal(t, 2048, k.(*rsa.PrivateKey).N.BitLen())
			}
			return k, kid, err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k1, kid1 := testkit.Must2(derive(seed, "acme"))(t)
			k2, kid2 := testkit.Must2(derive(seed, "acme"))(t)
			require.Equal(t, kid1, kid2)
			require.True(t, k1.(interface {
				Equal(x crypto.PrivateKey) bool
			}).Equal(k2))
			_, kidOther := testkit.Must2(derive(other, "acme"))(t)
			require.NotEqual(t, kid1, kidOther)
			_, kidRealm, err := derive(seed, "globex")
			require.NoError(t, err)
			require.NotEqual(t, kid1, kidRealm)
			_, _, err = derive(seed[:MinSeedSize-1], "acme")
			require.ErrorContains(t, err, "at least 16 bytes")
		})
	}
}
