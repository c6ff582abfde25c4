package openapitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

const testDoc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/things": {
      "post": {
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
          "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "note": {"type": ["string", "null"]}}}}}},
        "responses": {
          "201": {"description": "created", "headers": {"Location": {"required": true, "schema": {"type": "string"}}},
                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "400": {"description": "bad", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      }
    }
  },
  "components": {"schemas": {
    "Thing": {"type": "object", "required": ["id"], "additionalProperties": false, "properties": {"id": {"type": "string"}, "kind": {"const": "thing"}}},
    "Error": {"type": "object", "required": ["error", "message"], "properties": {"error": {"type": "string"}, "message": {"type": "string"}}}
  }}
}`

// TestCheckerCatchesDrift: each kind of mismatch between the server and
// its document is recorded, and a matching exchange is not.
func TestCheckerCatchesDrift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, contentType, body string
		status                                int
		header                                http.Header
		answer                                string
		bad                                   bool
	}{
		{"matching", "POST", "/things", "application/json", `{"name":"a","note":null}`, 201, http.Header{"Location": {"/things/1"}}, `{"id":"1","kind":"thing"}`, false},
		{"undocumented status", "POST", "/things", "application/json", `{"name":"a"}`, 200, nil, `{"id":"1"}`, true},
		{"extra member in the answer", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1","other":2}`, true},
		{"wrong type in the answer", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":1}`, true},
		{"two JSON values in the answer", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1"} {"id":"2"}`, true},
		// Answers every client of the module (internal/strictjson) refuses:
		// the checker reads with the same rule, or a server bug emitting them
		// would pass the document check and break every client.
		{"member given twice in the answer, the first of the wrong type", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":2,"id":"1"}`, true},
		{"member given twice in the answer, both strings", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1","id":"2"}`, true},
		{"invalid UTF-8 in the answer", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, "{\"id\":\"1\xff\"}", true},
		{"lone surrogate in the answer", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"\ud800"}`, true},
		{"member given twice in the error body", "GET", "/nowhere", "", "", 404, nil, `{"error":"Not Found","message":"a","message":"b"}`, true},
		{"request with a member given twice accepted", "POST", "/things", "application/json", `{"name":"a","name":"b"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1"}`, true},
		{"const broken", "POST", "/things", "application/json", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1","kind":"other"}`, true},
		{"required header missing", "POST", "/things", "application/json", `{"name":"a"}`, 201, nil, `{"id":"1"}`, true},
		{"refused request accepted", "POST", "/things", "application/json", `{"note":"no name"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1"}`, true},
		{"refused request refused", "POST", "/things", "application/json", `{"note":"no name"}`, 400, nil, `{"error":"Bad Request","message":"name"}`, false},
		{"wrong content type accepted", "POST", "/things", "text/plain", `{"name":"a"}`, 201, http.Header{"Location": {"/x"}}, `{"id":"1"}`, true},
		{"unknown path, 404 error body", "GET", "/nowhere", "", "", 404, nil, `{"error":"Not Found","message":"no route"}`, false},
		{"unknown path answered", "GET", "/nowhere", "", "", 200, nil, `{}`, true},
		{"unknown path, not the error shape", "GET", "/nowhere", "", "", 404, nil, `not json`, true},
		{"other method, 405 with Allow", "GET", "/things", "", "", 405, http.Header{"Allow": {"POST"}}, `{"error":"Method Not Allowed","message":"m"}`, false},
		{"405 without Allow", "GET", "/things", "", "", 405, nil, `{"error":"Method Not Allowed","message":"m"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			chk := testkit.Must(New([]byte(testDoc)))(t)
			h := chk.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ := io.ReadAll(r.Body)
				require.Equal(t, tt.body, string(got), "the handler reads the body the client sent")
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.answer)
			}))
			req := httptest.NewRequest(tt.method, "http://t.test"+tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tt.status, rec.Code, "the answer passes through")
			require.Equal(t, tt.answer, rec.Body.String())
			require.Equal(t, 1, chk.Checked())
			if tt.bad {
				require.Error(t, chk.Err())
			} else {
				require.NoError(t, chk.Err())
			}
		})
	}
}

// TestMiddlewareTakesANilBody: a request built with http.NewRequest and no
// body, as tests hand straight to a handler, is checked like an empty one
// instead of crashing the middleware.
func TestMiddlewareTakesANilBody(t *testing.T) {
	t.Parallel()
	chk := testkit.Must(New([]byte(testDoc)))(t)
	h := chk.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := testkit.Must(io.ReadAll(r.Body))(t)
		require.Empty(t, got)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"Not Found","message":"no route"}`)
	}))
	req := testkit.Must(http.NewRequest(http.MethodGet, "http://t.test/nowhere", nil))(t)
	require.Nil(t, req.Body)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Equal(t, 1, chk.Checked())
	require.NoError(t, chk.Err())
}

// TestTransport checks a client's exchanges the same way.
func TestTransport(t *testing.T) {
	t.Parallel()
	chk := testkit.Must(New([]byte(testDoc)))(t)
	srv := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"Not Found","message":"x"}`)
	}))
	client := &http.Client{Transport: chk.Transport(srv.Client().Transport)}
	resp := testkit.Must(client.Get(srv.URL + "/nowhere"))(t)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"error":"Not Found","message":"x"}`, string(b))
	require.NoError(t, chk.Err())
	resp = testkit.Must(client.Post(srv.URL+"/things", "application/json", strings.NewReader(`{"name":"a"}`)))(t)
	resp.Body.Close()
	require.Error(t, chk.Err(), "404 is not documented for POST /things")
}

