package transport

import (
	"net/http"
	"testing"
)

// TestAttackEchoableAllocatesOnTheCommonPath: the request-word scan of an
// ordinary request (an ASCII body without % or \, the headers every traced
// request carries) must allocate nothing. Each header value is copied to
// a []byte for the scan (echoable's named([]byte(v))): a traceparent (55
// bytes) passes the compiler's 32-byte stack buffer and is copied to the
// heap on every request.
func TestAttackEchoableAllocatesOnTheCommonPath(t *testing.T) {
	body := []byte(`{"clientId":"shop","resources":[{"name":"orders","scopes":["read"]}]}`)
	header := http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json"},
		"Traceparent":  {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"Tracestate":   {"vendor1=opaquevalue1,vendor2=opaquevalue2,vendor3=opaquevalue3"},
	}
	if echoable(body, header) {
		t.Fatal("an ordinary request names no word")
	}
	if n := testing.AllocsPerRun(100, func() { _ = echoable(body, header) }); n != 0 {
		t.Errorf("echoable allocates %v times for an ordinary traced request; want 0", n)
	}
}
