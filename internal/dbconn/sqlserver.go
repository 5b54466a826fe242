package dbconn

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"

	"github.com/microsoft/go-mssqldb/msdsn"
)

// SQL Server's connection strings: besides sqlserver:// URLs, go-mssqldb
// reads the ADO form (Server=db1,1433;Database=x;User Id=u;Password=p) and
// the ODBC form (odbc:server=db1;pwd={p;w}), the ones Windows shops copy
// out of their applications' configuration. narrows hands them to the
// driver as they are; it reads them itself only to name the server and
// to hide the password.

// How a SQL Server session logs in.
const (
	LoginSQL      = "sql"      // a SQL Server login: user and password
	LoginSSPI     = "sspi"     // Windows: the running account (or DOMAIN\user) through SSPI
	LoginKerberos = "kerberos" // Linux, macOS: a Kerberos ticket cache or keytab
	LoginNTLM     = "ntlm"     // not Windows: DOMAIN\user and its password, NTLM
)

// goos is the system narrows runs on; tests set it to check the choices
// made for another.
var goos = runtime.GOOS

// serverKeys name the server in an ADO or ODBC connection string: one of
// them makes a string without "://" a SQL Server connection string.
var serverKeys = map[string]bool{"server": true, "data source": true, "address": true, "addr": true, "network address": true}

// connSecretKeys are the keys whose values are never shown.
var connSecretKeys = map[string]bool{"password": true, "pwd": true, "passwd": true, "change password": true, "sslpassword": true}

// connKey is a key as the driver compares it: lower case, spaces single.
func connKey(k string) string { return strings.Join(strings.Fields(strings.ToLower(k)), " ") }

// hasODBCPrefix says whether s is the ODBC form, in any case.
func hasODBCPrefix(s string) bool { return len(s) >= 5 && strings.EqualFold(s[:5], "odbc:") }

// isConnString says whether s is an ADO or ODBC connection string rather
// than a URL: odbc:..., or key=value pairs one of which names the server.
func isConnString(s string) bool {
	s = strings.TrimSpace(s)
	if hasODBCPrefix(s) {
		return true
	}
	// A URL's scheme comes before any '=' or ';'.
	if i := strings.Index(s, "://"); i >= 0 && !strings.ContainsAny(s[:i], "=;") {
		return false
	}
	for _, p := range connPairs(s) {
		if serverKeys[p.key] {
			return true
		}
	}
	return false
}

// connPair is one key=value of a connection string: the value is
// s[vs:ve], ve at the ';' that ends it or the end of s.
type connPair struct {
	key    string
	vs, ve int
}

// connPairs splits a connection string (after any odbc: prefix, which it
// skips) into its pairs. A secret's value is read as far as any reader
// could take it (valueEnd), so that it is hidden whatever the driver
// makes of its quotes; any other value ends at the next ';', so that no
// secret key is skipped as part of a value whose quote never closes.
func connPairs(s string) []connPair {
	var out []connPair
	i := 0
	if hasODBCPrefix(s) {
		i = 5
	}
	for i < len(s) {
		j := i
		for j < len(s) && s[j] != '=' && s[j] != ';' {
			j++
		}
		if j == len(s) {
			break
		}
		if s[j] == ';' {
			i = j + 1
			continue
		}
		key := connKey(s[i:j])
		ve := strings.IndexByte(s[j+1:], ';')
		switch {
		case connSecretKeys[key]:
			ve = valueEnd(s, j+1)
		case ve < 0:
			ve = len(s)
		default:
			ve += j + 1
		}
		out = append(out, connPair{key: key, vs: j + 1, ve: ve})
		i = ve + 1
	}
	return out
}

