//go:build race

package cli

func init() { buildFlags = append(buildFlags, "-race") }
