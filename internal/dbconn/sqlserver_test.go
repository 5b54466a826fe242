package dbconn

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/errext"
)

// TestParseSQLServerForms: the ADO and ODBC connection strings Windows
// shops use, and sqlserver:// URLs, are read as SQL Server with the
// server, port, named instance, user, database and login the driver will
// use; a named instance without a port waits for the SQL Browser (port 0).
func TestParseSQLServerForms(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "linux"
	cases := []struct {
		in                        string
		host                      string
		port                      int
		instance, user, db, login string
	}{
		{"Server=tcp:db1,1433;Database=x;User Id=u;Password=p;Encrypt=true", "db1", 1433, "", "u", "x", LoginSQL},
		{`server=db1\SQL2019;Integrated Security=SSPI;Initial Catalog=Sales`, "db1", 0, "SQL2019", "", "Sales", LoginKerberos},
		{`Data Source=db1\SQL2019,14330;UID=u;PWD=p`, "db1", 14330, "SQL2019", "u", "", LoginSQL},
		{"Server=db1;Trusted_Connection=yes", "db1", 1433, "", "", "", LoginKerberos},
		{`Server=db1;User Id=CORP\alice;Password=p`, "db1", 1433, "", `CORP\alice`, "", LoginNTLM},
		{"odbc:server=tcp:db1,1533;uid=u;pwd={a;b}", "db1", 1533, "", "u", "", LoginSQL},
		{`ODBC:Server={db1\INST};Database={x}`, "db1", 0, "INST", "", "x", LoginKerberos},
		{"sqlserver://u:p@db1/INST?database=x", "db1", 0, "INST", "u", "x", LoginSQL},
		{"sqlserver://u:p@db1:14330/INST", "db1", 14330, "INST", "u", "", LoginSQL},
		{"sqlserver://db1?database=x", "db1", 1433, "", "", "x", LoginKerberos},
		{"sqlserver://u@db1?authenticator=krb5&krb5-realm=EXAMPLE.COM", "db1", 1433, "", "u", "", LoginKerberos},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, err := Parse(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Engine != SQLServer || d.Host != c.host || d.Port != c.port || d.Instance != c.instance || d.User != c.user || d.Database != c.db || d.Login != c.login {
				t.Fatalf("got %s host %q port %d instance %q user %q db %q login %q", d.Engine, d.Host, d.Port, d.Instance, d.User, d.Database, d.Login)
			}
		})
	}
	// Still refused: an ADO string naming no server, a libpq key=value
	// string, a port that is no number.
	for in, want := range map[string]string{
		"Server=;User Id=u;Password=p":           "names no server",
		"host=db1 user=u password=s3cret":        "no scheme",
		"Server=db1,notaport;User Id=u":          "port",
		"Server=db1;Integrated Security=false":   "no user, and integrated security is off",
		"Server=db1;User Id=u;authenticator=foo": `unknown authenticator "foo"`,
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) || !Is(err, BadDSN) {
			t.Errorf("Parse(%q): %v, want a BadDSN saying %q", in, err, want)
		}
	}
}

