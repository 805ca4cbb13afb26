package analyzers

import (
	"cmp"
	"fmt"
	"go/types"
	"reflect"
	"strings"

	"golang.org/x/tools/go/analysis"

	"github.com/seahaven/seahaven/internal/argschema"
)

// JSONTagOption reports SH210: a field of a tool's argument or result
// struct (the In and Out of env.Tool, and the structs they reach through
// fields, pointers, slices, arrays and maps) whose json tag json v2, which
// decodes arguments and encodes results, refuses or ignores.
//
// json v2 refuses the tags argschema.TagError names: a malformed tag, a
// known option mis-spelt (omitEmpty) or repeated, a case other than
// case:ignore or case:strict, embed with another option or a name, a json
// tag on an unexported field, two fields of one JSON name, and a format
// option, which it takes only with an option the server does not give. The
// server's encoding of results, with encoding/json's error semantics, would
// write such a type all the same (or, for format, fail every call), so
// env.Tool refuses it at registration, by the same rule. json v2 ignores an option it does not know; of those, inline
// and unknown are reported, which older drafts of json v2 used for what it
// now spells embed: such a field is a member of its own, named by its Go
// field, with no error. env.Tool refuses them in an argument.
//
// A field declared in the analysed package is reported where it is
// declared; a field of another package's type, at the env.Tool call. A type
// with its own JSON or text encoding is not looked into.
var JSONTagOption = &analysis.Analyzer{
	Name:     "jsontagoption",
	Doc:      "SH210: report a tool argument or result field whose json tag json v2 refuses (a malformed tag, a mis-spelt or repeated option, a tag on an unexported field, two fields of one name) or whose option inline or unknown it ignores",
	Requires: []*analysis.Analyzer{WorldsAnalyzer},
	Run:      runJSONTagOption,
}

// tagUse is one field with a refused tag or an ignored option, as the
// first registration that reaches it found it.
type tagUse struct {
	field   *types.Var
	owner   string // the struct type, for messages
	refused string // json v2's error for its tag, or ""
	option  string // the ignored option as written
	member  string // the member json v2 makes of it
	arg     bool   // reached from a tool's arguments
	reg     *Registration
}

func runJSONTagOption(pass *analysis.Pass) (any, error) {
	res := pass.ResultOf[WorldsAnalyzer].(*Result)
	w := &tagWalk{byField: map[*types.Var]*tagUse{}}
	argSeen, outSeen := map[types.Type]bool{}, map[types.Type]bool{}
	for _, r := range res.Registrations {
		if r.Kind != KindTool {
			continue
		}
		if r.In != nil {
			w.reg, w.arg, w.seen = r, true, argSeen
			w.walk(r.In, "")
		}
		if r.Out != nil {
			w.reg, w.arg, w.seen = r, false, outSeen
			w.walk(r.Out, "")
		}
	}
	for _, u := range w.uses {
		pos, prefix := u.field.Pos(), ""
		if u.field.Pkg() != pass.Pkg {
			pos, prefix = u.reg.Call.Pos(), u.field.Pkg().Name()+"."
		}
		tool := "a tool"
		if u.reg.Tool != "" {
			tool = fmt.Sprintf("tool %q", u.reg.Tool)
		}
		where := "result"
		if u.arg {
			where = "arguments"
		}
		unknown := strings.ReplaceAll(strings.ToLower(u.option), "_", "") == "unknown"
		var msg string
		switch {
		case u.refused != "":
			msg = "has a json tag json v2 refuses, and env.Tool refuses it when the tool registers: " + u.refused
		case u.arg && unknown:
			msg = "json v2 ignores it, and env.Tool refuses it: arguments are held to the tool's schema, which admits no member it does not name"
		case u.arg:
			msg = `json v2 ignores it, and env.Tool refuses it: to take a struct's fields as members of the arguments, embed the struct as an untagged Go embedded field (json v2's own option, "embed", is refused in arguments too)`
		case unknown:
			msg = fmt.Sprintf(`json v2 ignores it, and writes the field as a member %q of its own; to write the entries of a map[string]T or jsontext.Value field as members of the object (json v2's "embedded fallback", which collects unknown members), the option is "embed"`, u.member)
		default:
			msg = fmt.Sprintf(`json v2 ignores it, and writes the field as a member %q of its own; json v2's option is "embed"`, u.member)
		}
		if u.refused == "" {
			msg = fmt.Sprintf("has the json tag option %q, which json v2 does not know: %s", u.option, msg)
		}
		pass.Report(analysis.Diagnostic{
			Pos: pos, Category: "SH210",
			Message: fmt.Sprintf("field %s of %s%s, in the %s of %s, %s", u.field.Name(), prefix, u.owner, where, tool, msg),
		})
	}
	return nil, nil
}

