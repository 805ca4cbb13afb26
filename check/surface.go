package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// surfaceFindings checks the agent surface of a sealed composition: SH206
// for a renamed tool whose description names a sibling the agent cannot
// call by that name, SH207 for a tool reaching the surface under two names.
func surfaceFindings(s *composition.Sealed) []Finding {
	root := s.Nodes[0].World
	var fs []Finding

	// SH206.
	for _, r := range s.Surface {
		if r.Name == r.Def.Name {
			continue
		}
		var named []string
		for _, t := range r.Owner.World.Tools() {
			if t == r.Def || !mentions(r.Def.Description, t.Name) || published(s, t) {
				continue
			}
			var as []string
			for _, o := range s.Surface {
				if o.Def == t {
					as = append(as, o.Name)
				}
			}
			if len(as) == 0 {
				named = append(named, t.Name+" (not published)")
			} else {
				named = append(named, fmt.Sprintf("%s (published as %s)", t.Name, strings.Join(as, ", ")))
			}
		}
		if len(named) == 0 {
			continue
		}
		where := ""
		for _, e := range routeEdges(s, r) {
			if e.Prefix != "" {
				where = e.Where
				break
			}
		}
		fs = append(fs, finding(at(where, root), "SH206", "%s's description names a tool of %s the agent cannot call by that name: %s",
			r.Name, r.Owner.World.Name(), strings.Join(named, ", ")))
	}

	// SH207.
	type key struct {
		def   *env.ToolDef
		owner *composition.Node
	}
	groups := map[key][]*composition.Route{}
	for _, r := range s.Surface {
		groups[key{r.Def, r.Owner}] = append(groups[key{r.Def, r.Owner}], r)
	}
	for _, r := range s.Surface {
		rs := groups[key{r.Def, r.Owner}]
		if len(rs) < 2 || rs[0] != r {
			continue // reported once, at the group's first route
		}
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Name
		}
		// Point at the registration where the second route leaves the first.
		first, second := routeEdges(s, rs[0]), routeEdges(s, rs[1])
		where := ""
		for i, e := range second {
			if i >= len(first) || first[i] != e {
				where = e.Where
				break
			}
		}
		fs = append(fs, finding(at(where, root), "SH207", "the tool %s of node %s reaches the agent under %d names: %s",
			r.Def.Name, r.Owner.Path, len(rs), strings.Join(names, ", ")))
	}
	return fs
}

// published reports whether the agent can call tool t by its own name.
func published(s *composition.Sealed, t *env.ToolDef) bool {
	r, ok := s.Lookup(t.Name)
	return ok && r.Def == t
}

// mentions reports whether text contains name as a whole word: not preceded
// or followed by a character a tool name may hold.
func mentions(text, name string) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], name)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(name)
		if (start == 0 || !nameByte(text[start-1])) && (end == len(text) || !nameByte(text[end])) {
			return true
		}
		off = start + 1
	}
}

// nameByte reports whether c may appear in a tool name.
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// routeEdges recovers the AddWorld edges a surface route descends, root
// first: the edges between consecutive nodes of its path whose filters let
// the tool through and whose prefixes spell its published name.
func routeEdges(s *composition.Sealed, r *composition.Route) []*env.Edge {
	var walk func(i int, name string) []*env.Edge
	walk = func(i int, name string) []*env.Edge {
		if i == len(r.Path)-1 {
			if name == r.Def.Name {
				return []*env.Edge{}
			}
			return nil
		}
		for _, c := range r.Path[i].Children {
			e := c.Edge
			if c.Node != r.Path[i+1] || !strings.HasPrefix(name, e.Prefix) {
				continue
			}
			inner := strings.TrimPrefix(name, e.Prefix)
			if e.AllowSet && !slices.Contains(e.Allow, inner) || e.BlockSet && slices.Contains(e.Block, inner) {
				continue
			}
			if rest := walk(i+1, inner); rest != nil {
				return append([]*env.Edge{e}, rest...)
			}
		}
		return nil
	}
	return walk(0, r.Name)
}
