package dbconn

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/errext"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in                string
		engine            Engine
		addr, user, db    string
		wantErr, errMatch string
	}{
		{in: "postgres://u:p4ss@db1/app", engine: Postgres, addr: "db1:5432", user: "u", db: "app"},
		{in: "postgresql://u@db1:6432", engine: Postgres, addr: "db1:6432", user: "u", db: "u"},
		{in: "mysql://root:pw@[::1]:3307/shop?tls=true", engine: MySQL, addr: "[::1]:3307", user: "root", db: "shop"},
		{in: "mariadb://root:pw@db2/", engine: MySQL, addr: "db2:3306", user: "root"},
		{in: "sqlserver://sa:Pw@sql1?database=Sales", engine: SQLServer, addr: "sql1:1433", user: "sa", db: "Sales"},
		{in: "sqlserver://sa:Pw@sql1:14330/INST?database=Sales", engine: SQLServer, addr: "sql1:14330", user: "sa", db: "Sales"},
		{in: "", wantErr: "empty"},
		{in: "db1:5432", wantErr: "no scheme"},
		{in: "oracle://u:p@db1/x", wantErr: `unknown scheme "oracle"`},
		{in: "postgres://u:p@db1:99999/x", wantErr: "invalid port"},
		{in: "postgres://u:p@/x", wantErr: "host is missing"},
		{in: "mysql://db1/x", wantErr: "user is missing"},
		{in: "postgres://u:se%zzcret@db1/x", wantErr: "invalid URL escape", errMatch: "%zz"},
		// An unencoded '/', '#' or '?' in a password: the URL would read
		// its rest as the host (or fail); the DSN is never shown.
		{in: "postgres://u:pw/Slash#42@host/db", wantErr: "%2F", errMatch: "Slash"},
		{in: "mysql://u:p@ss/w0rd@host", wantErr: "%2F", errMatch: "w0rd"},
		{in: "postgres://u:pass?w0rd@host/db", wantErr: "%3F", errMatch: "w0rd"},
		{in: "postgres://u:pass#w0rd@host/db", wantErr: "%23", errMatch: "w0rd"},
		{in: "u:pass/w0rd@db1", wantErr: "no scheme", errMatch: "w0rd"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, err := Parse(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				if !Is(err, BadDSN) || !errext.IsUser(err) {
					t.Fatalf("error %v is not a BadDSN", err)
				}
				if c.errMatch != "" && strings.Contains(err.Error(), c.errMatch) {
					t.Fatalf("error %q shows the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Engine != c.engine || d.Addr() != c.addr || d.User != c.user || d.Database != c.db {
				t.Fatalf("got %s %s %s %s", d.Engine, d.Addr(), d.User, d.Database)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://u:s3cret@db1:5432/app?sslmode=require", "postgres://u:xxxxx@db1:5432/app?sslmode=require"},
		{"postgres://u@db1/app", "postgres://u@db1/app"},
		{"sqlserver://sa@sql1?database=x&password=s3cret", "sqlserver://sa@sql1?database=x&password=xxxxx"},
		{"mysql://u:p%40ss@db1/x", "mysql://u:xxxxx@db1/x"},
		{"postgres://u@db1/x?sslmode=require&sslpassword=k3y-pass", "postgres://u@db1/x?sslmode=require&sslpassword=xxxxx"},
		{"sqlserver://sa@sql1?PassWord=s3cret", "sqlserver://sa@sql1?PassWord=xxxxx"},
		// url.Parse rejects these: all up to the last '@' goes, for where
		// the password ends cannot be known.
		{"postgres://u:se%zzcret@db1/x", "postgres://xxxxx@db1/x"},
		{"mysql://u:a b@c@db1/x", "mysql://xxxxx@db1/x"},
		{"postgres://u:pw/Slash#42@host/db", "postgres://xxxxx@host/db"},
		{"postgres://u:pw?x=1&Password=s3cret@host/db", "postgres://xxxxx@host/db"},
		{"u:s3cret@db1:5432", "u:xxxxx@db1:5432"},
		{"host=db1 user=u password=s3cret dbname=x", "host=db1 user=u password=xxxxx dbname=x"},
		{"host=db1 password='s 3cret'", "host=db1 password=xxxxx"},
		{"host=db1 Password=s3cret sslpassword=k3y", "host=db1 Password=xxxxx sslpassword=xxxxx"},
	}
	for _, c := range cases {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestScrub: the secret of every DSN that a message echoes is hidden, in
// every shape a driver writes one; the rest of the message, the server's
// words and narrows' own, stands as it was, even when the password is a
// word those sentences use.
func TestScrub(t *testing.T) {
	cases := []struct{ dsn, in, want string }{
		// Words the password happens to be are not the password.
		{"postgres://app:wrong@db1/x", `connect: postgres://app:xxxxx@db1/x: wrong user name or password for user "app": password authentication failed for user "app" (SQLSTATE 28P01)`,
			`connect: postgres://app:xxxxx@db1/x: wrong user name or password for user "app": password authentication failed for user "app" (SQLSTATE 28P01)`},
		{"mysql://user:password@db1/x", `Access denied for user 'user'@'10.0.0.1' (using password: YES) (error 1045)`,
			`Access denied for user 'user'@'10.0.0.1' (using password: YES) (error 1045)`},
		{"postgres://u:ab@db1/x", "password ab rejected; table abc", "password ab rejected; table abc"},
		// The DSN as given, echoed whole, becomes the DSN as shown.
		{"postgres://u:p%40ss-w0rd@db1/x", "cannot open postgres://u:p%40ss-w0rd@db1/x now", "cannot open postgres://u:xxxxx@db1/x now"},
		// A driver's own forms of a DSN, with any password.
		{"postgres://u:wrong@db1/x", "cannot parse `postgres://u:wrong@db1:5432/x?sslmode=bogus`: failed to configure TLS", "cannot parse `postgres://u:xxxxx@db1:5432/x?sslmode=bogus`: failed to configure TLS"},
		{"postgres://u:p@ss@db1/x", "dial postgres://u:p@ss@db1/x failed", "dial postgres://u:xxxxx@db1/x failed"},
		{"postgres://u:user@db1/x", "cannot parse `host=db1 user=u password=user dbname=x`: bad", "cannot parse `host=db1 user=u password=xxxxx dbname=x`: bad"},
		{"postgres://u:user@db1/x", "cannot parse `host=db1 password='us er' x`: bad", "cannot parse `host=db1 password=xxxxx x`: bad"},
		{"mysql://u:wrong@db1/x", "invalid DSN u:wrong@tcp(db1:3306)/x: bad", "invalid DSN u:xxxxx@tcp(db1:3306)/x: bad"},
		{"sqlserver://sa@db1?password=wrong", "login to sqlserver://sa@db1?database=x&Password=wrong&encrypt=true failed", "login to sqlserver://sa@db1?database=x&Password=xxxxx&encrypt=true failed"},
		{"Server=db1;User Id=sa;Password=wrong", "cannot use Server=db1;User Id=sa;Pwd={wr;ong};Encrypt=true", "cannot use Server=db1;User Id=sa;Pwd=xxxxx;Encrypt=true"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, err := Parse(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Scrub(c.in); got != c.want {
				t.Fatalf("Scrub:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestMySQLConfig(t *testing.T) {
	d, err := Parse("mysql://app:p%3Aw%40d@db1:3307/shop?tls=skip-verify&timeout=5s&password=zzz")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysqlConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "db1:3307" || cfg.Net != "tcp" || cfg.DBName != "shop" || cfg.User != "app" || cfg.Passwd != "p:w@d" {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.TLS == nil || !cfg.TLS.InsecureSkipVerify {
		t.Fatal("tls=skip-verify not applied")
	}
}

// TestClassifyKeepsPasswordOut: a driver's error that echoes the DSN
// loses the password in what Classify makes of it; narrows' own words stay.
func TestClassifyKeepsPasswordOut(t *testing.T) {
	d, _ := Parse("postgres://u:Hunter2-long@db1/x")
	err := Classify(d, "connect", errors.New("cannot parse `postgres://u:Hunter2-long@db1/x?connect_timeout=z`: invalid connect_timeout"))
	if strings.Contains(err.Error(), "Hunter2-long") || !strings.Contains(err.Error(), "postgres://u:xxxxx@db1/x?connect_timeout=z") {
		t.Fatalf("password in %q", err)
	}
}

func TestBackoff(t *testing.T) {
	first, most := 250*time.Millisecond, 5*time.Second
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	for n, w := range want {
		if got := Backoff(n, first, most); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, w)
		}
	}
	if got := Backoff(1000, first, most); got != most {
		t.Errorf("Backoff(1000) = %v, want the ceiling %v", got, most)
	}
}

// TestSecretParams: a password or key passphrase given as a parameter, in
// any case, is scrubbed from messages like the URL's own password.
func TestSecretParams(t *testing.T) {
	d, err := Parse("postgres://u@db1/x?Password=Hunter2-long&sslpassword=K3y-phrase")
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasPassword() {
		t.Fatal("Password= not read as the password")
	}
	msg := d.Scrub("login with postgres://u@db1/x?Password=Hunter2-long&sslpassword=K3y-phrase, key sslpassword=K3y-phrase")
	if strings.Contains(msg, "Hunter2-long") || strings.Contains(msg, "K3y-phrase") {
		t.Fatalf("scrubbed: %q", msg)
	}
	if strings.Contains(d.Redacted, "Hunter2") || strings.Contains(d.Redacted, "K3y") {
		t.Fatalf("redacted: %q", d.Redacted)
	}
}
