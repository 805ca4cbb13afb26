package main

// The README's program prints the amount it charged.
func Example() {
	main()
	// Output: 500
}
