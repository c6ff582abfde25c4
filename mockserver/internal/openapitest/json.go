package openapitest

import (
	"bytes"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeJSON decodes a body as the schemas visit it: one JSON value, numbers
// kept exact.
func decodeJSON(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}
