package transport

import (
	"net/http"
	"testing"
)

// TestEchoableAllocatesNothingOnTheCommonPath: reading a traced
// request's words (a JSON body, traceparent and tracestate headers)
// allocates nothing (a-fix17c F3: each long header value was copied).
func TestEchoableAllocatesNothingOnTheCommonPath(t *testing.T) {
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
