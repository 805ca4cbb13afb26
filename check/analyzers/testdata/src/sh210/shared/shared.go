// Package shared declares a result type other packages' tools return.
package shared

type Page struct {
	Items []string       `json:"items"`
	Rest  map[string]any `json:",inline"`
}
