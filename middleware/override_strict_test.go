package middleware_test

// Multipart part headers Rack 3 (lib/rack/multipart/parser.rb,
// handle_mime_head) and PHP (main/rfc1867.c) read otherwise than
// mime/multipart, and Content-Types Rack reads as urlencoded: the strict
// guard (formGuard) leaves no way to make either stack take _method.

import (
	"io"
	"net/http"
	"regexp"
	"strings"
)

// The regexes of rack/lib/rack/multipart/parser.rb (FWS, HEADER_VALUE).
var (
	rackDisposition = regexp.MustCompile(`(?im)^Content-Disposition:(?:[ \t]+(?:\r\n[ \t]+)?)?((?:[^\r\n]|\r\n[ \t])*)`)
	rackContentID   = regexp.MustCompile(`(?im)^Content-ID:(?:[ \t]+(?:\r\n[ \t]+)?)?((?:[^\r\n]|\r\n[ \t])*)`)
)

// rackPartName ports Rack::Multipart::Parser#handle_mime_head's reading of
// a part's name from its head (the header lines, each ending "\r\n"):
// the Content-Disposition (at most 1536 bytes, 16 parameters) parsed by
// hand, param names lstrip'ed (Ruby: NUL, \t \n \v \f \r and space), the
// last name= wins; without a usable Content-Disposition, Content-ID.
func rackPartName(head string) string {
	var name string
	if m := rackDisposition.FindStringSubmatch(head); m != nil && len(m[1]) <= 1536 {
		disp := regexp.MustCompile(`\r\n([ \t])`).ReplaceAllString(m[1], "$1")
		if i := strings.IndexByte(disp, ';'); i >= 0 {
			disp = disp[i+1:]
		} else {
			disp = ""
		}
		for n := 0; ; {
			i := strings.IndexByte(disp, '=')
			if i < 0 {
				break
			}
			if n++; n > 16 {
				break
			}
			param := strings.TrimLeft(disp[:i], "\x00\t\n\v\f\r ")
			disp = disp[i+1:]
			var value string
			switch {
			case strings.HasPrefix(disp, `"`):
				disp = disp[1:]
				for {
					j := strings.IndexAny(disp, `"\`)
					if j < 0 {
						break
					}
					value += disp[:j]
					c := disp[j]
					disp = disp[j+1:]
					if c == '"' {
						break
					}
					if disp != "" {
						value += disp[:1]
						disp = disp[1:]
					}
				}
			case strings.Contains(disp, ";"):
				j := strings.IndexByte(disp, ';')
				value, disp = disp[:j], disp[j:]
			default:
				value, disp = strings.Trim(disp, "\x00\t\n\v\f\r "), ""
			}
			if param == "name" {
				name = value
			}
			if j := strings.IndexByte(disp, ';'); j >= 0 {
				disp = disp[j+1:]
			}
		}
	} else if m := rackContentID.FindStringSubmatch(head); m != nil {
		name = m[1]
	}
	return name
}

// rackMethodPart says whether Rack files a part with this head (its
// lines, each ending in CRLF) under "_method".
func rackMethodPart(head string) bool { return rackPartName(head) == "_method" }

// phpIsSpace is C isspace in the C locale.
func phpIsSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// phpGetword ports php_ap_getword (main/rfc1867.c): up to stop, skipping
// over double- and single-quoted runs; the stops after it dropped.
func phpGetword(line string, stop byte) (word, rest string) {
	pos := 0
	for pos < len(line) && line[pos] != stop {
		if q := line[pos]; q == '"' || q == '\'' {
			pos++
			for pos < len(line) && line[pos] != q {
				if line[pos] == '\\' && pos+1 < len(line) && line[pos+1] == q {
					pos += 2
				} else {
					pos++
				}
			}
			if pos < len(line) {
				pos++
			}
		} else {
			pos++
		}
	}
	word = line[:min(pos, len(line))]
	for pos < len(line) && line[pos] == stop {
		pos++
	}
	return word, line[min(pos, len(line)):]
}

// phpGetwordConf ports php_ap_getword_conf and substring_conf.
func phpGetwordConf(s string) string {
	for s != "" && phpIsSpace(s[0]) {
		s = s[1:]
	}
	var quote byte
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		quote, s = s[0], s[1:]
	} else {
		end := 0
		for end < len(s) && !phpIsSpace(s[end]) {
			end++
		}
		s = s[:end]
	}
	var out []byte
	for i := 0; i < len(s) && (quote == 0 || s[i] != quote); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || quote != 0 && s[i+1] == quote) {
			i++
		}
		out = append(out, s[i])
	}
	return string(out)
}

// phpPartName ports rfc1867_post_handler's reading of a part's name from
// its header lines (multipart_buffer_headers: a line with no ':' that does
// not start with a space is added to the previous header's value; the
// first header named Content-Disposition, in any case, counts; its pairs
// split at ';' with quotes honoured, the last name= wins), then
// php_register_variable's normalisation (phpName).
func phpPartName(lines []string) (string, bool) {
	type hdr struct{ key, value string }
	var hs []hdr
	for _, line := range lines {
		i := -1
		if line != "" && !phpIsSpace(line[0]) {
			i = strings.IndexByte(line, ':')
		}
		switch {
		case i >= 0:
			v := line[i:]
			for v = v[1:]; v != "" && phpIsSpace(v[0]); v = v[1:] {
			}
			hs = append(hs, hdr{line[:i], v})
		case len(hs) > 0:
			hs[len(hs)-1].value += line
		}
	}
	for _, h := range hs {
		if !strings.EqualFold(h.key, "Content-Disposition") {
			continue
		}
		cd := strings.TrimLeftFunc(h.value, func(r rune) bool { return r < 128 && phpIsSpace(byte(r)) })
		param := ""
		for cd != "" {
			var pair string
			pair, cd = phpGetword(cd, ';')
			for cd != "" && phpIsSpace(cd[0]) {
				cd = cd[1:]
			}
			if strings.IndexByte(pair, '=') >= 0 {
				key, rest := phpGetword(pair, '=')
				if strings.EqualFold(key, "name") {
					param = phpGetwordConf(rest)
				}
			}
		}
		return phpName(param)
	}
	return "", false
}

// phpMethodPart says whether PHP registers a part with this head (its
// lines, CRLF between them) as $_POST['_method'].
func phpMethodPart(head string) bool {
	name, array := phpPartName(strings.Split(head, "\r\n"))
	return name == "_method" && !array
}

// multipartOverriding is a stack's method override in front of its own
// multipart parser (not Go's): Rack::MethodOverride reading req.POST
// (methodPart rackMethodPart), Symfony's Request::getMethod over PHP's
// parser (phpMethodPart). It reads the body through the middleware's
// guard and performs the method of the part methodPart takes for
// _method.
func multipartOverriding(boundary string, methodPart func(head string) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			_, _ = io.WriteString(w, "read refused")
			return
		}
		performed := r.Method
		for _, part := range strings.Split(string(body), "--"+boundary) {
			part = strings.TrimPrefix(part, "\r\n")
			head, value, ok := strings.Cut(part, "\r\n\r\n")
			if !ok {
				continue
			}
			value = strings.TrimSuffix(value, "\r\n")
			if methodPart(head) {
				if u := strings.ToUpper(value); u == "DELETE" || u == "PUT" || u == "PATCH" {
					performed = u
				}
			}
		}
		_, _ = io.WriteString(w, "performed "+performed)
	}
}

// rackMultipart is Rack::Multipart::Parser::MULTIPART.
var rackMultipart = regexp.MustCompile(`(?i)\Amultipart/.*?boundary(\s*)="?([^";,]+)"?`)

// rackReadsAsUrlencoded is Rack::Request#form_pairs (lib/rack/request.rb)
// for a POST with a Content-Type: form_data? or parseable_data? (media
// type cut at ';' or ',', rstripped, downcased: urlencoded,
// multipart/form-data, multipart/related or multipart/mixed), and
// Rack::Multipart.parse_multipart returned nil (Parser.parse returns EMPTY,
// whose params are nil, "unless boundary"): the body is then parsed as a
// urlencoded query.
func rackReadsAsUrlencoded(ct []string) bool {
	if len(ct) == 0 {
		return true
	}
	mt := strings.ToLower(strings.TrimRight(regexp.MustCompile(`[;,]`).Split(ct[0], 2)[0], " \t\r\n\f\v\x00"))
	switch mt {
	case "", "application/x-www-form-urlencoded":
		return true
	case "multipart/form-data", "multipart/related", "multipart/mixed":
		return !rackMultipart.MatchString(ct[0])
	}
	return false
}