// valueEnd is where the value starting at s[vs] ends: the furthest of
// what the ADO reader takes (';' outside double quotes, wherever they
// stand, "" inside them a quote), an ODBC braced value ({...}, }} inside
// it a brace) and an ADO.NET single-quoted one. A quote or brace never
// closed runs to the end of s: its secret is hidden whole.
func valueEnd(s string, vs int) int {
	end := len(s)
	// The ADO reader: double quotes toggle anywhere in the value.
	in := false
	for i := vs; i < len(s); i++ {
		switch {
		case s[i] == '"' && in && i+1 < len(s) && s[i+1] == '"':
			i++
		case s[i] == '"':
			in = !in
		case s[i] == ';' && !in:
			end = i
			i = len(s)
		}
	}
	v := strings.TrimLeft(s[vs:], " \t")
	start := len(s) - len(v)
	closer := map[byte]byte{'{': '}', '\'': '\''}
	if len(v) > 0 && closer[v[0]] != 0 {
		c := closer[v[0]]
		closed := len(s)
		for i := start + 1; i < len(s); i++ {
			if s[i] == c {
				if i+1 < len(s) && s[i+1] == c {
					i++
					continue
				}
				closed = i
				break
			}
		}
		if semi := strings.IndexByte(s[min(closed, len(s)):], ';'); closed < len(s) && semi >= 0 {
			end = max(end, closed+semi)
		} else {
			end = len(s)
		}
	}
	return end
}

// redactConnString hides the value of every secret key of an ADO or ODBC
// connection string.
func redactConnString(s string) string {
	var b strings.Builder
	last := 0
	for _, p := range connPairs(s) {
		if connSecretKeys[p.key] && p.ve > p.vs {
			b.WriteString(s[last:p.vs])
			b.WriteString(Mask)
			last = p.ve
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// connSecrets are the secret values as written, quotes and all, and
// without their quotes or braces: forms a message might repeat.
func connSecrets(s string) []string {
	var out []string
	for _, p := range connPairs(s) {
		if !connSecretKeys[p.key] {
			continue
		}
		v := strings.TrimSpace(s[p.vs:p.ve])
		out = append(out, v)
		if len(v) >= 2 && strings.ContainsRune(`"'{`, rune(v[0])) {
			out = append(out, v[1:len(v)-1])
		}
	}
	return out
}

// msdsnForm is s as go-mssqldb tells its forms apart: it knows only
// "sqlserver://" and "odbc:" in lower case.
func msdsnForm(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case hasODBCPrefix(s):
		return "odbc:" + s[5:]
	case len(s) > 12 && strings.EqualFold(s[:12], "sqlserver://"):
		return "sqlserver://" + s[12:]
	}
	return s
}

// parseMSSQL is msdsn.Parse with the server read as SQL Server's tools
// read it in every form: the ODBC reader leaves "tcp:" and ",PORT" in the
// host, where ADO takes them apart.
func parseMSSQL(s string) (msdsn.Config, error) {
	cfg, err := msdsn.Parse(msdsnForm(s))
	if err != nil {
		return cfg, err
	}
	if hasODBCPrefix(strings.TrimSpace(s)) {
		// The ODBC reader knows none of ODBC's short names for the user,
		// password and database, which ODBC strings use most.
		for _, k := range []struct {
			short string
			to    *string
		}{{"uid", &cfg.User}, {"pwd", &cfg.Password}, {"initial catalog", &cfg.Database}} {
			if v, ok := cfg.Parameters[k.short]; ok && *k.to == "" {
				*k.to = v
			}
		}
	}
	host := strings.TrimPrefix(cfg.Host, "tcp:")
	if h, port, ok := strings.Cut(host, ","); ok {
		n, err := strconv.ParseUint(strings.TrimSpace(port), 10, 16)
		if err != nil || n == 0 {
			return cfg, fmt.Errorf("invalid port %q after the server's comma: use HOST,PORT with a port from 1 to 65535", port)
		}
		host, cfg.Port = strings.TrimSpace(h), n
	}
	if host != cfg.Host {
		cfg.Host = host
		if !cfg.HostInCertificateProvided && cfg.TLSConfig != nil {
			cfg.TLSConfig.ServerName = host
		}
	}
	return cfg, nil
}

// parseConnString reads an ADO or ODBC connection string. Its errors
// show the string only with its secrets hidden.
func parseConnString(s string) (*DSN, error) {
	red := redactConnString(s)
	secrets := connSecrets(s)
	cfg, err := parseMSSQL(s)
	if err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "unexpected") {
			// The ODBC reader names a character of the string, perhaps
			// of the password.
			msg = "a braced value {...} is not closed, or something other than ';' follows its closing brace (write } inside braces as }})"
		}
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("connection string %q: %s", red, scrubAll(msg, secrets))}
	}
	if strings.TrimSpace(cfg.Parameters[msdsn.Server]) == "" {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("connection string %q names no server: add Server=HOST (HOST\\INSTANCE for a named instance, HOST,PORT for a port)", red)}
	}
	d := &DSN{Engine: SQLServer, Raw: s, Redacted: red, Host: cfg.Host, Port: int(cfg.Port), Instance: cfg.Instance,
		User: cfg.User, Database: cfg.Database, Params: url.Values{}, password: cfg.Password}
	for k, v := range cfg.Parameters {
		if connSecretKeys[connKey(k)] {
			d.secrets = append(d.secrets, v)
			continue
		}
		d.Params.Set(k, v)
	}
	d.secrets = append(d.secrets, secrets...)
	if d.Port == 0 && d.Instance == "" {
		d.Port = defaultPorts[SQLServer]
	}
	if d.Login, err = loginOf(cfg.Parameters, d.User, goos); err != nil {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("connection string %q: %v", red, err)}
	}
	return d, nil
}