// TestConnStringSecretNeverShown: whatever quotes or braces a password
// uses, and whatever the driver makes of them, no piece of it appears in
// the redacted DSN, in a parse error, in a classified driver error that
// repeats it, nor in the brief form of one.
func TestConnStringSecretNeverShown(t *testing.T) {
	cases := []struct {
		in     string
		pieces []string // every piece of the secret
	}{
		{`Server=db1;User Id=u;Password="Kq7w;Pw=9";Database=x`, []string{"Kq7w", "Pw=9"}},
		{`Server=db1;Password="a""Qz;9Lm=";User Id=u`, []string{"Qz", "9Lm"}},
		{`Server=db1;PWD=Ab"3;De"4f;User Id=u`, []string{"Ab", "3;De", "4f"}}, // a quote mid-value: ADO reads up to the second ';'
		{`Server=db1;Password='Gh5;Jk=6';User Id=u`, []string{"Gh5", "Jk=6"}},
		{`Server=db1;Password={Lm7;No}}8=};User Id=u`, []string{"Lm7", "No}}8", "No}8"}},
		{`odbc:server=db1;uid=u;pwd={Pq9;Rs=1{}}x}`, []string{"Pq9", "Rs=1"}},
		{`odbc:server=db1;uid=u;PWD = {Tu2 ;Vw3}`, []string{"Tu2", "Vw3"}},
		{`Server=db1;User Id=u;Password="Xy4;never closed;Database=x`, []string{"Xy4", "never closed"}},
		{`odbc:server=db1;pwd={Za5;never closed`, []string{"Za5", "never closed"}},
		{`odbc:server=db1;pwd={Bc6}x;uid=u`, []string{"Bc6"}}, // text after the brace: the ODBC reader refuses it
		{`Server=db1;User Id=u;Change Password=Cd7Ef8;Password=Gh9Ij0`, []string{"Cd7Ef8", "Gh9Ij0"}},
		{`Server=db1;User Id=u;Password=Kl1://Mn2@db2`, []string{"Kl1", "Mn2"}},
		{`Server=db1;Application Name={my;app;Password=Op3Qr4`, []string{"Op3Qr4"}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			shown := []string{Redact(c.in)}
			d, err := Parse(c.in)
			if err != nil {
				shown = append(shown, err.Error())
			} else {
				shown = append(shown, d.Redacted, d.Where(),
					// A driver error that repeats the connection string, or
					// its password as the driver read it.
					Classify(d, "connect", fmt.Errorf("login failed with %s", c.in)).Error(),
					Classify(d, "connect", fmt.Errorf("login failed with Password=%s;Encrypt=true", d.password)).Error(),
					d.Brief(errors.New("mssql: login error with pwd="+d.password)))
			}
			for _, s := range shown {
				for _, p := range c.pieces {
					if strings.Contains(s, p) {
						t.Fatalf("%q shows %q of the password", s, p)
					}
				}
			}
			if !strings.Contains(shown[0], Mask) {
				t.Fatalf("Redact gave %q: no mask", shown[0])
			}
		})
	}
}

// TestRedactConnString: everything but the secrets is shown as written.
func TestRedactConnString(t *testing.T) {
	for in, want := range map[string]string{
		"Server=tcp:db1,1433;Database=x;User Id=u;Password=p;Encrypt=true": "Server=tcp:db1,1433;Database=x;User Id=u;Password=xxxxx;Encrypt=true",
		`server=db1\SQL2019;Integrated Security=SSPI`:                      `server=db1\SQL2019;Integrated Security=SSPI`,
		`odbc:server=db1;pwd={a;b}}c};uid=u`:                               `odbc:server=db1;pwd=xxxxx;uid=u`,
		`Server=db1;Password="x;y""z";Database=d`:                          `Server=db1;Password=xxxxx;Database=d`,
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoginOf: integrated authentication where asked for or where no user
// is given (SSPI on Windows, Kerberos elsewhere), NTLM for DOMAIN\user off
// Windows, a SQL Server login otherwise; authenticator= decides alone.
func TestLoginOf(t *testing.T) {
	cases := []struct {
		params         map[string]string
		user           string
		linux, windows string // the login chosen, or "error: ..." a piece of the error
	}{
		{nil, "sa", LoginSQL, LoginSQL},
		{nil, "", LoginKerberos, LoginSSPI},
		{map[string]string{"integrated security": "SSPI"}, "", LoginKerberos, LoginSSPI},
		{map[string]string{"integrated security": "true"}, "svc@EXAMPLE.COM", LoginKerberos, LoginSSPI},
		{map[string]string{"trusted_connection": "yes"}, "", LoginKerberos, LoginSSPI},
		{map[string]string{"trusted_connection": "no"}, "sa", LoginSQL, LoginSQL},
		{map[string]string{"integrated security": "false"}, "", "error: integrated security is off", "error: integrated security is off"},
		{nil, `CORP\alice`, LoginNTLM, LoginSSPI},
		{map[string]string{"authenticator": "krb5"}, "sa", LoginKerberos, LoginKerberos},
		{map[string]string{"authenticator": "ntlm"}, "", LoginNTLM, LoginNTLM},
		{map[string]string{"authenticator": "winsspi"}, "", "error: works only on Windows", LoginSSPI},
		{map[string]string{"authenticator": "ldap"}, "", `error: unknown authenticator "ldap"`, `error: unknown authenticator "ldap"`},
	}
	for _, c := range cases {
		for system, want := range map[string]string{"linux": c.linux, "windows": c.windows} {
			got, err := loginOf(c.params, c.user, system)
			if e, isErr := strings.CutPrefix(want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), e) {
					t.Errorf("%s %v user %q: %q, %v; want an error saying %q", system, c.params, c.user, got, err, e)
				}
				continue
			}
			if err != nil || got != want {
				t.Errorf("%s %v user %q: %q, %v; want %q", system, c.params, c.user, got, err, want)
			}
		}
	}
}

