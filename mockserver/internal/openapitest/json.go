package openapitest

import (
	"bytes"
	"encoding/json"
)

// decodeJSON decodes a body as openapi3 schemas visit it (numbers as
// float64).
func decodeJSON(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
