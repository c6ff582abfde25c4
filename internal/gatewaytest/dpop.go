package gatewaytest

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/orgauthz/orgauthz/dpop"
)

// RotatingNonces is a dpop.NonceSource that accepts only its current
// nonce, as every nonce source does once its nonce goes stale; Rotate
// moves it to the next.
type RotatingNonces struct{ cur atomic.Int64 }

// Valid reports whether n is the current nonce.
func (r *RotatingNonces) Valid(_ context.Context, n string) bool { return n == r.current() }

// Next returns the current nonce.
func (r *RotatingNonces) Next(context.Context) (string, error) { return r.current(), nil }

// Rotate makes the next nonce current; the one before is refused from then on.
func (r *RotatingNonces) Rotate() { r.cur.Add(1) }

func (r *RotatingNonces) current() string { return "n" + strconv.FormatInt(r.cur.Load(), 10) }

// Verifying is a gateway that checks each request's DPoP proof with v, for
// a token bound to the key of thumbprint jkt (any access token the request
// carries after "DPoP "), at the URL the request was sent to. A proof v
// refuses for its nonce is answered as RFC 9449 section 8 says: 401, v's
// challenge, the DPoP-Nonce header and the body {"error":"use_dpop_nonce"};
// any other refusal is a 401 with v's challenge; a proof that passes is
// answered 200 with answer, a JSON body.
func Verifying(v *dpop.Verifier, jkt, answer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, err := v.Verify(r.Context(), dpop.Request{Proofs: r.Header.Values("DPoP"), Method: r.Method,
			URL: "http://" + r.Host + r.URL.Path, AccessToken: strings.TrimPrefix(r.Header.Get("Authorization"), "DPoP "), JKT: jkt})
		if err != nil {
			w.Header().Set("WWW-Authenticate", v.Challenge(err))
			var ne *dpop.NonceError
			if !errors.As(err, &ne) {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("DPoP-Nonce", ne.Nonce)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"use_dpop_nonce"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}
}
