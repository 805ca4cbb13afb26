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
