package transport

import (
	"encoding/binary"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestAUTF16BodyWithinMaxBodyIsSeen: MaxBody is judged on the bytes as
// they came, not on their UTF-8 re-encoding (a-fix17 F6).
func TestAUTF16BodyWithinMaxBodyIsSeen(t *testing.T) {
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
