package dbconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/untrusted"
)

// Kind says what a person must fix.
type Kind int

// Kinds of error. Everything but Other is the user's to fix: the command
// line turns them into one line and exit code 2.
const (
	Other       Kind = iota
	BadDSN           // the DSN cannot be read
	Unreachable      // nothing answers at host:port
	Auth             // wrong user name or password
	NoDatabase       // the database named does not exist
	Permission       // the user lacks a privilege or role
	NotPrimary       // the server is not a primary / replication source
	Refused          // narrows refuses to do it (e.g. a table it does not own)
	BadQuery         // the server rejected a query the user gave (--query)
	Blocked          // the server cannot commit (a synchronous standby is down)
	TooMany          // the server takes no more connections
)

// Error is a database error in words a DBA can act on, with the password
// already removed.
type Error struct {
	Kind Kind
	Msg  string
	Err  error // the driver's error, scrubbed of the password by Msg only
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is errext.ExitUsage for every kind but Other: a mistake in the
// input or the server's setup that the user must fix, not a failure
// mid-run.
func (e *Error) ExitCode() int {
	if e.Kind == Other {
		return errext.ExitFailed
	}
	return errext.ExitUsage
}

// Is reports whether err is an Error of kind k.
func Is(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

// Classify turns a driver error from connecting to or querying d into an
// *Error whose message names what is wrong and never holds the password.
// what says what narrows was doing ("connect", "read pg_stat_replication").
func Classify(d *DSN, what string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	target := d.Redacted
	out := &Error{Kind: KindOf(err), Err: err}
	msg := d.Reason(err)
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	var ms mssql.Error
	switch {
	case errors.As(err, &pg):
		msg = d.Scrub(fmt.Sprintf("%s (SQLSTATE %s)", pg.Message, pg.Code))
	case errors.As(err, &my):
		msg = d.Scrub(fmt.Sprintf("%s (error %d)", my.Message, my.Number))
	case errors.As(err, &ms):
		msg = d.Scrub(fmt.Sprintf("%s (error %d)", ms.Message, ms.Number))
	}
	switch out.Kind {
	case Auth:
		out.Msg = fmt.Sprintf("%s: %s: wrong user name or password for user %q: %s", what, target, d.User, msg)
	case NoDatabase:
		out.Msg = fmt.Sprintf("%s: %s: the database %q does not exist: %s", what, target, d.Database, msg)
	case Permission:
		out.Msg = fmt.Sprintf("%s: %s: user %q lacks a privilege: %s", what, target, d.User, msg)
	case Unreachable:
		out.Msg = fmt.Sprintf("%s: %s: cannot reach %s: %s (is the server running, and is the host and port right?)", what, target, d.Where(), msg)
	case TooMany:
		out.Msg = fmt.Sprintf("%s: %s: the server takes no more connections: %s (fewer sessions, or a higher max_connections)", what, target, msg)
	case NotPrimary:
		out.Msg = fmt.Sprintf("%s: %s: the server is read-only: %s (writes need a primary that accepts them: point --dsn at it)", what, target, msg)
	default:
		out.Msg = fmt.Sprintf("%s: %s: %s", what, target, msg)
	}
	return out
}

// KindOf says what a driver error means for the person running narrows:
// the engine's error code read as a Kind (Auth, NoDatabase, Permission),
// Unreachable for a server nothing answers for, else Other.
func KindOf(err error) Kind {
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	var ms mssql.Error
	switch {
	case err == nil:
		return Other
	case errors.As(err, &pg):
		return pgKind(pg.Code)
	case errors.As(err, &my):
		if my.Number == 1290 && strings.Contains(my.Message, "read-only") {
			return NotPrimary // ER_OPTION_PREVENTS_STATEMENT, for --read-only
		}
		return mysqlKind(my.Number)
	case errors.As(err, &ms):
		return mssqlKind(ms.Number)
	case isUnreachable(err):
		return Unreachable
	}
	return Other
}

func pgKind(code string) Kind {
	switch {
	case code == "28P01" || code == "28000":
		return Auth
	case code == "3D000":
		return NoDatabase
	case code == "42501":
		return Permission
	case code == "25006": // read_only_sql_transaction: a standby, or default_transaction_read_only
		return NotPrimary
	case code == "53300": // too_many_connections
		return TooMany
	}
	return Other
}

func mysqlKind(n uint16) Kind {
	switch n {
	case 1045, 1698: // access denied (using password: YES/NO)
		return Auth
	case 1049: // unknown database
		return NoDatabase
	case 1044, 1142, 1143, 1227, 1370: // denied for db, table, column, privilege, routine
		return Permission
	case 1792, 1836, 1874: // a read-only transaction; read-only mode; InnoDB read-only
		return NotPrimary
	case 1040, 1203: // too many connections; the user's max_user_connections
		return TooMany
	}
	return Other
}

func mssqlKind(n int32) Kind {
	switch n {
	case 18456, 18452, 18470:
		return Auth
	case 4060, 911:
		return NoDatabase
	case 229, 230, 262, 297, 300, 916:
		return Permission
	}
	return Other
}

func isUnreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &op) && op.Op == "dial":
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return strings.Contains(err.Error(), "dial")
	}
	return false
}

