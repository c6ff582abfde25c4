package mockserver

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestAnHTTP10RequestWithoutHostIsServed (a-last10b): an HTTP/1.0 request
// carries no Host (RFC 1945 has none; HAProxy's default `option httpchk`
// and other load balancers' probes send exactly that). Before h-srvmem10
// the Host-independent endpoints (JWKS, openapi.json) answered it; now
// hostChecked refuses every route with 400 before routing, so a pool
// whose health check reads the JWKS marks every replica down.
func TestAnHTTP10RequestWithoutHostIsServed(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	s := mustNew(t, WithFixture(authFixture()), WithAdminSecret("boot"))
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(ts.Close)
	for _, path := range []string{"/realms/acme/protocol/openid-connect/certs", "/openapi.json"} {
		t.Run(path, func(t *testing.T) {
			c := testkit.Must(net.DialTimeout("tcp", ts.Listener.Addr().String(), 5*time.Second))(t)
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			testkit.Must(c.Write([]byte("GET " + path + " HTTP/1.0\r\n\r\n")))(t)
			resp := testkit.Must(http.ReadResponse(bufio.NewReader(c), nil))(t)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "an HTTP/1.0 request without Host is refused at %s", path)
		})
	}
}
