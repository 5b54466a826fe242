package dbconn

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Engine is a database engine family.
type Engine string

// The engines narrows speaks to, named after their DSN schemes.
const (
	Postgres  Engine = "postgres"
	MySQL     Engine = "mysql" // MySQL and MariaDB
	SQLServer Engine = "sqlserver"
)

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
	Params   url.Values
	password string
}

// Addr is host:port, the TCP endpoint of the server.
func (d *DSN) Addr() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// HasPassword says whether the DSN carries a password.
func (d *DSN) HasPassword() bool { return d.password != "" }

var defaultPorts = map[Engine]int{Postgres: 5432, MySQL: 3306, SQLServer: 1433}

var schemes = map[string]Engine{
	"postgres": Postgres, "postgresql": Postgres,
	"mysql": MySQL, "mariadb": MySQL,
	"sqlserver": SQLServer,
}

// Parse reads a DSN. Its errors never contain the password.
func Parse(s string) (*DSN, error) {
	s = strings.TrimSpace(s)
	red := Redact(s)
	if s == "" {
		return nil, &Error{Kind: BadDSN, Msg: "the DSN is empty: use postgres://USER:PASSWORD@HOST:5432/DB, mysql://USER:PASSWORD@HOST:3306/DB or sqlserver://USER:PASSWORD@HOST:1433?database=DB"}
	}
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q has no scheme: start it with postgres://, mysql:// or sqlserver://", red)}
	}
	eng, ok := schemes[strings.ToLower(scheme)]
	if !ok {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: unknown scheme %q: use postgres://, mysql:// (MySQL and MariaDB) or sqlserver://", red, scheme)}
	}
	u, err := url.Parse(s)
	if err != nil {
		// url's error quotes the whole input: say what is wrong without it.
		msg := "it is not a valid URL"
		if ue, ok := err.(*url.Error); ok {
			msg = scrubAll(ue.Err.Error(), []string{s})
		}
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: %s (special characters in a password must be percent-encoded, e.g. @ as %%40)", red, msg)}
	}
	d := &DSN{Engine: eng, Raw: s, Redacted: red, Host: u.Hostname(), Params: u.Query()}
	if u.User != nil {
		d.User = u.User.Username()
		d.password, _ = u.User.Password()
	}
	for _, k := range passwordParams {
		if v := d.Params.Get(k); v != "" && d.password == "" {
			d.password = v
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
		if inst := strings.Trim(u.Path, "/"); inst != "" && u.Port() == "" {
			return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: a named instance (%s) needs its TCP port in the DSN (sqlserver://HOST:PORT): narrows times the TCP connection to that port", red, inst)}
		}
	}
	if d.User == "" {
		return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: the user is missing: write %s://USER:PASSWORD@%s", red, scheme, d.Addr())}
	}
	return d, nil
}

// passwordParams are the query parameters that carry a password.
var passwordParams = []string{"password", "pwd", "passwd"}

func isPasswordParam(k string) bool { return slices.Contains(passwordParams, strings.ToLower(k)) }

// userinfo matches "scheme://user:password@" for DSNs url.Parse rejects.
var userinfo = regexp.MustCompile(`(://[^:/@?#]*:)[^/?#]*@`)

// bareUserinfo matches "user:password@" at the start of a scheme-less DSN.
var bareUserinfo = regexp.MustCompile(`^(\s*[^:/@?#\s]*:)[^/?#]*@`)

// keyValuePassword matches password=... in a key=value connection string.
var keyValuePassword = regexp.MustCompile(`(?i)((?:^|\s)(?:password|pwd|passwd)\s*=\s*)('[^']*'|\S*)`)

// passwordParam matches password query parameters.
var passwordParam = regexp.MustCompile(`(?i)([?&;](password|pwd|passwd)=)[^&;]*`)

// Redact returns s with any password replaced by Mask.
func Redact(s string) string {
	if !strings.Contains(s, "://") {
		// Not a URL: user:password@host, key=value pairs, or worse.
		out := bareUserinfo.ReplaceAllString(s, "${1}"+Mask+"@")
		return passwordParam.ReplaceAllString(keyValuePassword.ReplaceAllString(out, "${1}"+Mask), "${1}"+Mask)
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
		out := u.String()
		if q := u.Query(); len(q) > 0 {
			changed := false
			for k := range q {
				if isPasswordParam(k) {
					q.Set(k, Mask)
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
				out = u.String()
			}
		}
		return out
	}
	out := userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	return passwordParam.ReplaceAllString(out, "${1}"+Mask)
}

// Secrets returns the forms in which the password could appear in text.
func (d *DSN) Secrets() []string {
	if d.password == "" {
		return nil
	}
	out := []string{d.password}
	for _, s := range []string{url.QueryEscape(d.password), url.PathEscape(d.password)} {
		if s != out[len(out)-1] && s != d.password {
			out = append(out, s)
		}
	}
	return out
}

// Scrub removes every form of the password from s.
func (d *DSN) Scrub(s string) string {
	if d == nil {
		return s
	}
	return scrubAll(s, d.Secrets())
}

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
