package dbconn

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/untrusted"
)

// Engine is a database engine family.
type Engine string

// The engines narrows speaks to, named after their DSN schemes.
const (
	Postgres  Engine = "postgres"
	MySQL     Engine = "mysql" // MySQL and MariaDB
	SQLServer Engine = "sqlserver"
)

// Name is the engine as a DBA names it.
func (e Engine) Name() string {
	switch e {
	case Postgres:
		return "PostgreSQL"
	case MySQL:
		return "MySQL/MariaDB"
	case SQLServer:
		return "SQL Server"
	}
	return string(e)
}

// Mask replaces a password wherever narrows shows a DSN or an error.
const Mask = "xxxxx"

// DSN is a parsed data source name. Raw holds the password: never print
// it; print Redacted.
type DSN struct {
	Engine   Engine
	Raw      string
	Redacted string
	Host     string
	Port     int
	User     string
	Database string
	// Instance is a SQL Server named instance (HOST\INSTANCE): its port
	// is 0 until the SQL Browser on the host gives it (Resolve).
	Instance string
	// Login is how a SQL Server session logs in (one of the Login*
	// values); empty for the other engines.
	Login    string
	Params   url.Values
	password string
	secrets  []string // other secret parameters' values (sslpassword)
}

// Addr is host:port, the TCP endpoint of the server.
func (d *DSN) Addr() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// Where is the server as messages name it: host:port, and for a named
// instance HOST\INSTANCE with the port once the SQL Browser gave it.
func (d *DSN) Where() string {
	switch {
	case d.Instance == "":
		return d.Addr()
	case d.Port == 0:
		return d.Host + `\` + d.Instance
	}
	return fmt.Sprintf(`%s\%s (%s)`, d.Host, d.Instance, d.Addr())
}

// HasPassword says whether the DSN carries a password.
func (d *DSN) HasPassword() bool { return d.password != "" }

var defaultPorts = map[Engine]int{Postgres: 5432, MySQL: 3306, SQLServer: 1433}

var schemes = map[string]Engine{
	"postgres": Postgres, "postgresql": Postgres,
	"mysql": MySQL, "mariadb": MySQL,
	"sqlserver": SQLServer,
}

// encodeHint says how to write a password with special characters.
const encodeHint = "percent-encode special characters in the password (/ as %2F, # as %23, ? as %3F, @ as %40, : as %3A, % as %25), e.g. postgres://USER:pa%2Fss@HOST/DB"

// schemeRE is what may stand before "://" (RFC 3986's scheme).
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// quoted matches the quoted pieces of url's errors, which are pieces of
// the input and so perhaps of the password.
var quoted = regexp.MustCompile(`\s*"[^"]*"`)

// Parse reads a DSN. Its errors never contain the password: a DSN that
// cannot be read is never shown, in whole or in part, for no one can say
// where in it the password ends.
func Parse(s string) (*DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, &Error{Kind: BadDSN, Msg: "the DSN is empty: use postgres://USER:PASSWORD@HOST:5432/DB, mysql://USER:PASSWORD@HOST:3306/DB, sqlserver://USER:PASSWORD@HOST:1433?database=DB or Server=HOST,1433;Database=DB;User Id=USER;Password=PASSWORD"}
	}
	if isConnString(s) {
		return parseConnString(s)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !schemeRE.MatchString(scheme) {
		return nil, &Error{Kind: BadDSN, Msg: "the DSN has no scheme: start it with postgres://, mysql:// or sqlserver://, or give a SQL Server connection string (Server=HOST;Database=DB;...) (the DSN is not shown: it may hold a password)"}
	}
	eng, ok := schemes[strings.ToLower(scheme)]
	if !ok {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("the DSN has an unknown scheme %q: use postgres://, mysql:// (MySQL and MariaDB) or sqlserver://", scheme)}
	}
	// The host part ends at the first '/', '?' or '#'. An '@' after it
	// means a password holds one of those unencoded: read as a URL, the
	// password would be cut there and its rest taken for the host.
	if end := strings.IndexAny(rest, "/?#"); end >= 0 && strings.Contains(rest[end:], "@") {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("the DSN cannot be read: an '@' follows a '/', '?' or '#', so the password (or user) holds one of them unencoded: %s (the DSN is not shown: it may hold a password)", encodeHint)}
	}
	u, err := url.Parse(s)
	if err != nil {
		// url's error quotes the input: say what is wrong without it.
		msg := "it is not a valid URL"
		if ue, ok := err.(*url.Error); ok {
			msg = quoted.ReplaceAllString(ue.Err.Error(), "")
		}
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("the DSN cannot be read (%s): %s (the DSN is not shown: it may hold a password)", msg, encodeHint)}
	}
	red := Redact(s)
	d := &DSN{Engine: eng, Raw: s, Redacted: red, Host: u.Hostname(), Params: u.Query()}
	if u.User != nil {
		d.User = u.User.Username()
		d.password, _ = u.User.Password()
	}
	for k, vs := range d.Params {
		switch {
		case !isSecretParam(k):
		case isPasswordParam(k) && d.password == "" && len(vs) > 0:
			d.password = vs[0]
			fallthrough
		default:
			d.secrets = append(d.secrets, vs...)
		}
	}
	if d.Host == "" {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: the host is missing: write %s://USER@HOST:PORT/...", red, scheme)}
	}
	d.Port = defaultPorts[eng]
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: invalid port %q: use a number from 1 to 65535", red, p)}
		}
		d.Port = n
	}
	switch eng {
	case Postgres:
		d.Database = strings.TrimPrefix(u.Path, "/")
		if d.Database == "" {
			d.Database = d.User
		}
	case MySQL:
		d.Database = strings.TrimPrefix(u.Path, "/")
	case SQLServer:
		d.Database = d.Params.Get("database")
		// sqlserver://HOST/INSTANCE: without a port, the SQL Browser on
		// HOST gives the instance's port when narrows connects.
		if d.Instance = strings.Trim(u.Path, "/"); d.Instance != "" && u.Port() == "" {
			d.Port = 0
		}
		params := map[string]string{}
		for k, vs := range d.Params {
			params[strings.ToLower(k)] = vs[0]
		}
		if d.Login, err = loginOf(params, d.User, goos); err != nil {
			return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: %v", red, err)}
		}
	}
	// SQL Server without a user logs in as the account that runs narrows
	// (integrated authentication); the other engines need one.
	if d.User == "" && d.Engine != SQLServer {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: the user is missing: write %s://USER:PASSWORD@%s", red, scheme, d.Addr())}
	}
	return d, nil
}

