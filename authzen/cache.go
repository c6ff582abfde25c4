package authzen

import (
	"crypto/sha256"

	"github.com/orgauthz/orgauthz/internal/core"
)

// The decision cache is internal/core's, grouped by the PEP's credential
// (two credentials never share an entry; a credential's entries go
// together on SetToken, ClearToken or a 401); below it, an entry's key is
// the canonical JSON of the whole evaluation: subject, action, resource
// and context with their properties, map keys sorted. Only decisions
// without a response context (whose size the PDP chooses) or error are
// kept, and a key longer than maxExactKey is replaced by its SHA-256
// digest, so that no caller chooses what one entry costs.
const maxExactKey = 512

// The longest key (maxExactKey, or a zero byte and a 32-byte digest) is
// within the bound WithCacheMaxBytes's least value is computed for; the
// build fails otherwise.
const _ = uint(core.MaxCachedKey - max(maxExactKey, 1+sha256.Size))

// cacheKey returns the key of an evaluation whose canonical JSON is body:
// the text itself when short, else a zero byte and its digest (no JSON
// text starts with a zero byte).
func cacheKey(body []byte) string {
	if len(body) <= maxExactKey {
		return string(body)
	}
	sum := sha256.Sum256(body)
	return "\x00" + string(sum[:])
}
