package cli

import (
	"fmt"
	"strings"
)

// On Windows a file's permissions are its DACL, not mode bits. serve
// warns, as it warns of mode 0644 on Linux, when the DACL lets any
// ordinary user read the secret file. The decision is over aclEntry, so
// it is tested on every system with the DACLs Windows really gives; only
// reading the DACL is Windows' own (secretacl_windows.go).

// aclEntry is one access control entry of a file's DACL, in order.
type aclEntry struct {
	SID         string // e.g. S-1-5-32-545
	Mask        uint32 // the access mask
	Deny        bool   // an access-denied entry; else access-allowed
	Inherited   bool   // from the folder: icacls /inheritance:r removes it
	InheritOnly bool   // for the folder's children only: not checked against the file
}

// Access rights that matter here (winnt.h).
const (
	fileReadData = 0x1
	writeDAC     = 0x40000
	writeOwner   = 0x80000
	genericAll   = 0x10000000
	genericRead  = 0x80000000
)

// Every ordinary user's token holds these groups.
var broadSIDs = []struct{ sid, name string }{
	{"S-1-1-0", "Everyone"},
	{"S-1-5-11", "Authenticated Users"},
	{"S-1-5-32-545", `BUILTIN\Users`},
}

func broadName(sid string) string {
	for _, b := range broadSIDs {
		if strings.EqualFold(b.sid, sid) {
			return b.name
		}
	}
	return ""
}

// openRights are what let a user read the file, at once or after giving
// themselves the right: reading it, rewriting its DACL, taking it over.
var openRights = []struct {
	bits uint32
	what string
}{
	{fileReadData | genericRead | genericAll, "read it"},
	{writeDAC | genericAll, "change its permissions"},
	{writeOwner | genericAll, "take ownership of it"},
}

// openToOthers says who among all ordinary users may read a file with
// this DACL, e.g. `BUILTIN\Users may read it`, or "" when none may. A
// NULL DACL (nullDACL) lets everyone do anything. As Windows' access
// check does, each right is decided by the first entry that names it for
// one of the user's groups: a deny there wins over an allow after it.
func openToOthers(dacl []aclEntry, nullDACL bool) string {
	if nullDACL {
		return "it has a NULL DACL: everyone may read it"
	}
	for _, r := range openRights {
		for _, e := range dacl {
			name := broadName(e.SID)
			if e.InheritOnly || name == "" || e.Mask&r.bits == 0 {
				continue
			}
			if e.Deny {
				break
			}
			return name + " may " + r.what
		}
	}
	return ""
}

// aclWarning is the warning line for a secret file whose DACL lets others
// read it, with the icacls command that leaves it to Administrators and
// SYSTEM (the account a service runs as), or "" for a file kept private.
func aclWarning(path string, dacl []aclEntry, nullDACL bool) string {
	who := openToOthers(dacl, nullDACL)
	if who == "" {
		return ""
	}
	q := path
	if strings.ContainsAny(q, " &()^") {
		q = `"` + q + `"`
	}
	fix := "icacls " + q + " /inheritance:r /grant:r Administrators:R SYSTEM:R"
	// /inheritance:r drops the folder's entries; an entry set on the file
	// itself stays unless removed by name.
	seen := map[string]bool{}
	for _, e := range dacl {
		if !e.Deny && !e.Inherited && broadName(e.SID) != "" && !seen[e.SID] {
			seen[e.SID] = true
			fix += " /remove:g *" + e.SID
		}
	}
	return fmt.Sprintf("narrows: warning: the secret file %s can be read by other users (%s): %s", path, who, fix)
}
