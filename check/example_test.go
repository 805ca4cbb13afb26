package check_test

import (
	"context"
	"fmt"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/env"
)

// A world's own test can run the checks on its value. Here a prefix leaves
// a description naming a tool the agent knows under another name (SH206),
// and a declared struct forgets a child (SH503).
func ExampleWorld() {
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	env.Tool(payments, "create_customer", "Create a customer.",
		func(*env.Ctx, struct{}) (string, error) { return "", nil })
	env.Tool(payments, "create_charge", "Charge a customer; call create_customer first.",
		func(*env.Ctx, struct{}) (string, error) { return "", nil })

	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments, env.ToolPrefix("pay_"))
	company.AddWorld(env.NewWorld(env.WorldSpec{Name: "chat", Version: "1.0.0"}))
	type CompanyWorlds struct{ Payments *env.Handle }
	env.DeclareWorlds[CompanyWorlds](company)

	fs := check.World(context.Background(), company)
	for _, f := range fs {
		fmt.Println(f.Code, f.Severity+":", f.Message)
	}
	fmt.Println("errors:", check.HasErrors(fs))
	// Output:
	// SH206 warning: pay_create_charge's description names a tool of payments the agent cannot call by that name: create_customer (published as pay_create_customer)
	// SH503 warning: company registers the child "chat", which no declared struct names (declared: check_test.CompanyWorlds)
	// errors: false
}

func ExampleFormat() {
	fmt.Print(check.Format([]check.Finding{
		{Pos: "company/company.go:61:1", Code: "SH503", Severity: check.SeverityWarning, Message: `company registers the child "chat", which no declared struct names (declared: company.Worlds)`},
		{Pos: "company/company.go:57:1", Code: "SH504", Severity: check.SeverityError, Message: "the composition does not seal: ..."},
	}))
	// Output:
	// company/company.go:57:1: SH504 error: the composition does not seal: ...
	// company/company.go:61:1: SH503 warning: company registers the child "chat", which no declared struct names (declared: company.Worlds)
}
