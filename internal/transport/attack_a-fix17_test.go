package transport

import (
	"encoding/binary"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestAttackUTF16BodyWithinMaxBodyReadAsUnseen: MaxBody is to be judged on
// the bytes as they came (readAnswer's past), but readBody judges it again
// on the UTF-8 re-encoding, which is up to half as long again as UTF-16
// text outside Latin (3 bytes for 2). A DPoP 401 that blames the proof (or
// asks a nonce), in a UTF-16 body of 1 MiB or less whose text re-encodes
// past MaxBody, is read as a body whose end was never seen (unseen), which
// refuses the token: a valid token is retired for its proof's fault.
func TestAttackUTF16BodyWithinMaxBodyReadAsUnseen(t *testing.T) {
	t.Parallel()
	text := `{"error":"invalid_dpop_proof","message":"` + strings.Repeat("証", 400_000) + `"}`
	body := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(text)) {
		body = binary.LittleEndian.AppendUint16(body, u)
	}
	if len(body) > MaxBody {
		t.Fatalf("the body as it came is %d bytes, past MaxBody", len(body))
	}
	for _, challenge := range []string{`DPoP error="invalid_dpop_proof"`, `DPoP error="use_dpop_nonce"`} {
		r := readAnswer(http.StatusUnauthorized, challenge, body, false)
		if r.unseen {
			t.Errorf("%s: a body of %d bytes (MaxBody %d) came whole, yet it is read as unseen", challenge, len(body), MaxBody)
		}
		if r.refuses(http.StatusUnauthorized, SchemeDPoP) {
			t.Errorf("%s: a 401 blaming the proof, its body read whole, refuses the token", challenge)
		}
	}
}
