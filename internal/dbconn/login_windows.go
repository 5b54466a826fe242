package dbconn

import (
	"fmt"

	"github.com/microsoft/go-mssqldb/msdsn"

	// SSPI: integrated authentication as the running Windows account (the
	// driver imports it on Windows too; named here because narrows
	// chooses it by name).
	_ "github.com/microsoft/go-mssqldb/integratedauth/winsspi"
)

// kerberosReady: on Windows, integrated authentication is SSPI, which
// speaks Kerberos itself; the driver's krb5 authenticator is not built in.
func kerberosReady(d *DSN, _ *msdsn.Config) error {
	return &Error{Kind: BadDSN, Msg: fmt.Sprintf("connect: %s: authenticator=krb5 is not built into narrows for Windows: leave it out, and Integrated Security=SSPI logs in through Windows (SSPI), with Kerberos where the domain offers it", d.Redacted)}
}
