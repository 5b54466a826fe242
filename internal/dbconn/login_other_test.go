//go:build !windows

package dbconn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/errext"
)

// TestKerberosReady: integrated authentication off Windows is Kerberos;
// before any connection narrows says in one line which piece is missing
// (the configuration, a ticket or keytab, the realm, the file named),
// and passes a kinit ticket cache (KRB5CCNAME, FILE: or not) to the
// driver, which reads only file caches.
func TestKerberosReady(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	os.WriteFile(conf, []byte("[libdefaults]\n default_realm = EXAMPLE.COM\n"), 0o600)
	noRealm := filepath.Join(dir, "norealm.conf")
	os.WriteFile(noRealm, []byte("[libdefaults]\n"), 0o600)
	cache := filepath.Join(dir, "krb5cc")
	os.WriteFile(cache, []byte("x"), 0o600)
	keytab := filepath.Join(dir, "svc.keytab")
	os.WriteFile(keytab, []byte("x"), 0o600)
	cases := []struct {
		name, dsn  string
		ccname     string
		want       string // a piece of the error; "" for none
		wantCCache string // the cache handed to the driver
	}{
		{"no configuration", "Server=db1;Integrated Security=SSPI;krb5-configfile=" + filepath.Join(dir, "none.conf"), "", "no Kerberos configuration at " + filepath.Join(dir, "none.conf"), ""},
		{"no ticket", "Server=db1;Integrated Security=SSPI;krb5-configfile=" + conf, "", "no Kerberos ticket or keytab: run kinit", ""},
		{"kinit's cache", "Server=db1;Integrated Security=SSPI;krb5-configfile=" + conf, "FILE:" + cache, "", cache},
		{"cache named", "Server=db1;Trusted_Connection=yes;krb5-credcachefile=" + cache + ";krb5-configfile=" + conf, "", "", cache},
		{"cache missing", "Server=db1;Trusted_Connection=yes;krb5-configfile=" + conf, filepath.Join(dir, "gone"), "the ticket cache " + filepath.Join(dir, "gone") + " does not exist", ""},
		{"keyring cache", "Server=db1;Integrated Security=SSPI;krb5-configfile=" + conf, "KEYRING:persistent:0", "is not a file", ""},
		{"keytab", "Server=db1;Integrated Security=SSPI;User Id=svc;krb5-keytabfile=" + keytab + ";krb5-configfile=" + conf, "", "", ""},
		{"keytab without realm", "Server=db1;Integrated Security=SSPI;User Id=svc;krb5-keytabfile=" + keytab + ";krb5-configfile=" + noRealm, "", "no realm: write the user as USER@REALM", ""},
		{"keytab missing", "Server=db1;Integrated Security=SSPI;User Id=svc@EXAMPLE.COM;krb5-keytabfile=" + filepath.Join(dir, "gone.keytab") + ";krb5-configfile=" + conf, "", "the keytab " + filepath.Join(dir, "gone.keytab") + " does not exist", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KRB5CCNAME", c.ccname)
			t.Setenv("KRB5_CONFIG", "")
			t.Setenv("KRB5_KTNAME", "")
			d, err := Parse(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if d.Login != LoginKerberos {
				t.Fatalf("login %q, want Kerberos", d.Login)
			}
			cfg, err := parseMSSQL(d.Raw)
			if err != nil {
				t.Fatal(err)
			}
			err = setLogin(d, &cfg)
			if cfg.Parameters["authenticator"] != "krb5" {
				t.Fatalf("authenticator %q, want krb5", cfg.Parameters["authenticator"])
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := cfg.Parameters["krb5-credcachefile"]; got != c.wantCCache {
					t.Fatalf("ticket cache %q, want %q", got, c.wantCCache)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errext.IsUser(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v: want one user-fixable line saying %q", err, c.want)
			}
		})
	}
}
