package check

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// Severities of a finding. An error fails `seahaven check`; a warning is
// printed only.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Finding is one lint finding.
type Finding struct {
	// Pos is where the finding is, as "file:line:col".
	Pos string `json:"pos"`
	// Code is the lint code, such as "SH504".
	Code string `json:"code"`
	// Severity is SeverityError or SeverityWarning.
	Severity string `json:"severity"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// String formats the finding as `file:line:col: SHnnn severity: message`.
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s %s: %s", f.Pos, f.Code, f.Severity, f.Message)
}

// Rule describes one lint code.
type Rule struct {
	// Code is the lint code.
	Code string
	// Severity is SeverityError or SeverityWarning.
	Severity string
	// Static is true for a lint found in source by package check/analyzers,
	// false for one World finds on a world's value.
	Static bool
	// Summary says what the lint finds.
	Summary string
}

// Rules lists every lint of `seahaven check`, in code order.
var Rules = []Rule{
	{"SH206", SeverityWarning, false, "a prefixed world's description names a sibling tool the agent cannot call"},
	{"SH207", SeverityWarning, false, "one tool of a shared node contributed under two names"},
	{"SH208", SeverityError, true, "composition.Open inside a tool, a middleware or a startup hook, or in a tools/ or middleware/ package"},
	{"SH209", SeverityError, true, "ctx.Worlds.Get naming something that is not a registered child"},
	{"SH210", SeverityError, true, "a tool's argument or result field whose json tag json v2 refuses, or has the option inline or unknown, which json v2 ignores"},
	{"SH301", SeverityError, false, "a tracked table whose primary key cannot key the change log exactly"},
	{"SH302", SeverityError, false, "a world's schema does not apply to an empty store"},
	{"SH303", SeverityWarning, false, "a world's UntrackedTables names a table its schema does not create"},
	{"SH401", SeverityError, false, "a fixture's sidecar does not parse"},
	{"SH402", SeverityError, false, "a fixture node's file does not have the sha256 its sidecar records"},
	{"SH403", SeverityError, false, "a fixture node's schema hash differs from its world's current schema (schema drift)"},
	{"SH404", SeverityError, false, "a fixture's now is missing or not a valid instant"},
	{"SH405", SeverityError, false, "a fixture node's file is missing or not a readable SQLite database"},
	{"SH406", SeverityError, false, "a fixture's nodes disagree with the world's composition"},
	{"SH407", SeverityError, false, "a task of the world does not load or does not fit its composition"},
	{"SH408", SeverityError, false, "a world's DefaultFixture is not one of its fixtures"},
	{"SH409", SeverityError, false, "an instance cannot be made from a fixture of the world, or from genesis when it has no DefaultFixture: a startup hook fails"},
	{"SH502", SeverityError, false, "a struct declared with env.DeclareWorlds names a child no AddWorld registered"},
	{"SH503", SeverityWarning, false, "a registered child name no declared struct annotates"},
	{"SH504", SeverityError, false, "the world's composition does not seal"},
	{"SH505", SeverityError, false, "a world's package panics when it is loaded (seahaven check only)"},
}

// Lookup returns the rule of a code.
func Lookup(code string) (Rule, bool) {
	i := slices.IndexFunc(Rules, func(r Rule) bool { return r.Code == code })
	if i < 0 {
		return Rule{}, false
	}
	return Rules[i], true
}

// finding builds a finding of a code with the code's severity.
func finding(pos, code, format string, args ...any) Finding {
	r, ok := Lookup(code)
	if !ok {
		panic("check: unknown code " + code)
	}
	return Finding{Pos: pos, Code: code, Severity: r.Severity, Message: fmt.Sprintf(format, args...)}
}

// HasErrors reports whether any finding is of SeverityError.
func HasErrors(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == SeverityError })
}

// Format returns one line per finding, `file:line:col: SHnnn severity:
// message`, sorted by file, line, column and code, with exact duplicates
// (the same finding reached from two worlds) printed once. It does not
// modify fs.
func Format(fs []Finding) string {
	var b strings.Builder
	for _, f := range Unique(fs) {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Unique returns a copy of fs sorted (see Sort) with exact duplicates (the
// same finding reached from two worlds) kept once. It does not modify fs.
func Unique(fs []Finding) []Finding {
	out := slices.Clone(fs)
	Sort(out)
	return slices.Compact(out)
}

// Sort sorts findings by file, line, column (numerically), code and
// message.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		fa, la, ca := SplitPos(a.Pos)
		fb, lb, cb := SplitPos(b.Pos)
		return cmp.Or(cmp.Compare(fa, fb), cmp.Compare(la, lb), cmp.Compare(ca, cb), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
}

// SplitPos splits a position "file:line:col" from the right, so the file
// may hold colons: up to two trailing ":N" parts whose N is an integer
// (strconv.Atoi) are the line and column; a part that is missing is zero.
// The file is always a prefix of pos.
func SplitPos(pos string) (file string, line, col int) {
	file = pos
	for range 2 {
		i := strings.LastIndexByte(file, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(file[i+1:])
		if err != nil {
			break
		}
		// Read from the right: a number found before n was the column.
		line, col = n, line
		file = file[:i]
	}
	return file, line, col
}

// at turns a registration's "file:line" into a position, falling back to
// the line that declared the world.
func at(where string, w *env.World) string {
	if where == "" {
		where = w.Where()
	}
	if where == "" {
		return w.Name() + ":1:1"
	}
	return where + ":1"
}

// World runs every dynamic check on w as the root of a composition:
// whether it seals (SH504), the schemas of its tree's worlds (SH302), the
// primary keys of their tables (SH301) and their UntrackedTables (SH303),
// its declared child names (SH502, SH503), its agent surface (SH206,
// SH207), each of its own fixtures (SH401–SH406), in its FixturesDir or,
// when it has none, in its embedded Fixtures, and its tasks (SH407): those
// declared in Go and those of the tasks file beside its fixtures, and its
// DefaultFixture (SH408). It makes an instance, running the tree's startup
// hooks, from each fixture those checks find whole and, when the world has
// no DefaultFixture, from genesis, as a reset would, and closes it (SH409).
// The findings are sorted (see Sort). A world's own test can call it; a nil
// slice means the world checks clean.
func World(ctx context.Context, w *env.World) []Finding {
	sealed, err := composition.Seal(w) // sealed is nil when err is not
	fs := sealFindings(w, err)
	fs = append(fs, keyFindings(w)...)
	fs = append(fs, untrackedFindings(ctx, w)...)
	fs = append(fs, declaredFindings(w)...)
	if sealed != nil {
		fs = append(fs, surfaceFindings(sealed)...)
	}
	fixtures, root := fixturesOf(w)
	fs = append(fs, fixtureFindings(ctx, w, sealed, fixtures, root)...)
	fs = append(fs, taskFindings(w, sealed, fixtures, root)...)
	fs = append(fs, defaultFixtureFindings(w, fixtures)...)
	fs = append(fs, genesisFindings(ctx, w, sealed)...)
	Sort(fs)
	return fs
}

// sealFindings reports SH504: one finding per seal error (none for nil),
// at the registration the WorldBug names, but for the schemas and tables
// keyFindings reports (SH301, SH302). The message does not name the root, so a broken world
// added by several hosts is one line of Format's output.
func sealFindings(w *env.World, err error) []Finding {
	var fs []Finding
	for _, e := range unjoin(err) {
		if isKeyProblem(e) {
			continue
		}
		fs = append(fs, finding(at(whereOf(e), w), "SH504", "the composition does not seal: %v", e))
	}
	return fs
}
