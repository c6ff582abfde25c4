package dpop

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// parseObject decodes data as one JSON object into its members, refusing
// duplicate member names at any depth and anything after the object.
//
// JSON parsers disagree on duplicates (first wins, last wins, error) and
// encoding/json matches struct fields case-insensitively, so a header such as
// {"typ":"dpop+jwt","typ":"jwt"} or claims holding both "htm" and "HTM" could
// mean one thing to this package and another to go-jose or to a log reader.
// RFC 7515 section 4 allows rejecting duplicates; we do, and then read members
// by their exact names from the map.
func parseObject(data []byte) (map[string]json.RawMessage, error) {
	if err := checkUniqueMembers(data); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a json object")
	}
	return m, nil
}

// checkUniqueMembers walks the tokens of data and fails on a duplicate member
// name in any object.
func checkUniqueMembers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		names     map[string]struct{} // nil for an array
		expectKey bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.names != nil && top.expectKey {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:len(stack)-1]
					continue
				}
				name, ok := tok.(string)
				if !ok {
					return errors.New("object member name is not a string")
				}
				if _, dup := top.names[name]; dup {
					return errors.New("duplicate member name")
				}
				top.names[name] = struct{}{}
				top.expectKey = false
				continue
			}
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			if len(stack) > 0 && stack[len(stack)-1].names != nil {
				stack[len(stack)-1].expectKey = true // the value is this object
			}
			stack = append(stack, frame{names: map[string]struct{}{}, expectKey: true})
		case '[':
			if len(stack) > 0 && stack[len(stack)-1].names != nil {
				stack[len(stack)-1].expectKey = true
			}
			stack = append(stack, frame{})
		case ']':
			stack = stack[:len(stack)-1]
		default: // a scalar value (an object's '}' is handled above)
			if len(stack) > 0 && stack[len(stack)-1].names != nil {
				stack[len(stack)-1].expectKey = true
			}
		}
		if len(stack) == 0 && dec.More() {
			return errors.New("data after the top-level value")
		}
	}
}
