package dpop

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// maxVerifyAllocs is what one successful Verify of a resource request may
// allocate: the budget of issue 26 (a Verify cost 529 allocations when
// go-jose parsed the header and the key a second time).
const maxVerifyAllocs = 40

// TestVerifyAllocationBudget: a full Verify (every check, the replay
// record included) stays within maxVerifyAllocs for the proofs of the
// Signer's ES256 and EdDSA keys. It works in one scratch, not the pool's:
// the race detector drops pooled values at random.
func TestVerifyAllocationBudget(t *testing.T) {
	keys := testKeys(t)
	for _, name := range []string{"ES256", "EdDSA"} {
		t.Run(name, func(t *testing.T) {
			const runs = 50
			s := mustSigner(t, keys[name]).WithClock(fixedClock(testNow))
			proofs := make([]string, runs+1) // AllocsPerRun runs once more to warm up
			for i := range proofs {
				p := proofOf(t, s, "GET", benchURL, testToken, "")
				proofs[i] = p
			}
			v := newTestVerifier(t)
			sc := &scratch{r: strictjson.New()}
			req := Request{Method: "GET", URL: benchURL, AccessToken: testToken, JKT: s.Thumbprint()}
			i := 0
			allocs := testing.AllocsPerRun(runs, func() {
				req.Proofs = []string{proofs[i]}
				i++
				res, err := v.check(t.Context(), req, sc)
				if err == nil {
					err = v.Record(res)
				}
				require.NoError(t, err)
			})
			require.LessOrEqual(t, allocs, float64(maxVerifyAllocs))
		})
	}
}
