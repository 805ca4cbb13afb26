//go:build race

package sqlitestore_test

func init() { raceBuild = true }
