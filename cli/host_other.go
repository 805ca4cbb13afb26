//go:build !unix

package cli

// raiseOpenFileLimit reports no limit (0: unknown) where the platform has
// no open-file rlimit.
func raiseOpenFileLimit() (soft, hard uint64, err error) { return 0, 0, nil }
