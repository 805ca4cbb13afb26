// Package shared declares a result type other packages' tools return.
package shared

type Page struct {
	Items []string       `json:"items"`
	Rest  map[string]any `json:",inline"`
}

// Row names two fields alike.
type Row struct {
	ID   string `json:"id"`
	Name string `json:"id"`
}
