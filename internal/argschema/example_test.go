package argschema_test

import (
	"fmt"
	"reflect"

	"github.com/seahaven/seahaven/internal/argschema"
)

func ExampleSchema() {
	type ChargeArgs struct {
		Amount   int64   `json:"amount" doc:"Amount in cents." min:"1"`
		Currency string  `json:"currency" enum:"usd,eur" default:"usd"`
		Memo     *string `json:"memo" maxlen:"140"`
	}
	schema, err := argschema.Schema(reflect.TypeFor[ChargeArgs]())
	if err != nil {
		panic(err)
	}
	fmt.Println(string(schema))
	// Output:
	// {"type":"object","properties":{"amount":{"type":"integer","description":"Amount in cents.","minimum":1},"currency":{"type":"string","default":"usd","enum":["usd","eur"]},"memo":{"type":["string","null"],"maxLength":140}},"required":["amount"],"additionalProperties":false}
}

func ExampleDecode() {
	type ChargeArgs struct {
		Amount   int64   `json:"amount" min:"1"`
		Currency string  `json:"currency" enum:"usd,eur" default:"usd"`
		Memo     *string `json:"memo"`
	}
	v, err := argschema.Decode(reflect.TypeFor[ChargeArgs](), []byte(`{"amount": 500}`))
	if err != nil {
		panic(err)
	}
	args := v.Interface().(ChargeArgs)
	fmt.Println(args.Amount, args.Currency, args.Memo == nil)
	// Output:
	// 500 usd true
}

func ExampleError() {
	type LineItem struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty" min:"1"`
	}
	type OrderArgs struct {
		Items []LineItem `json:"items"`
	}
	for _, raw := range []string{
		`{"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": "2"}]}`,
		`{"itmes": []}`,
		`{"items": [{"sku": "a", "qty": 1.5}]}`,
	} {
		_, err := argschema.Decode(reflect.TypeFor[OrderArgs](), []byte(raw))
		fmt.Println(err)
		if e, ok := err.(*argschema.Error); ok {
			fmt.Printf("  Field=%q Problem=%q\n", e.Field, e.Problem)
		}
	}
	// Output:
	// invalid arguments: field "items[1].qty": expected integer, got string
	//   Field="items[1].qty" Problem="expected integer, got string"
	// invalid arguments: unknown field "itmes" (known fields: items)
	//   Field="" Problem="unknown field \"itmes\" (known fields: items)"
	// invalid arguments: field "items[0].qty": expected integer, got non-integral number 1.5
	//   Field="items[0].qty" Problem="expected integer, got non-integral number 1.5"
}
