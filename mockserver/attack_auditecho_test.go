package mockserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackAuditRecordHoldsNoSecret (a-server14 F2): every refused admin
// call is audited with the id it named, taken from the path (deleteOne,
// the update handlers) or the body (an assignment's userId) before
// anything checks it, and the audit keeps a value of up to 64 bytes whole
// (store.auditKeep), a longer one as its first 32 bytes and its SHA-256.
// The error writers' rule (echo.go) is the opposite, for the reason the
// a-server13 and a-fix13c findings gave: a caller that sends a credential in
// the wrong place -- a client secret, a user's password, an authorization
// code, all of an identifier's shape and at most 43 bytes -- must not see
// it repeated, and neither its first bytes nor a digest of it (a
// low-entropy password is guessed back from one). Here the credential is
// not even repeated to its sender: it is stored, and answered by GET
// /admin/audit to the platform's operators, another party than the
// tenant's admin who sent it. What should hold: an audit entry keeps a
// caller's id only when the server knows it (an id it assigned, a name it
// publishes), and describes any other by its length.
func TestAttackAuditRecordHoldsNoSecret(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	dept := a.createDept(org, "", "Sales", "sales")
	platform := a.token("master", "service-account-platform-admin")

	// The tenant's secrets a realm admin holds: the confidential client's
	// secret of the fixture, a user's password, an authorization code.
	secrets := map[string]string{
		"client secret":        "Xq7_vLm2-RtZ9pWk4sNb8cJd3HfQ2mZa", // 32 bytes, as randomSecret(24)
		"password (24 bytes)":  "Kp4_wQ9-LmZ2tRb7VxN3sYcD",
		"authorization code":   "q3F8vZ2mK7pX1nL9cR4tY6wB0sD5hJ8aE2uG7iO3kM1", // 43 bytes
		"low-entropy password": "correct-horse-battery-staple-and-then-some-more-words-to-be-long-x", // > 64: cut and digested
	}
	for what, secret := range secrets {
		// The realm admin pastes the secret where an id goes.
		r := a.do(http.MethodDelete, "/"+url.PathEscape(secret), nil)
		require.Equal(t, http.StatusNotFound, r.Status, "%s: %s", what, r.Body)
		assert.NotContains(t, string(r.Body), secret, "%s: the 404 repeats it", what) // the error rule holds
		r = a.do(http.MethodPost, "/"+org+"/departments/"+dept+"/users", map[string]string{"userId": secret})
		require.GreaterOrEqual(t, r.Status, 400, "%s: %s", what, r.Body)
		assert.NotContains(t, string(r.Body), secret, "%s: the error repeats it", what)
	}
	audit := a.doAs(platform, http.MethodGet, a.url+"/admin/audit?count=100", nil)
	require.Equal(t, http.StatusOK, audit.Status, string(audit.Body))
	for what, secret := range secrets {
		assert.NotContains(t, string(audit.Body), secret, "%s: the audit record holds it whole", what)
		assert.NotContains(t, string(audit.Body), secret[:min(len(secret), 32)], "%s: the audit record holds its first 32 bytes", what)
	}
	if t.Failed() {
		i := strings.Index(string(audit.Body), "resourceId")
		t.Logf("audit: ...%s", string(audit.Body)[max(0, i-200):min(len(audit.Body), i+600)])
	}
}
