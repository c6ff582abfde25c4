package dpop

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// The JSON of a proof is read by internal/strictjson, the module's one
// strict reader: a member given twice at any depth, two members whose
// names differ only in case, or a member that names one of the fields below
// in another case ("HTM", "ſtm") makes the proof malformed. JSON parsers
// disagree on duplicates (first wins, last wins, error) and encoding/json
// matches names case-insensitively, so such a proof could mean one thing
// to this package and another to go-jose or to a log reader; RFC 7515
// section 4 allows refusing duplicates.

// headerJSON is the protected header: the members Verify reads or
// refuses, each kept as JSON and judged by its own rule.
type headerJSON struct {
	Typ  jsontext.Value `json:"typ"`
	Alg  jsontext.Value `json:"alg"`
	JWK  jsontext.Value `json:"jwk"`
	Crit jsontext.Value `json:"crit"` // refused: no extension is understood
	B64  jsontext.Value `json:"b64"`  // refused: RFC 7797 payloads are not proofs
}

// keyJSON is the embedded key as Verify looks at it before go-jose reads
// it: its type, and the members that carry private or secret key material
// (RFC 7518 section 6, RFC 8037, and "priv" of the AKP key type).
type keyJSON struct {
	Kty  jsontext.Value `json:"kty"`
	D    jsontext.Value `json:"d"`
	P    jsontext.Value `json:"p"`
	Q    jsontext.Value `json:"q"`
	DP   jsontext.Value `json:"dp"`
	DQ   jsontext.Value `json:"dq"`
	QI   jsontext.Value `json:"qi"`
	Oth  jsontext.Value `json:"oth"`
	K    jsontext.Value `json:"k"`
	Priv jsontext.Value `json:"priv"`
}

// private reports whether the key carries a private member, whatever its
// value.
func (k *keyJSON) private() bool {
	for _, v := range []jsontext.Value{k.D, k.P, k.Q, k.DP, k.DQ, k.QI, k.Oth, k.K, k.Priv} {
		if len(v) > 0 {
			return true
		}
	}
	return false
}

// claimsJSON are the claims of a proof (RFC 9449 section 4.2); a missing
// or null string claim is "".
type claimsJSON struct {
	ID              string         `json:"jti"`
	Method          string         `json:"htm"`
	URL             string         `json:"htu"`
	Nonce           string         `json:"nonce"`
	AccessTokenHash string         `json:"ath"`
	IssuedAt        jsontext.Value `json:"iat"`
}

// decodeObject decodes data, which must be one JSON object, into v.
func decodeObject(data []byte, v any) error {
	if jsontext.Value(data).Kind() != '{' {
		return errors.New("not a JSON object")
	}
	return strictjson.Unmarshal(data, v)
}

// stringValue returns the string v holds: "" when the member is absent or
// null, an error when it holds another kind of value.
func stringValue(v jsontext.Value, name string) (string, error) {
	var s string
	if len(v) > 0 && strictjson.Unmarshal(v, &s) != nil {
		return "", fmt.Errorf("%s is not a string", name)
	}
	return s, nil
}

// parseClaims decodes the verified payload and checks the presence and JSON
// types of the claims.
func parseClaims(payload []byte) (Claims, error) {
	var pc claimsJSON
	if err := decodeObject(payload, &pc); err != nil {
		return Claims{}, fmt.Errorf("%w: claims: %w", ErrMalformed, err)
	}
	c := Claims{ID: pc.ID, Method: pc.Method, URL: pc.URL, Nonce: pc.Nonce, AccessTokenHash: pc.AccessTokenHash}
	for _, f := range []struct{ name, value string }{{"jti", c.ID}, {"htm", c.Method}, {"htu", c.URL}} {
		if f.value == "" {
			return Claims{}, fmt.Errorf("%w: %s", ErrMissingClaim, f.name)
		}
	}
	if len(pc.IssuedAt) == 0 {
		return Claims{}, fmt.Errorf("%w: iat", ErrMissingClaim)
	}
	var err error
	if c.IssuedAt, err = numericDate(pc.IssuedAt); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return c, nil
}

// numericDate decodes a JWT NumericDate (RFC 7519 section 2): a JSON number
// of seconds since the epoch, possibly with a fraction.
func numericDate(raw jsontext.Value) (time.Time, error) {
	if raw.Kind() != '0' {
		return time.Time{}, errors.New("iat is not a number")
	}
	if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return time.Unix(i, 0), nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > 1e12 {
		return time.Time{}, errors.New("iat is out of range")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}