func TestNewRefusesOtherVersions(t *testing.T) {
	t.Parallel()
	_, err := New([]byte(strings.Replace(testDoc, `"3.1.0"`, `"3.0.3"`, 1)))
	require.Error(t, err)
	_, err = New([]byte(`{"openapi":"3.1.0"`))
	require.Error(t, err)
}

// TestTemplatedRouteForAnotherMethod: a request whose concrete path lacks
// its method is checked against the templated path that has it, as Go's
// ServeMux routes it (GET /things/batch -> GET /things/{id}).
func TestTemplatedRouteForAnotherMethod(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(testDoc, `"paths": {`, `"paths": {
    "/things/batch": {"post": {"responses": {"204": {"description": "done"}}}},
    "/things/{id}": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {"responses": {"404": {"description": "nf", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}}},`, 1)
	chk := testkit.Must(New([]byte(doc)))(t)
	req := httptest.NewRequest(http.MethodGet, "/things/batch", nil)
	require.NoError(t, chk.Check(req, 404, http.Header{"Content-Type": {"application/json"}}, []byte(`{"error":"Not Found","message":"no thing batch"}`)))
	require.Error(t, chk.Check(req, 200, http.Header{"Content-Type": {"application/json"}}, []byte(`{}`)), "200 is not documented for GET /things/{id}")
	del := httptest.NewRequest(http.MethodDelete, "/things/batch", nil)
	require.Error(t, chk.Check(del, 401, nil, nil), "no path has DELETE: only 404 or 405 will do")
	head := httptest.NewRequest(http.MethodHead, "/things/x", nil)
	require.NoError(t, chk.Check(head, 404, http.Header{"Content-Type": {"application/json"}}, nil), "HEAD is checked as GET, without a body")
}

// TestParametersAndForms: a parameter is read as its schema's type, a
// urlencoded form as an object of its schema's member types, and a status
// range ("4XX") documents every status in it.
func TestParametersAndForms(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(testDoc, `"paths": {`, `"paths": {
    "/list": {"get": {
      "parameters": [
        {"name": "max", "in": "query", "schema": {"type": "integer", "minimum": 1}},
        {"name": "brief", "in": "query", "schema": {"type": "boolean"}},
        {"name": "X-Tenant", "in": "header", "required": true, "schema": {"type": "string", "minLength": 2}}],
      "responses": {"200": {"description": "ok"},
        "4XX": {"description": "refused", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}}},
    "/token": {"post": {
      "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {
        "type": "object", "required": ["grant_type"], "properties": {"grant_type": {"enum": ["password"]}, "n": {"type": "integer"}}}}}},
      "responses": {"200": {"description": "ok"}, "400": {"description": "bad", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}}},`, 1)
	chk := testkit.Must(New([]byte(doc)))(t)
	errBody := []byte(`{"error":"Bad Request","message":"m"}`)
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name, method, target, contentType, body string
		header                                  http.Header
		status                                  int
		bad                                     bool
	}{
		{"parameters as declared", "GET", "/list?max=3&brief=true", "", "", http.Header{"X-Tenant": {"ab"}}, 200, false},
		{"integer parameter not a number, accepted", "GET", "/list?max=three", "", "", http.Header{"X-Tenant": {"ab"}}, 200, true},
		{"integer parameter below its minimum, accepted", "GET", "/list?max=0", "", "", http.Header{"X-Tenant": {"ab"}}, 200, true},
		{"empty integer parameter, accepted", "GET", "/list?max=", "", "", http.Header{"X-Tenant": {"ab"}}, 200, true},
		{"boolean parameter not a boolean, accepted", "GET", "/list?brief=maybe", "", "", http.Header{"X-Tenant": {"ab"}}, 200, true},
		{"required header missing, accepted", "GET", "/list", "", "", nil, 200, true},
		{"header too short, accepted", "GET", "/list", "", "", http.Header{"X-Tenant": {"a"}}, 200, true},
		{"refused request refused with a status of the range", "GET", "/list?max=0", "", "", nil, 422, false},
		{"form as declared", "POST", "/token", "application/x-www-form-urlencoded", "grant_type=password&n=2", nil, 200, false},
		{"form member outside its enum, accepted", "POST", "/token", "application/x-www-form-urlencoded", "grant_type=code", nil, 200, true},
		{"form member of the wrong type, accepted", "POST", "/token", "application/x-www-form-urlencoded", "grant_type=password&n=x", nil, 200, true},
		{"form missing, accepted", "POST", "/token", "application/x-www-form-urlencoded", "", nil, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header[k] = v
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			header, body := http.Header(nil), []byte(nil)
			if tt.status >= 400 {
				header, body = jsonHeader, errBody
			}
			err := chk.Check(req, tt.status, header, body)
			if tt.bad {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}
