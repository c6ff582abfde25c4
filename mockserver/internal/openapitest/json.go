package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// decodeJSON decodes a body as the schemas visit it: one JSON value, numbers
// kept exact (json.Number), nothing after it. The text is first read by the
// module's strict reader (internal/strictjson), the one every client and the
// server itself read with: a member given twice, invalid UTF-8, a lone
// surrogate, malformed JSON or trailing data fail here, so the checker
// cannot pass an exchange a client of the module would refuse. (Object
// names are data here, as in a map: a member differing from a declared one
// only in case is left to the schema, e.g. additionalProperties false.)
func decodeJSON(b []byte) (any, error) {
	var raw json.RawMessage
	if err := strictjson.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more after the JSON value")
	}
	return v, nil
}
