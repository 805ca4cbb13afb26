//go:build race

package composition_test

func init() { raceBuild = true }