// fakeBrowser answers SSRP requests on a loopback UDP port with reply,
// and records what it was sent.
func fakeBrowser(t *testing.T, reply []byte) (port int, got chan []byte) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got = make(chan []byte, 10)
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			got <- append([]byte(nil), buf[:n]...)
			if reply != nil {
				c.WriteToUDP(reply, from)
			}
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port, got
}

func svrResp(body string) []byte {
	return append([]byte{0x05, byte(len(body)), byte(len(body) >> 8)}, body...)
}

// TestResolveInstance: narrows sends CLNT_UCAST_INST for the instance and
// takes its TCP port from the reply, in any case of the name; an instance
// the Browser does not list, one without TCP, and a reply that is not
// SSRP are each one line naming the instance.
func TestResolveInstance(t *testing.T) {
	defer func(p int) { browserPort = p }(browserPort)
	two := "ServerName;SQL1;InstanceName;MSSQLSERVER;IsClustered;No;Version;16.0.1000.6;tcp;1433;;" +
		"ServerName;SQL1;InstanceName;SQL2019;IsClustered;No;Version;15.0.2000.5;tcp;50123;np;\\\\SQL1\\pipe\\MSSQL$SQL2019\\sql\\query;;"
	cases := []struct {
		name  string
		reply []byte
		port  int
		want  string
	}{
		{"listed", svrResp(two), 50123, ""},
		{"not listed", svrResp(strings.Replace(two, "SQL2019", "OTHER", 1)), 0, "knows no instance sql2019 (it lists MSSQLSERVER, OTHER)"},
		{"no tcp", svrResp("ServerName;SQL1;InstanceName;SQL2019;IsClustered;No;Version;15.0.2000.5;np;\\\\SQL1\\pipe\\sql\\query;;"), 0, "does not listen on TCP"},
		{"not ssrp", []byte("HTTP/1.1 400"), 0, "not with an SSRP reply"},
		{"silent", nil, 0, "did not answer for instance sql2019 within 1.5s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got chan []byte
			browserPort, got = fakeBrowser(t, c.reply)
			d, err := Parse(`Server=127.0.0.1\sql2019;User Id=u;Password=Secret-9`)
			if err != nil {
				t.Fatal(err)
			}
			err = d.Resolve(t.Context(), 1500*time.Millisecond)
			if req := <-got; string(req) != "\x04sql2019\x00" {
				t.Fatalf("sent %q, want CLNT_UCAST_INST for sql2019", req)
			}
			if c.want == "" {
				if err != nil || d.Port != c.port || d.Where() != `127.0.0.1\sql2019 (127.0.0.1:50123)` {
					t.Fatalf("port %d (%s), %v; want %d", d.Port, d.Where(), err, c.port)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errext.IsUser(err) || strings.Contains(err.Error(), "Secret-9") {
				t.Fatalf("error %v, want a user-fixable one saying %q, without the password", err, c.want)
			}
		})
	}
}

// TestSSPILogin: where integrated security is asked for, SSPI logs in as
// the running account whatever User Id says, as ADO.NET does; a
// DOMAIN\user with its password is kept for SSPI to use.
func TestSSPILogin(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "windows"
	for dsn, user := range map[string]string{
		"Server=db1;Integrated Security=SSPI;User Id=sa;Password=p": "",
		`Server=db1;User Id=CORP\alice;Password=p`:                  `CORP\alice`,
		"Server=db1": "",
	} {
		d, err := Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := parseMSSQL(d.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := setLogin(d, &cfg); err != nil || d.Login != LoginSSPI || cfg.Parameters["authenticator"] != "winsspi" || cfg.User != user {
			t.Errorf("%s: login %q authenticator %q user %q, %v; want SSPI as %q", dsn, d.Login, cfg.Parameters["authenticator"], cfg.User, err, user)
		}
	}
}
