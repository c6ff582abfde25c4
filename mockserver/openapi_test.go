package mockserver

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenAPIDocumentsEveryRoute: the document's operations are exactly
// the server's routes, and GET /openapi.json serves the document.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r := a.sendRaw("", http.MethodGet, a.url+"/openapi.json", "", "")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, openAPIDocument, r.Body)
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)

	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var served []string
	for _, p := range a.s.patterns {
		p = strings.Replace(p, "{$}", "", 1) // ".../organizations/{$}" is the path with a trailing slash
		served = append(served, p)
	}
	slices.Sort(documented)
	slices.Sort(served)
	assert.Equal(t, served, documented)
}
