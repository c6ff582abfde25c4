package dpop

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// The JSON of a proof is read by internal/strictjson, the module's one
// strict reader: a member given twice at any depth, two members whose
// names differ only in case, or a member that names one of the members
// read here in another case ("HTM", or "jwK" with the Kelvin sign U+212A,
// which Unicode folds to k) makes the proof malformed. JSON
// parsers disagree on duplicates (first wins, last wins, error) and
// encoding/json matches names case-insensitively, so such a proof could
// mean one thing to this package and another to a log reader; RFC 7515
// section 4 allows refusing duplicates. The header, the jwk and the claims
// are each read once, by this one reader: no second parser looks at them.

// headerNames are the members of the protected header Verify reads or
// refuses; crit (no extension is understood) and b64 (RFC 7797 payloads
// are not proofs) are refused.
var headerNames = []string{"typ", "alg", "jwk", "crit", "b64"}

const (
	hdrTyp = iota
	hdrAlg
	hdrJWK
	hdrCrit
	hdrB64
	hdrMembers // how many
)

// claimNames are the claims of a proof (RFC 9449 section 4.2).
var claimNames = []string{"jti", "htm", "htu", "nonce", "ath", "iat"}

const (
	clmJTI = iota
	clmHTM
	clmHTU
	clmNonce
	clmATH
	clmIAT
)

// scratch is the space one Check works in: the readers and the decoded
// parts of the proof. Checks take one from a pool and give it back before
// they return, so nothing in it outlives a Check: every string a Result
// holds is copied out of it.
type scratch struct {
	r       *strictjson.Reader
	header  []byte
	payload []byte
	sig     []byte
	input   []byte // the signing input, header.payload
	der     []byte // the ECDSA signature in ASN.1
	str     []byte // scratch space for a string with escapes
	members [hdrMembers]strictjson.Value
	jwk     jwkFields
}

var scratches = sync.Pool{New: func() any { return &scratch{r: strictjson.New()} }}

// maxPooledBuffer is the largest buffer a scratch keeps when it goes back
// to the pool.
const maxPooledBuffer = 2 * maxProofSize

func getScratch() *scratch { return scratches.Get().(*scratch) }

func (s *scratch) release() {
	s.r.Release()
	s.members = [hdrMembers]strictjson.Value{}
	for _, b := range []*[]byte{&s.header, &s.payload, &s.sig, &s.input, &s.der, &s.str,
		&s.jwk.kty, &s.jwk.crv, &s.jwk.x, &s.jwk.y, &s.jwk.n, &s.jwk.e, &s.jwk.unquote, &s.jwk.thumbprintBuf} {
		if cap(*b) > maxPooledBuffer {
			*b = nil
		}
	}
	scratches.Put(s)
}

// readHeader reads the decoded protected header s.header under the strict
// rule, keeping the text of each member of headerNames in s.members.
func (s *scratch) readHeader() error {
	s.members = [hdrMembers]strictjson.Value{}
	s.r.Reset(s.header)
	err := s.r.Object()
	for i, ok := s.r.Next(headerNames, &err); ok; i, ok = s.r.Next(headerNames, &err) {
		s.members[i], err = s.r.Checked()
	}
	if err == nil {
		err = s.r.End()
	}
	return err
}

// stringMember returns the string v holds: "" when the member is absent
// or null, an error when it holds another kind of value. The bytes are
// valid until the next call.
func (s *scratch) stringMember(v strictjson.Value) ([]byte, error) {
	switch v.Kind() {
	case 0, 'n':
		return nil, nil
	case '"':
		var err error
		s.str, err = strictjson.AppendUnquote(s.str[:0], v)
		return s.str, err
	}
	return nil, errors.New("not a string")
}

// readClaims reads the verified payload s.payload and checks the presence
// and JSON types of the claims; a missing or null string claim is "".
func (s *scratch) readClaims() (Claims, error) {
	var c Claims
	var iat strictjson.Value
	s.r.Reset(s.payload)
	member := func(i int) error {
		if i == clmIAT {
			var err error
			iat, err = s.r.Checked()
			return err
		}
		if s.r.Kind() == 'n' {
			_, err := s.r.Checked()
			return err
		}
		b, err := s.r.Bytes(&s.str)
		if err != nil {
			return err
		}
		v := string(b)
		switch i {
		case clmJTI:
			c.ID = v
		case clmHTM:
			c.Method = v
		case clmHTU:
			c.URL = v
		case clmNonce:
			c.Nonce = v
		case clmATH:
			c.AccessTokenHash = v
		}
		return nil
	}
	err := s.r.Object()
	for i, ok := s.r.Next(claimNames, &err); ok; i, ok = s.r.Next(claimNames, &err) {
		err = member(i)
	}
	if err == nil {
		err = s.r.End()
	}
	if err != nil {
		return Claims{}, fmt.Errorf("%w: claims: %s", ErrMalformed, strictjson.Problem(err))
	}
	for _, f := range []struct{ name, value string }{{"jti", c.ID}, {"htm", c.Method}, {"htu", c.URL}} {
		if f.value == "" {
			return Claims{}, fmt.Errorf("%w: %s", ErrMissingClaim, f.name)
		}
	}
	if len(iat) == 0 {
		return Claims{}, fmt.Errorf("%w: iat", ErrMissingClaim)
	}
	if c.IssuedAt, err = numericDate(iat); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return c, nil
}

// numericDate decodes a JWT NumericDate (RFC 7519 section 2): a JSON number
// of seconds since the epoch, possibly with a fraction.
func numericDate(raw strictjson.Value) (time.Time, error) {
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