// passwordParams are the query parameters that carry the login password;
// secretParams, every parameter whose value must never be shown (sslpassword
// is the passphrase of PostgreSQL's client key). Names are matched in any
// case.
var (
	passwordParams = []string{"password", "pwd", "passwd"}
	secretParams   = append([]string{"sslpassword"}, passwordParams...)
)

func isPasswordParam(k string) bool { return slices.Contains(passwordParams, strings.ToLower(k)) }
func isSecretParam(k string) bool   { return slices.Contains(secretParams, strings.ToLower(k)) }

// secretKeys is secretParams as a regexp alternation.
var secretKeys = strings.Join(secretParams, "|")

// bareUserinfo matches "user:password@" at the start of a scheme-less DSN.
var bareUserinfo = regexp.MustCompile(`^(\s*[^:/@?#\s]*:)[^/?#]*@`)

// keyValuePassword matches password=... in a key=value connection string.
var keyValuePassword = regexp.MustCompile(`(?i)((?:^|\s)(?:` + secretKeys + `)\s*=\s*)('[^']*'|\S*)`)

// secretParam matches secret query parameters.
var secretParam = regexp.MustCompile(`(?i)([?&;](?:` + secretKeys + `)=)[^&;]*`)

// Redact returns s with any password replaced by Mask. A URL that does not
// parse loses everything between "://" and its last '@': where its
// password ends cannot be known.
func Redact(s string) string {
	if isConnString(s) {
		return redactConnString(s)
	}
	scheme, rest, isURL := strings.Cut(s, "://")
	if !isURL {
		// Not a URL: user:password@host, key=value pairs, or worse.
		out := bareUserinfo.ReplaceAllString(s, "${1}"+Mask+"@")
		return secretParam.ReplaceAllString(keyValuePassword.ReplaceAllString(out, "${1}"+Mask), "${1}"+Mask)
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
		if q := u.Query(); len(q) > 0 {
			changed := false
			for k := range q {
				if isSecretParam(k) {
					q.Set(k, Mask)
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
		return u.String()
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = Mask + rest[i:]
	}
	return secretParam.ReplaceAllString(scheme+"://"+rest, "${1}"+Mask)
}

// Scrub hides every DSN that s echoes, and escapes what a terminal would
// act on (untrusted.Text): s holds a server's or a driver's words, on
// their way to a person, and a server can put any bytes in an error
// message, before the login as well as after.
//
// Only DSN-shaped text is touched: d's own DSN as given, and any
// USER:PASSWORD@ in a URL or a MySQL DSN, password=... in key=value pairs
// or a query. A server never echoes the password; a driver that shows it
// shows it inside the DSN. Replacing each occurrence of the password as a
// string garbled the server's words and narrows' own when the password was
// a common word ("wrong" made "wrong user name or password" read "xxxxx
// user name or password"), and the gap it left told the password.
func (d *DSN) Scrub(s string) string {
	var secrets []string
	if d != nil {
		if d.Raw != "" {
			s = strings.ReplaceAll(s, d.Raw, d.Redacted)
		}
		secrets = d.secretForms()
	}
	return untrusted.Text(redactText(s, secrets))
}

// secretForms are the ways the DSN's secrets can be written as a value:
// as they are, percent-encoded, quoted or braced; longest first, so that a
// value is masked whole, even where it holds a separator (;, &, a space).
func (d *DSN) secretForms() []string {
	var out []string
	for _, p := range append([]string{d.password}, d.secrets...) {
		if p == "" {
			continue
		}
		for _, f := range []string{p, url.QueryEscape(p), url.PathEscape(p),
			"'" + strings.ReplaceAll(p, "'", `\'`) + "'",
			`"` + strings.ReplaceAll(p, `"`, `""`) + `"`,
			"{" + strings.ReplaceAll(p, "}", "}}") + "}"} {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// The shapes in which a DSN's secret stands inside other text.
var (
	// scheme://USER:PASSWORD@: the password runs to the authority's last '@'.
	textUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^\s:/?#@]*:)[^\s/?#]*@`)
	// USER:PASSWORD@tcp(HOST) or @unix(PATH): go-sql-driver/mysql's form.
	textMySQL = regexp.MustCompile(`(^|[\s"'\x60(=])([^\s:/@"'\x60()]*:)[^\s]*@(tcp|unix)\(`)
	// password= after a separator: key=value pairs (libpq, ADO, ODBC)
	// and query parameters.
	textKey = regexp.MustCompile(`(?i)(?:^|[\s;,?&{("'\x60])(?:` + secretKeys + `|change\s+password)\s*=\s*`)
	// A value of a key whose secret is not known: quoted, braced or bare.
	textValue = regexp.MustCompile(`^(?:'(?:[^'\\]|\\.)*'|"[^"]*"|\{(?:[^}]|\}\})*\}|[^\s;&"'\x60)]*)`)
)

// RedactText hides the secret of every DSN-shaped piece of s and leaves
// the rest as it stands.
func RedactText(s string) string { return redactText(s, nil) }

// redactText is RedactText knowing the secrets' forms (secretForms): a
// key's value that begins with one is masked whole.
func redactText(s string, secrets []string) string {
	s = textUserinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = textMySQL.ReplaceAllString(s, "${1}${2}"+Mask+"@${3}(")
	var b strings.Builder
	for {
		loc := textKey.FindStringIndex(s)
		if loc == nil {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:loc[1]])
		s = s[loc[1]:]
		n := len(textValue.FindString(s))
		for _, f := range secrets {
			if strings.HasPrefix(s, f) {
				n = len(f)
				break
			}
		}
		b.WriteString(Mask)
		s = s[n:]
	}
}

// scrubAll hides every occurrence of secrets in s. Only for a driver's
// words about a connection string it could not read: they quote pieces of
// that string, and where a piece of the password ends cannot be known.
func scrubAll(s string, secrets []string) string {
	for _, sec := range secrets {
		switch {
		case sec == "":
		case len(sec) >= 4:
			s = strings.ReplaceAll(s, sec, Mask)
		default:
			// A very short password matches inside ordinary words: hide
			// it where it stands alone, not in the middle of a word.
			re := regexp.MustCompile(`(^|[^\pL\pN])` + regexp.QuoteMeta(sec) + `($|[^\pL\pN])`)
			for re.MatchString(s) {
				s = re.ReplaceAllString(s, "${1}"+Mask+"${2}")
			}
		}
	}
	return s
}
