package argschema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// maxExponent caps the exponent read from a number literal; any number
// whose exponent reaches it is far outside every integer kind anyway.
const maxExponent = 1 << 30

// parseIntLit reads the JSON number literal s as an integer of type t (a
// signed integer kind). It accepts integral values written with a fraction or
// an exponent, like 2.0 or 1e3. The problem is "" on success.
func parseIntLit(s string, t reflect.Type) (int64, string) {
	i, err := strconv.ParseInt(s, 10, t.Bits())
	if err == nil {
		return i, ""
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, outOfRange(s, t)
	}
	neg, digits, problem := integerDigits(s, t)
	if problem != "" {
		return 0, problem
	}
	if neg {
		digits = "-" + digits
	}
	i, err = strconv.ParseInt(digits, 10, t.Bits())
	if err != nil {
		return 0, outOfRange(s, t)
	}
	return i, ""
}

// parseUintLit is parseIntLit for unsigned integer kinds.
func parseUintLit(s string, t reflect.Type) (uint64, string) {
	u, err := strconv.ParseUint(s, 10, t.Bits())
	if err == nil {
		return u, ""
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, outOfRange(s, t)
	}
	neg, digits, problem := integerDigits(s, t)
	if problem != "" {
		return 0, problem
	}
	if neg && digits != "0" {
		return 0, outOfRange(s, t)
	}
	u, err = strconv.ParseUint(digits, 10, t.Bits())
	if err != nil {
		return 0, outOfRange(s, t)
	}
	return u, ""
}

// parseFloatLit reads the JSON number literal s as a float of type t.
// Numbers too small to represent round to zero; numbers too large are out
// of range.
func parseFloatLit(s string, t reflect.Type) (float64, string) {
	f, err := strconv.ParseFloat(s, t.Bits())
	if err != nil && (f != 0 || !errors.Is(err, strconv.ErrRange)) {
		return 0, outOfRange(s, t)
	}
	return f, ""
}

func outOfRange(s string, t reflect.Type) string {
	return "number " + clip(s) + " is out of range for " + t.Kind().String()
}

// integerDigits returns the exact integer value of the JSON number literal
// s as its sign and decimal digits, without leading zeros ("0" for zero).
// It refuses non-integral values and values with more than 20 digits, and its
// work is linear in len(s) whatever the exponent.
func integerDigits(s string, t reflect.Type) (neg bool, digits string, problem string) {
	lit := s
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		es := s[i+1:]
		expNeg := false
		if es != "" && (es[0] == '+' || es[0] == '-') {
			expNeg = es[0] == '-'
			es = es[1:]
		}
		for j := 0; j < len(es); j++ {
			if exp < maxExponent {
				exp = exp*10 + int(es[j]-'0')
			}
		}
		exp = min(exp, maxExponent)
		if expNeg {
			exp = -exp
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	ds := strings.TrimLeft(intPart+frac, "0")
	if ds == "" {
		return neg, "0", ""
	}
	exp10 := exp - len(frac)
	trimmed := strings.TrimRight(ds, "0")
	exp10 += len(ds) - len(trimmed)
	ds = trimmed
	if exp10 < 0 {
		return false, "", "expected integer, got non-integral number " + clip(lit)
	}
	if len(ds)+exp10 > 20 {
		return false, "", outOfRange(lit, t)
	}
	return neg, ds + strings.Repeat("0", exp10), ""
}

// formatFloat formats f as encoding/json formats a float of the given bits.
func formatFloat(f float64, bits int) string {
	var b []byte
	var err error
	if bits == 32 {
		b, err = json.Marshal(float32(f))
	} else {
		b, err = json.Marshal(f)
	}
	if err != nil {
		// Only NaN and infinities fail, and parsing never yields them.
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	return string(b)
}

// numberLit is a number tag parsed for a field's kind.
type numberLit struct {
	i    int64
	u    uint64
	f    float64
	text string // canonical JSON literal
}

// parseNumberTag parses a number written in a struct tag for a field
// decoded by c (an integer or float codec). The problem is "" on success.
func parseNumberTag(c *codec, s string) (numberLit, string) {
	if !isNumberLiteral(s) {
		return numberLit{}, "not a JSON number"
	}
	var lit numberLit
	var problem string
	switch c.kind {
	case kindInt:
		lit.i, problem = parseIntLit(s, c.typ)
		lit.text = strconv.FormatInt(lit.i, 10)
	case kindUint:
		lit.u, problem = parseUintLit(s, c.typ)
		lit.text = strconv.FormatUint(lit.u, 10)
	default:
		lit.f, problem = parseFloatLit(s, c.typ)
		lit.text = formatFloat(lit.f, c.typ.Bits())
	}
	return lit, problem
}

// isNumberLiteral reports whether s is exactly one JSON number.
func isNumberLiteral(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	if last := s[len(s)-1]; last < '0' || last > '9' {
		return false
	}
	return json.Valid([]byte(s))
}
