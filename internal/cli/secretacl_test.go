package cli

import (
	"strconv"
	"strings"
	"testing"
)

// sddlDACL reads the DACL part of an SDDL string, as icacls /save or
// Get-Acl's Sddl shows a file's, into aclEntry: "D:NO_ACCESS_CONTROL" is
// a NULL DACL. Only what files carry is known: allow and deny entries,
// the ID and IO flags, hex masks and the file rights' letters, and the
// well-known SIDs' two-letter names.
func sddlDACL(t *testing.T, sddl string) (dacl []aclEntry, null bool) {
	t.Helper()
	d, ok := strings.CutPrefix(sddl, "D:")
	if !ok {
		t.Fatalf("%q: no D: part", sddl)
	}
	if strings.HasPrefix(d, "NO_ACCESS_CONTROL") {
		return nil, true
	}
	d = d[strings.IndexByte(d+"(", '('):] // drop P, AI and the like
	if d == "" {
		return nil, false // an empty DACL: nobody has any access
	}
	rights := map[string]uint32{"FA": 0x1f01ff, "FR": 0x120089, "FW": 0x120116, "FX": 0x1200a0,
		"GA": genericAll, "GR": genericRead, "GW": 0x40000000, "GX": 0x20000000, "WD": writeDAC, "WO": writeOwner, "RC": 0x20000, "SD": 0x10000}
	sids := map[string]string{"WD": "S-1-1-0", "AU": "S-1-5-11", "BU": "S-1-5-32-545", "BA": "S-1-5-32-544",
		"SY": "S-1-5-18", "CO": "S-1-3-0", "OW": "S-1-3-4", "IU": "S-1-5-4"}
	for _, ace := range strings.Split(strings.Trim(d, "()"), ")(") {
		f := strings.Split(ace, ";")
		if len(f) != 6 || (f[0] != "A" && f[0] != "D") {
			t.Fatalf("%q: entry %q is not one this reader knows", sddl, ace)
		}
		e := aclEntry{Deny: f[0] == "D", Inherited: strings.Contains(f[1], "ID"), InheritOnly: strings.Contains(f[1], "IO"), SID: f[5]}
		if s, ok := sids[f[5]]; ok {
			e.SID = s
		}
		if m, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 32); strings.HasPrefix(f[2], "0x") && err == nil {
			e.Mask = uint32(m)
		} else {
			for i := 0; i+2 <= len(f[2]); i += 2 {
				r, ok := rights[f[2][i:i+2]]
				if !ok {
					t.Fatalf("%q: right %q unknown", sddl, f[2][i:i+2])
				}
				e.Mask |= r
			}
		}
		dacl = append(dacl, e)
	}
	return dacl, false
}

// TestSecretFileACL: the DACLs Windows gives a file by default where a
// DBA is likely to put one, and after the fix the warning gives.
func TestSecretFileACL(t *testing.T) {
	const me = "S-1-5-21-1004336348-1177238915-682003330-1001"
	cases := []struct {
		name, sddl string
		who        string // "" when no warning
		removes    []string
	}{
		// A folder made at the root of C: inherits Users read and execute,
		// Authenticated Users modify.
		{"under C:\\ (inherited)", "D:AI(A;ID;FA;;;BA)(A;ID;FA;;;SY)(A;ID;0x1200a9;;;BU)(A;ID;0x1301bf;;;AU)",
			`BUILTIN\Users may read it`, nil},
		// C:\ProgramData lets Users read what is made under it.
		{"under C:\\ProgramData", "D:AI(A;ID;FA;;;SY)(A;ID;FA;;;BA)(A;ID;0x1200a9;;;BU)", `BUILTIN\Users may read it`, nil},
		// The profile folder: the user, SYSTEM and Administrators only.
		{"under the user's profile", "D:AI(A;ID;FA;;;SY)(A;ID;FA;;;BA)(A;ID;FA;;;" + me + ")", "", nil},
		// What the warning's icacls leaves.
		{"after icacls /inheritance:r /grant:r", "D:PAI(A;;FR;;;BA)(A;;FR;;;SY)", "", nil},
		{"Everyone set on the file itself", "D:PAI(A;;FA;;;SY)(A;;FR;;;WD)", "Everyone may read it", []string{"S-1-1-0"}},
		{"a NULL DACL", "D:NO_ACCESS_CONTROL", "it has a NULL DACL: everyone may read it", nil},
		{"an empty DACL: nobody", "D:P", "", nil},
		// The first entry that names the right decides, as the access check.
		{"Users denied before the allow", "D:(D;;FR;;;BU)(A;ID;0x1200a9;;;BU)(A;ID;FA;;;SY)", "", nil},
		{"Users allowed before the deny", "D:(A;;FR;;;BU)(D;;FR;;;BU)", `BUILTIN\Users may read it`, []string{"S-1-5-32-545"}},
		{"Everyone denied covers Users", "D:(D;;FA;;;WD)(A;ID;FA;;;BU)", "", nil},
		{"the right to change the DACL is the right to read", "D:(A;;WD;;;AU)(A;;FA;;;SY)", "Authenticated Users may change its permissions", []string{"S-1-5-11"}},
		{"inherit-only entries are the children's", "D:(A;OICIIO;FA;;;BU)(A;;FA;;;SY)", "", nil},
		{"Users may only write", "D:(A;;0x100116;;;BU)(A;;FA;;;SY)", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dacl, null := sddlDACL(t, c.sddl)
			if got := openToOthers(dacl, null); got != c.who {
				t.Fatalf("%s: %q, want %q", c.sddl, got, c.who)
			}
			w := aclWarning(`C:\narrows\secret`, dacl, null)
			if c.who == "" {
				if w != "" {
					t.Fatalf("a warning for %s: %s", c.sddl, w)
				}
				return
			}
			want := `narrows: warning: the secret file C:\narrows\secret can be read by other users (` + c.who + `): icacls C:\narrows\secret /inheritance:r /grant:r Administrators:R SYSTEM:R`
			for _, sid := range c.removes {
				want += " /remove:g *" + sid
			}
			if w != want {
				t.Fatalf("%s:\n got %s\nwant %s", c.sddl, w, want)
			}
		})
	}
	if w := aclWarning(`C:\Program Files\narrows\secret`, []aclEntry{{SID: "S-1-1-0", Mask: fileReadData, Inherited: true}}, false); !strings.Contains(w, `icacls "C:\Program Files\narrows\secret" /inheritance:r`) {
		t.Fatalf("a path with a space is not quoted: %s", w)
	}
}
