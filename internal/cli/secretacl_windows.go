//go:build windows

package cli

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// secretACLWarning reads the file's DACL and says, in one line, if any
// ordinary user may read it; "" if not, or if the DACL cannot be read
// (the file is read next, and that error says what is wrong).
func secretACLWarning(path string) string {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return ""
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		// No DACL at all is as open as a NULL one.
		return aclWarning(path, nil, err == windows.ERROR_OBJECT_NOT_FOUND)
	}
	if dacl == nil {
		return aclWarning(path, nil, true)
	}
	return aclWarning(path, daclEntries(dacl), false)
}

// daclEntries turns the DACL's allow and deny entries into aclEntry; the
// object and callback kinds do not occur on files and are skipped.
func daclEntries(dacl *windows.ACL) []aclEntry {
	var out []aclEntry
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if windows.GetAce(dacl, i, &ace) != nil {
			continue
		}
		t := ace.Header.AceType
		if t != windows.ACCESS_ALLOWED_ACE_TYPE && t != windows.ACCESS_DENIED_ACE_TYPE {
			continue
		}
		// Both kinds have the same layout: the SID starts at SidStart.
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		out = append(out, aclEntry{
			SID:         sid.String(),
			Mask:        uint32(ace.Mask),
			Deny:        t == windows.ACCESS_DENIED_ACE_TYPE,
			Inherited:   ace.Header.AceFlags&windows.INHERITED_ACE != 0,
			InheritOnly: ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0,
		})
	}
	return out
}