// ServerError says whether err is an error the server sent back while the
// session goes on (a wrong query, a missing privilege), as opposed to a
// lost session: a connection error, or the server ending the session
// (administrator command, shutdown, a killed connection).
func ServerError(err error) bool {
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	var ms mssql.Error
	switch {
	case errors.As(err, &pg):
		return pg.Severity != "FATAL" && pg.Severity != "PANIC" && !strings.HasPrefix(pg.Code, "57P") && !strings.HasPrefix(pg.Code, "08")
	case errors.As(err, &my):
		switch my.Number {
		case 1053, 1077, 1152, 1153, 1159, 1160, 1161, 1927, 4031:
			return false // shutdown, aborted, killed, timed out
		}
		return true
	case errors.As(err, &ms):
		return ms.Class < 20 // 20 and above end the session
	}
	return false
}

// Permissionf is a missing-permission error with a hint.
func Permissionf(format string, a ...any) error {
	return &Error{Kind: Permission, Msg: fmt.Sprintf(format, a...)}
}

// NotPrimaryf is an error for a server that is not what the command needs.
func NotPrimaryf(format string, a ...any) error {
	return &Error{Kind: NotPrimary, Msg: fmt.Sprintf(format, a...)}
}

// Refusedf is narrows declining to act.
func Refusedf(format string, a ...any) error {
	return &Error{Kind: Refused, Msg: fmt.Sprintf(format, a...)}
}

// Reason is err as one line without d's password: what a gap or a message
// shows of a driver's error.
func (d *DSN) Reason(err error) string { return d.Scrub(untrusted.OneLine(err.Error())) }

// Brief is err in a few words for a line that repeats it (a live row, a
// gap): what failed and the root cause, without the DSN and the driver's
// wrapping, e.g. "connect to 10.0.0.5:5432: connection refused". The
// password is never in it.
func (d *DSN) Brief(err error) string {
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	var ms mssql.Error
	var dns *net.DNSError
	var errno syscall.Errno
	switch {
	case errors.As(err, &pg):
		return d.Scrub(fmt.Sprintf("%s (SQLSTATE %s)", pg.Message, pg.Code))
	case errors.As(err, &my):
		return d.Scrub(fmt.Sprintf("%s (error %d)", my.Message, my.Number))
	case errors.As(err, &ms):
		return d.Scrub(fmt.Sprintf("%s (error %d)", ms.Message, ms.Number))
	case errors.As(err, &dns):
		return fmt.Sprintf("resolve %s: %s", d.Host, dns.Err)
	case isUnreachable(err) && errors.As(err, &errno):
		return fmt.Sprintf("connect to %s: %s", d.Where(), errno.Error())
	case isUnreachable(err):
		return fmt.Sprintf("connect to %s: no answer", d.Where())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "the server closed the connection"
	}
	var e *Error
	if errors.As(err, &e) && e.Err != nil {
		return d.Reason(e.Err)
	}
	return d.Reason(err)
}
