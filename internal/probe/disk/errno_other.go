//go:build !unix && !windows

package disk

func isNoSpace(err error) bool  { return false }
func isReadOnly(err error) bool { return false }
