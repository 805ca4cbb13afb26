// Package yamlnode holds the helpers the project's strict YAML readers
// (fixture sidecars, tasks.yaml) share for reading exactly one
// gopkg.in/yaml.v3 document, walking node trees and their mappings' keys,
// and naming nodes and finding lines for error messages. Its functions are
// safe for concurrent use.
package yamlnode

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Deref follows alias nodes to the node they stand for.
func Deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// Oversized reports whether n, its aliases followed, stands for more than
// limit nodes, and if so the line of the node at which the count passed
// it. Every node is counted once however many aliases name it, so a
// document of a few kilobytes whose aliases name aliases (a billion
// laughs) is found without being expanded: each reader that follows
// aliases (Deref) would otherwise build, or walk, every copy.
func Oversized(n *yaml.Node, limit int) (line int, over bool) {
	sizes := map[*yaml.Node]int{} // capped at limit+1
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if s, ok := sizes[n]; ok {
			return s
		}
		total := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			total = size(n.Alias)
		}
		for _, c := range n.Content {
			if total += size(c); total > limit {
				if line == 0 {
					line = c.Line
				}
				break
			}
		}
		sizes[n] = min(total, limit+1)
		return sizes[n]
	}
	return line, size(n) > limit
}

// Want is the message of a value n of the wrong type: "want a string, got
// the integer 1", with a hint to quote a scalar where a string is wanted.
func Want(n *yaml.Node, want string) string {
	msg := fmt.Sprintf("want %s, got %s", want, Describe(n))
	if n.Kind == yaml.ScalarNode && want == "a string" && n.ShortTag() != "!!null" {
		msg += " (quote it to make it a string)"
	}
	return msg
}

// Describe names what a YAML node is, for type errors: "a mapping",
// "the string \"x\"", "the integer 3", "null".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		case "!!timestamp":
			return "the timestamp " + n.Value
		default:
			return "a value tagged " + tag
		}
	}
	return "an empty value"
}