// yes reads a connection string's boolean as ADO and ODBC spell it.
func yes(v string) (val, set bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "sspi", "1":
		return true, true
	case "false", "no", "0":
		return false, true
	}
	return false, false
}

// integratedAsked reads Integrated Security and Trusted_Connection:
// whether integrated authentication is asked for, and whether either is
// given at all.
func integratedAsked(params map[string]string) (integrated, given bool) {
	for _, k := range []string{"integrated security", "trusted_connection"} {
		if v, set := yes(params[k]); set {
			integrated, given = integrated || v, true
		}
	}
	return integrated, given
}

// loginOf chooses how a SQL Server session logs in, from the connection
// string's parameters (keys in lower case), its user and the system:
// integrated authentication where it is asked for (Integrated
// Security=SSPI, Trusted_Connection=yes) or where no user is given, SSPI
// on Windows and Kerberos elsewhere; DOMAIN\user is NTLM off Windows; any
// other user is a SQL Server login. authenticator= names the way itself.
func loginOf(params map[string]string, user, system string) (string, error) {
	windows := system == "windows"
	switch a := strings.ToLower(params["authenticator"]); a {
	case "":
	case "krb5":
		return LoginKerberos, nil
	case "ntlm":
		return LoginNTLM, nil
	case "winsspi":
		if !windows {
			return "", errors.New("authenticator=winsspi works only on Windows: elsewhere use Kerberos (Integrated Security=SSPI, or authenticator=krb5)")
		}
		return LoginSSPI, nil
	default:
		return "", fmt.Errorf("unknown authenticator %q: use krb5 or ntlm (on Windows also winsspi), or leave it out", a)
	}
	integrated, asked := integratedAsked(params)
	switch {
	case asked && !integrated && user == "":
		return "", errors.New("no user, and integrated security is off: give User Id=USER;Password=PASSWORD, or Integrated Security=SSPI to log in as the account that runs narrows")
	case integrated || user == "":
		if windows {
			return LoginSSPI, nil
		}
		return LoginKerberos, nil
	case strings.Contains(user, `\`):
		if windows {
			return LoginSSPI, nil
		}
		return LoginNTLM, nil
	}
	return LoginSQL, nil
}

// LoginName is the login as a DBA names it, for messages.
func LoginName(login string) string {
	switch login {
	case LoginSSPI:
		return "integrated authentication (Windows SSPI)"
	case LoginKerberos:
		return "integrated authentication (Kerberos)"
	case LoginNTLM:
		return "NTLM (DOMAIN\\user)"
	}
	return "a SQL Server login"
}

// setLogin makes the driver log in the way d.Login says. Where narrows
// chose integrated authentication, it names the authenticator, so that a
// failure is an error and not, as the driver would do, a silent SQL
// Server login with no user.
func setLogin(d *DSN, cfg *msdsn.Config) error {
	if cfg.Parameters == nil {
		cfg.Parameters = map[string]string{}
	}
	_, named := cfg.Parameters["authenticator"]
	switch d.Login {
	case LoginSSPI:
		if !named {
			cfg.Parameters["authenticator"] = "winsspi"
		}
		if asked, _ := integratedAsked(cfg.Parameters); asked && !strings.Contains(cfg.User, `\`) {
			// As ADO.NET does: integrated security logs in as the running
			// account, whatever User Id says.
			cfg.User, cfg.Password = "", ""
		}
	case LoginKerberos:
		if !named {
			cfg.Parameters["authenticator"] = "krb5"
		}
		return kerberosReady(d, cfg)
	}
	return nil
}
