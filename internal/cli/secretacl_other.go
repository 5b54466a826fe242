//go:build !windows

package cli

// secretACLWarning is Windows' check of the secret file's DACL; elsewhere
// readSecretFile checks the mode bits.
func secretACLWarning(path string) string { return "" }
