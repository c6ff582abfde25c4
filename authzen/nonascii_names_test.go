package authzen_test

import (
	"testing"
)

// TestEvaluateTakesNonASCIIContextAndExtensionNames: valid PDP answers with
// non-ASCII text grant. A context's keys are data; an extension member the
// client does not read, whose name is not ASCII, is valid AuthZEN (unknown
// members are ignored): only a name holding a letter some reader takes for
// ASCII letters (ı, ſ, ß) could name a known member, and only such a name
// is refused.
func TestEvaluateTakesNonASCIIContextAndExtensionNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body string }{
		{"non-ASCII context keys", `{"decision":true,"context":{"raison":"accès","région":"eu","Région":"EU","ſtatus":"x"}}`},
		{"escaped non-ASCII context key", `{"decision":true,"context":{"r\u00e9gion":"eu"}}`},
		{"non-ASCII value in an unread member", `{"decision":true,"reason":"accès accordé"}`},
		{"unread extension member with a non-ASCII name", `{"decision":true,"raison_accès":"ok"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := standIn(t, answer(200, tc.body))
			d, err := c.Evaluate(t.Context(), req)
			if err != nil || !d.Allowed() {
				t.Errorf("valid grant refused: err=%v cause=%v", err, d.Cause)
			}
		})
	}
}
