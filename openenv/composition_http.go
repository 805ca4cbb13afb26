package openenv

import (
	"context"
	"net/http"
)

// CompositionSource is implemented by a Backend that can describe its
// world's composition; GET /composition serves it, and answers 404 for a
// Backend that does not implement it. Composition must be safe for
// concurrent use.
type CompositionSource interface {
	// Composition returns the sealed tree of the served world.
	Composition(ctx context.Context) (*Composition, error)
}

// Composition is the body of GET /composition: the sealed tree of the
// served world, its nodes in canonical order (the root first, then breadth
// first by registration order) and its AddWorld edges, each host's in
// registration order. The inspector UI draws it as a tree.
type Composition struct {
	// World and WorldVersion name the root world.
	World        string `json:"world"`
	WorldVersion string `json:"world_version"`
	// Nodes are the stores of an instance, one per (world, scope) pair.
	Nodes []CompositionNode `json:"nodes"`
	// Edges are the AddWorld registrations of every node's world.
	Edges []CompositionEdge `json:"edges"`
}

// CompositionNode is one node of a composition, as the state document's
// composition records describe it, plus its store file.
type CompositionNode struct {
	// Path is the canonical path: "main" for the root.
	Path string `json:"path"`
	// World and WorldVersion name the node's world.
	World        string `json:"world"`
	WorldVersion string `json:"world_version"`
	// Scope is the account scope; null is the root's default scope.
	Scope *string `json:"scope"`
	// Aliases are the other paths reaching the node; never null.
	Aliases []string `json:"aliases"`
	// SchemaHash is the SHA-256 (hex) of the node's normalised schema.
	SchemaHash string `json:"schema_hash"`
	// File is the node's store file in an instance or fixture directory.
	File string `json:"file"`
}

// CompositionEdge is one AddWorld registration: the host node From adds the
// node To under Name.
type CompositionEdge struct {
	// From is the host node's path; To is the added node's canonical path,
	// which differs from From/Name when the added node is shared.
	From string `json:"from"`
	Name string `json:"name"`
	To   string `json:"to"`
	// Prefix is prepended to every tool the edge contributes; "" for none.
	Prefix string `json:"prefix"`
	// Allow is the ToolAllowList, or null when none was given; Block the
	// ToolBlockList, likewise.
	Allow []string `json:"allow"`
	Block []string `json:"block"`
	// Store is the scope the edge gives its subtree, or null to keep the host's.
	Store *string `json:"store"`
}

// serveComposition serves GET /composition.
func (s *Server) serveComposition(w http.ResponseWriter, r *http.Request) {
	src, ok := s.backend.(CompositionSource)
	if !ok {
		s.respond(w, http.StatusNotFound, detail{"This server's backend does not describe its composition"})
		return
	}
	var c *Composition
	var err error
	if perr := s.guard("Backend.Composition", func() { c, err = src.Composition(r.Context()) }); perr != nil {
		s.writeError(w, perr)
		return
	}
	if err != nil {
		s.writeError(w, newError(codeExecution, "Describing the composition failed: %v", err))
		return
	}
	s.respond(w, http.StatusOK, c)
}
