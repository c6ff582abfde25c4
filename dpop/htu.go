package dpop

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// HTU returns the normalised form of rawURL used as a proof's "htu" claim and
// compared by [Verifier.Verify] (RFC 9449 section 4.3 asks for the syntax- and
// scheme-based normalisation of RFC 3986 sections 6.2.2 and 6.2.3):
//
//   - the URL must be absolute with scheme http or https and a host;
//   - scheme and host are lowercased in ASCII, user information is dropped;
//     a host must be ASCII (an internationalised name in its A-label form,
//     xn--...): Unicode case mapping would make another host's name equal
//     to this one ("İnternal.example" lowercases to "internal.example", but
//     is the host xn--internal-o0e.example on the wire);
//   - the default port (80 for http, 443 for https) and an empty port are dropped;
//   - percent-encodings in the path use upper-case hex digits, and those of
//     unreserved characters are decoded;
//   - "." and ".." path segments are removed, and an empty path becomes "/";
//   - the query and the fragment are removed.
//
// HTU is idempotent: HTU(HTU(u)) == HTU(u). A client and a server that both
// normalise with HTU compute the same value. For a URL it cannot normalise, it
// returns an error wrapping [ErrURL]; the error does not repeat the URL, which
// might carry secrets in its query.
func HTU(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("%w: unparsable url", ErrURL)
	}
	scheme := ascii.Lower(u.Scheme)
	var defaultPort string
	switch scheme {
	case "https":
		defaultPort = "443"
	case "http":
		defaultPort = "80"
	default:
		return "", fmt.Errorf("%w: url is not an absolute http or https url", ErrURL)
	}
	if u.Opaque != "" || u.Host == "" {
		return "", fmt.Errorf("%w: url has no host", ErrURL)
	}
	host := ascii.Lower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%w: url has no host", ErrURL)
	}
	if !ascii.Is(host) {
		return "", fmt.Errorf("%w: url host is not ASCII; give an internationalised name in its A-label form (xn--...)", ErrURL)
	}
	port := u.Port()
	if port == defaultPort {
		port = ""
	}
	if strings.Contains(host, "%") {
		return "", fmt.Errorf("%w: url host has a zone or an escape", ErrURL)
	}
	if strings.Contains(host, ":") { // only a bracketed IPv6 literal may hold colons
		if !strings.HasPrefix(u.Host, "[") || net.ParseIP(host) == nil {
			return "", fmt.Errorf("%w: url has an invalid host", ErrURL)
		}
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}

	path := removeDotSegments(normalizePercent(u.EscapedPath()))
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, nil
}

// normalizePercent upper-cases the hex digits of percent-encodings and decodes
// those of unreserved characters (RFC 3986 section 6.2.2.2). Its input comes
// from url.URL.EscapedPath, so every '%' starts a valid encoding.
func normalizePercent(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' || i+2 >= len(p) || !ascii.IsHex(p[i+1]) || !ascii.IsHex(p[i+2]) {
			b.WriteByte(c)
			continue
		}
		v := ascii.Unhex(p[i+1])<<4 | ascii.Unhex(p[i+2])
		if isUnreserved(v) {
			b.WriteByte(v)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex[v>>4])
			b.WriteByte(upperHex[v&0xf])
		}
		i += 2
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments implements RFC 3986 section 5.2.4 for an absolute path.
func removeDotSegments(in string) string {
	if !strings.Contains(in, ".") {
		return in
	}
	var out []string // output segments, each with its leading "/"
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "/..":
			in = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "." || in == "..":
			in = ""
		default:
			// Move the first segment (with its leading "/", if any) to out.
			end := strings.IndexByte(in[1:], '/')
			if end < 0 {
				out = append(out, in)
				in = ""
			} else {
				out = append(out, in[:end+1])
				in = in[end+1:]
			}
		}
	}
	return strings.Join(out, "")
}

// TokenHash returns the "ath" value for an access token: the base64url
// encoding (no padding) of the SHA-256 hash of the token (RFC 9449 section
// 4.2). Signer and Verifier both use it; it is exported for servers that
// compare hashes themselves.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
