package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// decodeJSON decodes a body as the schemas visit it: one JSON value, numbers
// kept exact (json.Number), nothing after it.
func decodeJSON(b []byte) (any, error) {
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
