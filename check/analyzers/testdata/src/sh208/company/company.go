// Package company makes instances where it may and where it must not.
package company

import (
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

var World = env.NewWorld(env.WorldSpec{Name: "company", Version: "1"})

type Args struct{}

var Spawn = env.Tool(World, "spawn", "Makes an instance inside a call.",
	func(c *env.Ctx, _ Args) (any, error) {
		inst, err := composition.Open(c.Context(), World, composition.Options{}) // want `composition.Open inside the tool function of "spawn" \(company\): an instance cannot be made inside a call; reach added worlds through ctx.Worlds`
		go func() {
			composition.Open(env.Background(), World, composition.Options{}) // want `composition.Open inside the tool function of "spawn"`
		}()
		return inst, err
	})

func startup(c *env.Ctx, _ struct{}) error {
	_, err := composition.Open(c.Context(), World, composition.Options{}) // want `composition.Open inside a startup hook of company`
	return err
}

func gate(c *env.Ctx, next func() (any, error)) (any, error) {
	composition.Open(c.Context(), World, composition.Options{}) // want `composition.Open inside a middleware of company`
	return next()
}

var name = "dynamic"

func init() {
	env.OnStartup(World, startup)
	World.Use(gate)
	// Registered twice, reported once.
	World.Use(gate)
	env.Tool(World, name, "A tool whose name is not a constant.", func(c *env.Ctx, _ Args) (any, error) {
		return composition.Open(c.Context(), World, composition.Options{}) // want `composition.Open inside a tool function of company`
	})
	env.OnStartupMap(env.NewWorld(env.WorldSpec{Name: "inline"}), nil, func(c *env.Ctx, kw map[string]any) error {
		_, err := composition.Open(c.Context(), World, composition.Options{}) // want `composition.Open inside a startup hook of env.NewWorld\(env.WorldSpec{…}\)`
		return err
	})
}

// Fine: a test helper or a server makes instances outside any call.
func NewInstance(ctx env.Context) (*composition.Instance, error) {
	return composition.Open(ctx, World, composition.Options{})
}
