//go:build !unix

package probe

import (
	"io/fs"
	"os/user"
)

// mayUse: Windows' ACLs are not read here; opening or creating the test
// file says what the ACL allows, in PathWords' words.
func mayUse(string, bool) error { return nil }

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "this user"
}

func ownerOf(fs.FileInfo) string { return "" }
