//go:build !windows

package dbconn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/microsoft/go-mssqldb/integratedauth/krb5"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/narrows/narrows/internal/untrusted"
)

// Off Windows, integrated authentication to SQL Server is Kerberos: the
// driver's krb5 authenticator (gokrb5, pure Go) with a ticket cache from
// kinit, or a keytab. It adds about 1 MB to the binary.

// kerberosReady checks, before any connection, that the driver's krb5
// authenticator has what it needs, and says in one line what is missing:
// the driver's own errors name its parameters, not what to do.
func kerberosReady(d *DSN, cfg *msdsn.Config) error {
	fail := func(err error, what string) error {
		return &Error{Kind: Auth, Err: err, Msg: fmt.Sprintf("connect: %s: %s: %s", d.Redacted, LoginName(LoginKerberos), what)}
	}
	p := cfg.Parameters
	if p["krb5-credcachefile"] == "" && p["krb5-keytabfile"] == "" {
		// gokrb5 reads file caches only, and the driver looks only at
		// KRB5CCNAME: take kinit's default file too.
		cc := os.Getenv("KRB5CCNAME")
		switch {
		case cc == "":
			if def := fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid()); fileThere(def) {
				cc = def
			}
		case strings.HasPrefix(cc, "FILE:"):
			cc = cc[len("FILE:"):]
		case !strings.HasPrefix(cc, "/"):
			return fail(nil, fmt.Sprintf("the ticket cache KRB5CCNAME=%s is not a file, and only file caches can be read: run KRB5CCNAME=FILE:/tmp/krb5cc_narrows kinit USER@REALM, and run narrows with that KRB5CCNAME", cc))
		}
		if cc != "" {
			p["krb5-credcachefile"] = cc
		}
	}
	_, err := krb5.AuthProviderFunc.GetIntegratedAuthenticator(*cfg)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, krb5.ErrRequiredParametersMissing):
		return fail(err, "no Kerberos ticket or keytab: run kinit USER@REALM first (its ticket cache is KRB5CCNAME or /tmp/krb5cc_UID), or give krb5-keytabfile=PATH with User Id=USER@REALM")
	case errors.Is(err, krb5.ErrKrb5ConfigFileDoesNotExist), errors.Is(err, fs.ErrNotExist) && !errors.Is(err, krb5.ErrKeytabFileDoesNotExist) && !errors.Is(err, krb5.ErrCredCacheFileDoesNotExist):
		return fail(err, fmt.Sprintf("no Kerberos configuration at %s: install the realm's krb5.conf there, or give krb5-configfile=PATH (or set KRB5_CONFIG)", krb5Conf(p)))
	case errors.Is(err, krb5.ErrRealmRequiredWithKeytab), errors.Is(err, krb5.ErrRealmRequiredWithUsernameAndPassword):
		return fail(err, "no realm: write the user as USER@REALM, give krb5-realm=REALM, or set default_realm in krb5.conf")
	case errors.Is(err, krb5.ErrUsernameRequiredWithKeytab):
		return fail(err, "a keytab needs the user it holds keys for: add User Id=USER@REALM")
	case errors.Is(err, krb5.ErrKeytabFileDoesNotExist):
		return fail(err, fmt.Sprintf("the keytab %s does not exist: give krb5-keytabfile=PATH of one that does", p["krb5-keytabfile"]))
	case errors.Is(err, krb5.ErrCredCacheFileDoesNotExist):
		return fail(err, fmt.Sprintf("the ticket cache %s does not exist: run kinit USER@REALM first", p["krb5-credcachefile"]))
	}
	return fail(err, d.Scrub(untrusted.OneLine(err.Error())))
}

// krb5Conf is the Kerberos configuration the driver reads.
func krb5Conf(p map[string]string) string {
	for _, f := range []string{p["krb5-configfile"], os.Getenv("KRB5_CONFIG")} {
		if f != "" {
			return f
		}
	}
	return "/etc/krb5.conf"
}

func fileThere(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}
