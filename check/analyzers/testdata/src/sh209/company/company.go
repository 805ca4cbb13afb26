// Package company reaches its added worlds by name.
package company

import (
	"facts/company"
	"facts/dynamic"
	"facts/payments"

	"github.com/seahaven/seahaven/env"
)

var Tax = env.NewWorld(env.WorldSpec{Name: "tax", Version: "1"})

var Billing = env.NewWorld(env.WorldSpec{Name: "billing", Version: "1"})

var World = env.NewWorld(env.WorldSpec{Name: "shopco", Version: "1"})

func init() {
	Billing.AddWorld(Tax, env.Name("tax"))
	World.AddWorld(payments.World, env.ToolPrefix("pay_"))
	World.AddWorld(Billing)
	World.AddWorld(company.World, env.Name("parent"))
}

type Args struct{}

var Good = env.Tool(World, "good", "Uses registered children.",
	func(c *env.Ctx, _ Args) (any, error) {
		c.Worlds.Get("payments")
		c.Worlds.Get("billing").Worlds().Get("tax")
		c.Worlds.Get("parent").Worlds().Get("payments_eu")
		name := "anything"
		c.Worlds.Get(name) // not a constant: silent
		return nil, nil
	})

const misspelt = "paymnets"

var Bad = env.Tool(World, "bad", "Misspells children.",
	func(c *env.Ctx, _ Args) (any, error) {
		c.Worlds.Get("billng")                               // want `c.Worlds.Get\("billng"\) names no registered child of shopco \(its children: payments, billing, parent\)`
		c.Worlds.Get(misspelt)                               // want `c.Worlds.Get\("paymnets"\) names no registered child of shopco`
		c.Worlds.Get("billing").Worlds().Get("vat")          // want `c.Worlds.Get\("billing"\).Worlds\(\).Get\("vat"\) names no registered child of billing \(its children: tax\)`
		c.Worlds.Get("payments").Worlds().Get("ledger")      // want `names no registered child of payments \(it adds no worlds\)`
		c.Worlds.Get("parent").Worlds().Get("chat").Worlds() // the parent's children come from a fact: grandchildren stay unknown
		c.Worlds.Get("parent").Worlds().Get("shop")          // want `names no registered child of company \(its children: payments, payments_eu, chat, audit\)`
		return nil, nil
	})

func hook(c *env.Ctx, _ struct{}) error {
	c.Worlds.Get("ghost") // want `c.Worlds.Get\("ghost"\) names no registered child of shopco`
	return nil
}

func mapHook(ctx *env.Ctx, kw map[string]any) error {
	ctx.Worlds.Get("spirit") // want `ctx.Worlds.Get\("spirit"\) names no registered child of billing \(its children: tax\)`
	return nil
}

var middleware = func(c *env.Ctx, next func() (any, error)) (any, error) {
	c.Worlds.Get("phantom") // want `names no registered child of shopco`
	return next()
}

func init() {
	env.OnStartup(World, hook)
	env.OnStartupMap(Billing, []string{"k"}, mapHook)
	World.Use(middleware)
	World.Use(env.Middleware(func(c *env.Ctx, next func() (any, error)) (any, error) {
		c.Worlds.Get("wraith") // want `names no registered child of shopco`
		return next()
	}))
	// A tool on a world from another package resolves through its fact.
	env.Tool(company.World, "audit", "Audits.", func(c *env.Ctx, _ Args) (any, error) {
		c.Worlds.Get("chat")
		c.Worlds.Get("shop") // want `names no registered child of company`
		return nil, nil
	})
	// Worlds whose children are unknown: silent.
	env.Tool(dynamic.Late, "late", "Late.", func(c *env.Ctx, _ Args) (any, error) {
		c.Worlds.Get("whatever")
		return nil, nil
	})
	// An unnamed context cannot be followed.
	env.Tool(World, "unnamed", "Unnamed.", func(_ *env.Ctx, _ Args) (any, error) {
		return nil, nil
	})
}

// helper is not registered anywhere: its world is unknown, so it is silent.
func helper(c *env.Ctx) { c.Worlds.Get("nowhere") }

// other contexts inside a registered function are not the registration's.
var Nested = env.Tool(World, "nested", "Nested.", func(c *env.Ctx, _ Args) (any, error) {
	inner := func(d *env.Ctx) { d.Worlds.Get("elsewhere") }
	inner(c)
	helper(c)
	return nil, nil
})
