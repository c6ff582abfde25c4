package openapitest

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// schemaDoc answers GET /probe with a Probe, a schema that uses every
// keyword of mockserver/openapi.json.
const schemaDoc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {"/probe": {"get": {"responses": {
    "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Probe"}}}}}}}},
  "components": {"schemas": {
    "Error": {"type": "object", "required": ["error", "message"], "properties": {"error": {"type": "string"}, "message": {"type": "string"}}},
    "Subject": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
    "Probe": {
      "type": "object", "required": ["id", "kind"], "additionalProperties": false,
      "properties": {
        "id": {"type": "string", "pattern": "^[a-z]+$"},
        "name": {"type": "string", "minLength": 2},
        "kind": {"const": "probe"},
        "status": {"type": "string", "enum": ["ALLOW", "DENY"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "grants": {"type": "array", "items": {"type": "string"}},
        "at": {"type": "string", "format": "date-time"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "subject": {"anyOf": [{"$ref": "#/components/schemas/Subject"}, {"type": "null"}]},
        "note": {"type": ["string", "null"], "description": "free text"}
      },
      "if": {"properties": {"grants": {"maxItems": 0}}},
      "then": {"properties": {"status": {"const": "DENY"}}}
    }
  }}
}`

// TestSchemaKeywords: an answer that breaks any one keyword of its schema
// is a failure that names the member (as a JSON pointer) and the keyword,
// and an answer that keeps them all is not.
func TestSchemaKeywords(t *testing.T) {
	t.Parallel()
	chk, err := New([]byte(schemaDoc))
	require.NoError(t, err)
	valid := map[string]any{
		"id": "ab", "name": "Ab", "kind": "probe", "status": "ALLOW", "count": 3, "ratio": 0.5,
		"tags": []string{"a"}, "grants": []string{"g"}, "at": "2026-11-27T11:00:00.5+01:00",
		"labels": map[string]string{"a": "b"}, "subject": map[string]string{"id": "s"}, "note": nil,
	}
	tests := []struct {
		name   string
		change map[string]any // members to set; a nil json.RawMessage deletes one
		want   []string       // in the failure; none: the answer matches
	}{
		{"every keyword kept", nil, nil},
		{"optional members absent", map[string]any{"name": del, "status": del, "count": del, "ratio": del, "tags": del, "at": del, "labels": del, "subject": del, "note": del}, nil},
		{"an integer written with a zero fraction", map[string]any{"count": json.RawMessage(`3.0`)}, nil},
		{"a null in a type list", map[string]any{"note": nil, "subject": nil}, nil},
		{"lower-case t and z in a date-time", map[string]any{"at": "2026-11-27t11:00:00z"}, nil},
		{"no grants, DENY", map[string]any{"grants": []string{}, "status": "DENY"}, nil},
		{"required member missing", map[string]any{"id": del}, []string{`at "": required: member "id" is missing`}},
		{"wrong type", map[string]any{"count": "3"}, []string{`at "/count": type: string is not integer`}},
		{"a fraction where an integer is due", map[string]any{"count": 2.5}, []string{`at "/count": type`}},
		{"none of a type list", map[string]any{"note": 3}, []string{`at "/note": type: number is not string or null`}},
		{"extra member, additionalProperties false", map[string]any{"other": 1}, []string{`at "": additionalProperties: member "other" is not allowed`}},
		{"member breaks additionalProperties' schema", map[string]any{"labels": map[string]any{"a/b": 1}}, []string{`at "/labels/a~1b": type`}},
		{"enum miss", map[string]any{"status": "MAYBE"}, []string{`at "/status": enum`}},
		{"const miss", map[string]any{"kind": "other"}, []string{`at "/kind": const`}},
		{"below minimum", map[string]any{"count": 0}, []string{`at "/count": minimum`}},
		{"above maximum", map[string]any{"count": 11}, []string{`at "/count": maximum`}},
		{"minLength counts characters, not bytes", map[string]any{"name": "é"}, []string{`at "/name": minLength`}},
		{"pattern miss", map[string]any{"id": "AB"}, []string{`at "/id": pattern`}},
		{"too few items", map[string]any{"tags": []string{}}, []string{`at "/tags": minItems`}},
		{"too many items", map[string]any{"tags": []string{"a", "b", "c"}}, []string{`at "/tags": maxItems`}},
		{"an item breaks items", map[string]any{"tags": []any{"a", 1}}, []string{`at "/tags/1": type`}},
		{"not a date-time", map[string]any{"at": "yesterday"}, []string{`at "/at": format`}},
		{"a date-time out of range", map[string]any{"at": "2026-13-01T00:00:00Z"}, []string{`at "/at": format`}},
		{"anyOf, no branch matches", map[string]any{"subject": map[string]any{"id": 1}}, []string{`at "/subject": anyOf`, `at "/subject/id": type`, `at "/subject": type: object is not null`}},
		{"if matches, then broken", map[string]any{"grants": []string{}}, []string{`at "": then`, `at "/status": const`}},
		{"every failure is named", map[string]any{"count": 0, "kind": "other"}, []string{`at "/count": minimum`, `at "/kind": const`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := maps.Clone(valid)
			for k, v := range tt.change {
				if raw, ok := v.(json.RawMessage); ok && raw == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			b, err := json.Marshal(body)
			require.NoError(t, err)
			err = chk.Check(httptest.NewRequest(http.MethodGet, "/probe", nil), 200, http.Header{"Content-Type": {"application/json"}}, b)
			if len(tt.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// del, as a change, deletes the member.
var del json.RawMessage

// TestNewRefusesUncheckedKeywords: a schema keyword the validator does not
// check, anywhere in the document, fails the load, naming the keyword and
// where it is, so that no edit to the document leaves part of it unchecked.
func TestNewRefusesUncheckedKeywords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"an unknown keyword", `"note": {"type": ["string", "null"], `, `"note": {"maxLength": 3, `,
			`schema /components/schemas/Probe/properties/note: keyword "maxLength"`},
		{"an OpenAPI annotation with meaning", `"ratio": {"type": "number"}`, `"ratio": {"type": "number", "readOnly": true}`,
			`schema /components/schemas/Probe/properties/ratio: keyword "readOnly"`},
		{"in a schema no operation uses", `"Subject": {"type": "object", `, `"Subject": {"type": "object", "minProperties": 1, `,
			`schema /components/schemas/Subject: keyword "minProperties"`},
		{"in an items schema", `"items": {"type": "string"}, "minItems"`, `"items": {"type": "string", "uniqueItems": true}, "minItems"`,
			`schema /components/schemas/Probe/properties/tags/items: keyword "uniqueItems"`},
		{"in an operation's own schema", `{"$ref": "#/components/schemas/Probe"}`, `{"$ref": "#/components/schemas/Probe", "unevaluatedProperties": false}`,
			`schema /paths/~1probe/get/responses/200/content/application~1json/schema: keyword "unevaluatedProperties"`},
		{"a format not checked", `"format": "date-time"`, `"format": "uri"`, `keyword "format": format uri is not checked`},
		{"a remote $ref", `{"$ref": "#/components/schemas/Subject"}`, `{"$ref": "https://example.com/subject.json"}`, `keyword "$ref"`},
		{"a $ref to nothing", `{"$ref": "#/components/schemas/Subject"}`, `{"$ref": "#/components/schemas/Nobody"}`, `/components/schemas/Nobody is not a schema`},
		{"then without if", `"if": {"properties": {"grants": {"maxItems": 0}}},`, ``, `keyword "then": then without if`},
		{"a type that is none", `"ratio": {"type": "number"}`, `"ratio": {"type": "float"}`, `keyword "type"`},
		{"a bound that is not a number", `"minimum": 1,`, `"minimum": "1",`, `keyword "minimum"`},
		{"a pattern that does not compile", `"pattern": "^[a-z]+$"`, `"pattern": "("`, `keyword "pattern"`},
		{"required not a list", `"required": ["id"]`, `"required": "id"`, `schema /components/schemas/Subject: keyword "required"`},
		{"a pattern that is not a string", `"pattern": "^[a-z]+$"`, `"pattern": 5`, `keyword "pattern": not a string`},
		{"a pattern that is null", `"pattern": "^[a-z]+$"`, `"pattern": null`, `keyword "pattern": not a string`},
		{"a $ref that is not a string", `{"$ref": "#/components/schemas/Subject"}`, `{"$ref": 5}`, `keyword "$ref"`},
		{"properties not an object", `"properties": {"id": {"type": "string"}}`, `"properties": ["id"]`, `schema /components/schemas/Subject: keyword "properties"`},
		{"items not a schema", `"items": {"type": "string"}, "minItems"`, `"items": "string", "minItems"`, `keyword "items"`},
		{"additionalProperties not a schema", `"additionalProperties": {"type": "string"}`, `"additionalProperties": "string"`, `keyword "additionalProperties"`},
		{"a length that is not a number", `"minLength": 2`, `"minLength": "2"`, `keyword "minLength"`},
		{"enum not a list", `"enum": ["ALLOW", "DENY"]`, `"enum": "ALLOW"`, `keyword "enum"`},
		{"anyOf empty", `"anyOf": [{"$ref": "#/components/schemas/Subject"}, {"type": "null"}]`, `"anyOf": []`, `keyword "anyOf"`},
		{"format not a string", `"format": "date-time"`, `"format": 5`, `keyword "format"`},
		{"if not a schema", `"if": {"properties": {"grants": {"maxItems": 0}}},`, `"if": 5,`, `keyword "if"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, schemaDoc, tt.old)
			_, err := New([]byte(strings.Replace(schemaDoc, tt.old, tt.new, 1)))
			require.ErrorContains(t, err, tt.want)
		})
	}
}
