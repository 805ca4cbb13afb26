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
