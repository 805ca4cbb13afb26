package sqlitestore

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAbbreviate: a statement abbreviated for an error message keeps at
// most n bytes before the ellipsis and stays UTF-8 wherever its characters
// fall.
func TestAbbreviate(t *testing.T) {
	for _, s := range []string{
		"SELECT 'short'",
		"SELECT '" + strings.Repeat("é", 100) + "'",
		"SELECT '" + strings.Repeat("€", 80) + "'",
		strings.Repeat("a", 79) + "😀😀",
	} {
		got := abbreviate(s, 80)
		body := strings.TrimSuffix(got, "…")
		if len(body) > 80 || !utf8.ValidString(got) {
			t.Errorf("abbreviate(%q, 80) = %q (%d bytes), want valid UTF-8 of at most 80 bytes before the ellipsis", s, got, len(body))
		}
		if len(s) > 80 && body == got {
			t.Errorf("abbreviate(%q, 80) = %q, want it cut with an ellipsis", s, got)
		}
	}
	if got := abbreviate("SELECT   1,\n\t2", 80); got != "SELECT 1, 2" {
		t.Errorf("abbreviate folds white space: %q", got)
	}
}