// tagWalk walks the types a tool's arguments or result reach.
type tagWalk struct {
	reg     *Registration
	arg     bool
	seen    map[types.Type]bool // the named types walked, for arguments or for results
	uses    []*tagUse
	byField map[*types.Var]*tagUse // by the field's origin: one for every instance of a generic type
}

// walk looks into t; owner names the struct type an unnamed struct is in.
func (w *tagWalk) walk(t types.Type, owner string) {
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		if w.seen[t] || ownEncoding(t) {
			return
		}
		w.seen[t] = true
		w.walk(t.Underlying(), t.Obj().Name())
	case *types.Pointer:
		w.walk(t.Elem(), owner)
	case *types.Slice:
		w.walk(t.Elem(), owner)
	case *types.Array:
		w.walk(t.Elem(), owner)
	case *types.Map:
		w.walk(t.Elem(), owner)
	case *types.Struct:
		if owner == "" {
			owner = "struct"
		}
		w.refusedTags(t, owner)
		for i := range t.NumFields() {
			f := t.Field(i)
			tag, _ := reflect.StructTag(t.Tag(i)).Lookup("json")
			if tag == "-" || (!f.Exported() && !f.Embedded()) {
				continue
			}
			// A Go embedded field without a JSON name is embedded whatever
			// its options: an ignored one changes nothing.
			if name, opts := splitJSONTag(tag); !f.Embedded() || name != "" {
				for _, opt := range opts {
					if meantEmbed(opt) {
						w.found(&tagUse{field: f, owner: owner, option: opt, member: cmp.Or(name, f.Name())})
						break
					}
				}
			}
			w.walk(f.Type(), owner+"."+f.Name())
		}
	}
}

// refusedTags records each field of struct t whose json tag json v2
// refuses, by argschema.TagErrors.
func (w *tagWalk) refusedTags(t *types.Struct, owner string) {
	fields := make([]argschema.TagField, t.NumFields())
	for i := range fields {
		f := t.Field(i)
		tag, hasTag := reflect.StructTag(t.Tag(i)).Lookup("json")
		fields[i] = argschema.TagField{Name: f.Name(), Tag: tag, HasTag: hasTag,
			Exported: f.Exported(), Embedded: f.Embedded(), Struct: holdsStruct(f.Type())}
	}
	for i, err := range argschema.TagErrors(fields) {
		if err != nil {
			w.found(&tagUse{field: t.Field(i), owner: owner, refused: err.Error()})
		}
	}
}

// holdsStruct reports whether t is a struct type or an unnamed pointer to
// one, as json v2 looks into an embedded field.
func holdsStruct(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

// found records u, a field with a refused tag or an ignored option, with
// the registration being walked; a field reached from both arguments and
// results is reported as an argument's, and a field once.
func (w *tagWalk) found(u *tagUse) {
	if old, ok := w.byField[u.field.Origin()]; ok {
		if w.arg && !old.arg {
			old.arg, old.reg = true, w.reg
		}
		return
	}
	u.arg, u.reg = w.arg, w.reg
	w.byField[u.field.Origin()] = u
	w.uses = append(w.uses, u)
}

// meantEmbed reports whether opt, an option json v2 does not know, was
// meant as embed: inline or unknown, the older drafts' spellings, in any
// case and with any underscores.
func meantEmbed(opt string) bool {
	norm := strings.ReplaceAll(strings.ToLower(opt), "_", "")
	return norm == "inline" || norm == "unknown"
}

// ownEncoding reports whether t or *t has a JSON or text encoding of its
// own, which json v2 uses instead of its fields.
func ownEncoding(t *types.Named) bool {
	ms := types.NewMethodSet(types.NewPointer(t))
	for _, m := range []string{"MarshalJSON", "MarshalJSONTo", "MarshalText", "UnmarshalJSON", "UnmarshalJSONFrom", "UnmarshalText"} {
		if ms.Lookup(nil, m) != nil {
			return true
		}
	}
	return false
}

// splitJSONTag reads a json tag as json v2 does: the member name, which may
// be single-quoted, then options separated by commas, each a name with an
// optional value after a colon (format:'...' may hold commas in quotes). It
// returns the name and the options' names, unquoted.
func splitJSONTag(tag string) (name string, opts []string) {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(tag); i++ {
		switch tag[i] {
		case '\\':
			if quoted {
				i++
			}
		case '\'':
			quoted = !quoted
		case ',':
			if !quoted {
				parts = append(parts, tag[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, tag[start:])
	for _, p := range parts[1:] {
		opt, _, _ := strings.Cut(p, ":")
		opts = append(opts, unquoteTag(strings.TrimSpace(opt)))
	}
	return unquoteTag(parts[0]), opts
}

// unquoteTag removes the single quotes around a tag's name or option.
func unquoteTag(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return s[1 : len(s)-1]
	}
	return s
}
