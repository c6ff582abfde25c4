// Package ascii holds the one case rule for names that identify a party or
// a protocol element (hosts, schemes, methods, authentication schemes,
// media types): they are compared and lower-cased in ASCII only.
//
// Unicode case mapping makes distinct names equal: strings.ToLower maps
// "İ" (U+0130) to "i" and the Kelvin sign to "k", strings.EqualFold also
// folds "ſ" to "s", while the wire, DNS and IDNA keep them apart
// ("İnternal.example" is the host xn--internal-o0e.example). A name that
// is not ASCII is never lower-cased into an ASCII one here: its
// non-ASCII bytes stay as they are, and callers that need an ASCII name
// refuse one that is not ([Is]).
package ascii

// Is reports whether s is all ASCII.
func Is(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Lower returns s with its ASCII upper-case letters lower-cased and every
// other byte unchanged. It returns s itself, without allocating, when s
// has no upper-case ASCII letter.
func Lower(s string) string {
	i := 0
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if isUpper(b[i]) {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// EqualFold reports whether a and b are equal when their ASCII letters
// are lower-cased; other bytes must be equal as they are.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if LowerByte(a[i]) != LowerByte(b[i]) {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// LowerByte is c in lower case, for ASCII letters.
func LowerByte(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

// IsHex reports whether c is a hexadecimal digit, in either case.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Unhex is the value of the hexadecimal digit c (IsHex).
func Unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
