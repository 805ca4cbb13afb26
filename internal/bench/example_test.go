package bench_test

import (
	"fmt"

	"github.com/seahaven/seahaven/internal/bench"
)

func ExampleParseToolMix() {
	mix, err := bench.ParseToolMix("invoice:3, list_tools")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range mix {
		fmt.Println(e.Tool, e.Weight)
	}
	fmt.Println(bench.FormatToolMix(mix))
	_, err = bench.ParseToolMix("invoice:0")
	fmt.Println(err)
	// Output:
	// invoice 3
	// list_tools 1
	// invoice:3,list_tools:1
	// bench: tool mix "invoice:0": weight of "invoice" must be a positive integer, got "0"
}

func ExampleExampleArgs() {
	args, err := bench.ExampleArgs([]byte(`{"type":"object","properties":{"amount":{"type":"integer","minimum":1},"memo":{"type":"string"}},"required":["amount"]}`))
	fmt.Println(string(args), err)
	// Output:
	// {"amount":1} <nil>
}
