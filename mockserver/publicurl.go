package mockserver

import (
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// The public URL of a request is what a client addressed: the issuer of the
// tokens it is given and the htu its DPoP proofs must name. It is fixed by
// WithIssuer; otherwise it is the request's own scheme and Host, or, for a
// request that comes from a trusted reverse proxy (WithTrustedProxies),
// what the proxy's forwarding headers say. Headers from any other peer are
// never read: a client could otherwise choose the issuer its tokens are
// checked against.

// hostChecked refuses, with a 400 naming Host, a request whose Host is not
// a host[:port] of at most 255 bytes (validHost, the rule forwarded hosts
// are held to) when the server has no issuer: the Host then becomes the
// issuer of the tokens it mints and the key of what it remembers of them
// (the verified-token caches), so it is bounded before anything keeps it
// (a-server10b). With WithIssuer the Host is never read.
func (s *Server) hostChecked(h http.Handler) http.Handler {
	if s.issuer != "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusedHost(r) {
			const msg = "must be a host name, an IPv4 address or a bracketed IPv6 address, with an optional port, of at most 255 bytes (without -issuer it names the tokens' issuer)"
			// The OAuth endpoints' own error body, chosen by the path as
			// the router reads it (escaped).
			if strings.Contains(r.URL.EscapedPath(), "/protocol/openid-connect/") {
				s.writeOAuthError(w, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "Host " + msg})
				return
			}
			s.writeErr(w, badField("Host", msg))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// refusedHost reports whether hostChecked refuses r's Host (without an
// issuer). An HTTP/1.0 request may name no host (a load balancer's health
// check): it names no issuer either, as before the rule.
func refusedHost(r *http.Request) bool {
	return !(r.Host == "" && !r.ProtoAtLeast(1, 1)) && !validHost(r.Host)
}

// issuerBase is the public base URL of the server for r.
func (s *Server) issuerBase(r *http.Request) string {
	if s.issuer != "" {
		return s.issuer
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if s.fromTrustedProxy(r) {
		scheme, host = forwardedOrigin(r.Header, scheme, host)
	}
	return scheme + "://" + host
}

// publicURL returns the absolute public URL of path, an escaped path of
// this server ("/admin/tenants/..."), for r: what a Location names. The
// request's path alone would drop a path prefix of the issuer
// ("https://idp.example/auth"), under which a proxy serves the server.
func (s *Server) publicURL(r *http.Request, path string) string {
	return s.issuerBase(r) + path
}

// fromTrustedProxy reports whether r's peer is one of the trusted proxies.
func (s *Server) fromTrustedProxy(r *http.Request) bool {
	if len(s.proxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range s.proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// forwardedOrigin returns the scheme and host the forwarding headers give,
// each falling back to the one given: X-Forwarded-Proto, X-Forwarded-Host
// (with X-Forwarded-Port when the host has no port), else the proto and
// host of the last element of Forwarded. Values that are not an http(s)
// scheme or a host[:port] are ignored.
func forwardedOrigin(h http.Header, scheme, host string) (string, string) {
	fwd := lastForwarded(h.Values("Forwarded"))
	if p := ascii.Lower(lastValue(h.Values("X-Forwarded-Proto"))); p == "http" || p == "https" {
		scheme = p
	} else if p := ascii.Lower(fwd["proto"]); p == "http" || p == "https" {
		scheme = p
	}
	if hv := lastValue(h.Values("X-Forwarded-Host")); validHost(hv) {
		host = hv
		if port := lastValue(h.Values("X-Forwarded-Port")); !hasPort(host) && validPort(port) {
			host += ":" + port
		}
	} else if hv := fwd["host"]; validHost(hv) {
		host = hv
	}
	return scheme, dropDefaultPort(scheme, host)
}

// lastValue returns the last entry of a comma-separated header that may
// have several fields.
func lastValue(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	last := fields[len(fields)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.TrimSpace(last)
}

// lastForwarded parses the last element of a Forwarded header (RFC 7239
// section 4) into its lower-cased parameter names and unquoted values.
func lastForwarded(fields []string) map[string]string {
	out := map[string]string{}
	if len(fields) == 0 {
		return out
	}
	elems := splitOutsideQuotes(fields[len(fields)-1], ',')
	for _, pair := range splitOutsideQuotes(elems[len(elems)-1], ';') {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
			v = uq
		}
		out[ascii.Lower(k)] = v
	}
	return out
}

// splitOutsideQuotes splits s at sep where sep is not inside a quoted
// string.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// hostPattern is a host name (letters, digits, '.', '-', and '_' as
// container and compose service names have it), an IPv4 address or a
// bracketed IPv6 address, with an optional port.
var hostPattern = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?$`)

// validHost reports whether h is a host[:port] (hostPattern) of at most
// 255 bytes: the rule of every host the server takes from a request.
func validHost(h string) bool { return h != "" && len(h) <= 255 && hostPattern.MatchString(h) }

func hasPort(host string) bool {
	i := strings.LastIndexByte(host, ':')
	return i >= 0 && !strings.Contains(host[i:], "]")
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == p
}

// dropDefaultPort removes :80 from an http host and :443 from an https one,
// as clients write their URLs.
func dropDefaultPort(scheme, host string) string {
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	}
	return host
}

// parseProxies parses WithTrustedProxies' entries: addresses become
// single-address networks.
func parseProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range list {
		for _, item := range strings.Split(e, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			if p, err := netip.ParsePrefix(item); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("mockserver: WithTrustedProxies: %q is neither an address nor a network", item)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}
