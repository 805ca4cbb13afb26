package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/sqlitestore"
)

// compositions caches descriptions by sealed tree: a Sealed is immutable,
// and a new registration seals a new one.
var compositions sync.Map // *composition.Sealed -> *openenv.Composition

// Composition describes the world's sealed tree. It implements
// [openenv.CompositionSource]; it fails only if the world no longer seals (a
// registration since New broke it) or a schema does not apply.
func (b *Backend) Composition(ctx context.Context) (*openenv.Composition, error) {
	s, err := composition.Seal(b.world)
	if err != nil {
		return nil, err
	}
	if c, ok := compositions.Load(s); ok {
		return c.(*openenv.Composition), nil
	}
	c := &openenv.Composition{World: b.world.Name(), WorldVersion: b.world.Version(), Nodes: []openenv.CompositionNode{}, Edges: []openenv.CompositionEdge{}}
	hashes := map[string]string{} // by schema text: shared worlds hash once
	for _, n := range s.Nodes {
		schema := n.World.Spec().Schema
		h, ok := hashes[schema]
		if !ok {
			if h, err = sqlitestore.SchemaHash(ctx, schema); err != nil {
				return nil, fmt.Errorf("app: world %s: schema hash: %w", n.World.Name(), err)
			}
			hashes[schema] = h
		}
		c.Nodes = append(c.Nodes, openenv.CompositionNode{
			Path: n.Path, World: n.World.Name(), WorldVersion: n.World.Version(), Scope: n.Scope,
			Aliases: append([]string{}, n.Aliases...), SchemaHash: h, File: n.File,
		})
		for _, ch := range n.Children {
			e := ch.Edge
			edge := openenv.CompositionEdge{From: n.Path, Name: e.Name, To: ch.Node.Path, Prefix: e.Prefix, Store: e.Store}
			if e.AllowSet {
				edge.Allow = append([]string{}, e.Allow...)
			}
			if e.BlockSet {
				edge.Block = append([]string{}, e.Block...)
			}
			c.Edges = append(c.Edges, edge)
		}
	}
	actual, _ := compositions.LoadOrStore(s, c)
	return actual.(*openenv.Composition), nil
}
