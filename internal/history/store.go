package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// SchemaVersion is the store's layout, kept in PRAGMA user_version. A
// store of a higher version is refused, untouched; one of a lower is
// brought up to it when opened (migrations). 2: runs.run_file, the file
// the run was also written to (doctor's --out).
const SchemaVersion = 2

// FileName is the store's file in its directory.
const FileName = "history.db"

// MaxIntervals bounds the interval records kept of one run (a day-long
// run at --interval 10ms would be millions): the first ones are kept and
// the rest counted, so a run stays a few MB (MaxRecordBytes at most).
const MaxIntervals = 20000

// compressAbove is the size of JSON above which it is stored gzipped.
const compressAbove = 4 << 10

// MaxRecordBytes bounds a run's summary and its intervals, each, as JSON:
// Add keeps a run within it and Get unpacks no more of a record than it.
// Measured, one interval record is 390-410 bytes of JSON for net rr, net
// stream and db ping, 490 for net commit, 515 for disk, and for db repl
// 250 plus 900 per PostgreSQL standby (830 with one MariaDB replica):
// MaxIntervals of them make 8-10 MB, 23 MB for db repl with a standby. A
// doctor's summary holds its steps' intervals, about one a second: 63 KB
// for a 20 s budget, some 45 MB for the longest, 24 h. 64 MiB holds each
// of those; db repl with four standbys or more fills it before
// MaxIntervals and keeps its first polls, as past MaxIntervals. A record
// over it was not written by narrows: a 1.3 MB gzip of 1 GiB of zeros
// planted in a store took 5 s and 2.7 GB to be refused.
const MaxRecordBytes = 64 << 20

// maxRecord is MaxRecordBytes, lowered by tests (export_test.go).
var maxRecord int64 = MaxRecordBytes

// busyTimeout is how long a write waits for another narrows process's.
const busyTimeout = 10 * time.Second

// Dir is the store's directory: NARROWS_HISTORY when set, else the user's
// data directory for goos: $XDG_DATA_HOME/narrows or
// ~/.local/share/narrows, %LOCALAPPDATA%\narrows, ~/Library/Application
// Support/narrows. getenv is the process's (or a test's) environment.
func Dir(getenv func(string) string, goos string) (string, error) {
	if d := getenv("NARROWS_HISTORY"); d != "" {
		return d, nil
	}
	home := getenv("HOME")
	switch goos {
	case "windows":
		if d := getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "narrows"), nil
		}
		if p := getenv("USERPROFILE"); p != "" {
			return filepath.Join(p, "AppData", "Local", "narrows"), nil
		}
		return "", errors.New("no data directory: neither LOCALAPPDATA nor USERPROFILE is set (set NARROWS_HISTORY to a directory)")
	case "darwin", "ios":
		if home != "" {
			return filepath.Join(home, "Library", "Application Support", "narrows"), nil
		}
	default:
		if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
			return filepath.Join(d, "narrows"), nil
		}
		if home != "" {
			return filepath.Join(home, ".local", "share", "narrows"), nil
		}
	}
	return "", errors.New("no data directory: HOME is not set (set NARROWS_HISTORY to a directory)")
}

// CorruptError is a store file SQLite cannot read as a database.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the history %s cannot be read (%v); nothing was changed: move it aside to start a new history (mv %q %q), or run with --no-history",
		e.Path, e.Err, e.Path, e.Path+".broken")
}

func (e *CorruptError) Unwrap() error { return e.Err }

// NewerError is a store written by a newer narrows.
type NewerError struct {
	Path        string
	Found, Know int
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the history %s has schema version %d, and this narrows knows only up to version %d: use a newer narrows to read it (nothing was changed)",
		e.Path, e.Found, e.Know)
}

// Store is an open history.
type Store struct {
	db   *sql.DB
	path string
	// Stall, when set, is called inside Add's transaction after the run
	// is inserted and before it commits: a test's window to kill the
	// process mid-write.
	Stall func()
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// sqliteHeader begins every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// Open opens (creating when absent) the store in dir. A file that is not
// a SQLite database, or is damaged, gives a *CorruptError; one of a newer
// schema a *NewerError. Neither is ever written to.
func Open(ctx context.Context, dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	path := filepath.Join(dir, FileName)
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	db, err := sql.Open(driverName, dsn(path))
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	// One connection: a CLI run writes one record; the pool would only
	// multiply the per-connection pragmas.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path}
	if err := s.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// checkHeader refuses, before SQLite opens it, a file that is not a
// database: SQLite would refuse it too, but with words that do not say
// which file or what to do.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF) {
		return nil // empty: SQLite makes it a database
	}
	if err != nil || !bytes.Equal(head, sqliteHeader) {
		return &CorruptError{Path: path, Err: errors.New("not a SQLite database")}
	}
	return nil
}

const schema = `
CREATE TABLE runs (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	started_at      TEXT NOT NULL,    -- RFC 3339, UTC
	command         TEXT NOT NULL,
	target          TEXT NOT NULL,
	headline_name   TEXT NOT NULL,
	headline        REAL,
	headline_unit   TEXT NOT NULL,
	partial         INTEGER NOT NULL,
	narrows_version TEXT NOT NULL,
	summary         BLOB NOT NULL,    -- the summary record's JSON, gzipped when large
	intervals       BLOB NOT NULL,    -- a JSON array of interval records, gzipped when large
	intervals_kept    INTEGER NOT NULL,
	intervals_dropped INTEGER NOT NULL,
	run_file        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_command ON runs (command, id);
`

// migrations bring a store of version k (index k-1) to k+1, each in the
// transaction that sets the version after it.
var migrations = []string{
	`ALTER TABLE runs ADD COLUMN run_file TEXT NOT NULL DEFAULT ''`, // 1 → 2
}

// prepare checks the schema version and creates the schema in a new store.
func (s *Store) prepare(ctx context.Context) error {
	v, err := s.version(ctx)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return &NewerError{Path: s.path, Found: v, Know: SchemaVersion}
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.wrap(err)
	}
	if !strings.EqualFold(mode, "wal") {
		// WAL lets a second narrows read while one writes, and keeps
		// the file consistent through a crash at any point; it stays
		// set in the file.
		if err := s.toWAL(ctx); err != nil {
			return s.wrap(err)
		}
	}
	if v == SchemaVersion {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (dsn): one creator at a time
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	// Another narrows may have created or migrated it while this one waited.
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return s.wrap(err)
	}
	switch {
	case v >= SchemaVersion:
		tx.Rollback() // before checking again: the store has one connection
		return s.prepare(ctx)
	case v == 0:
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return s.wrap(err)
		}
	default:
		for _, m := range migrations[v-1:] {
			if _, err := tx.ExecContext(ctx, m); err != nil {
				return s.wrap(err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
		return s.wrap(err)
	}
	return s.wrap(tx.Commit())
}

// toWAL switches the store's file to WAL. The switch takes the file
// whole, and SQLite answers SQLITE_BUSY at once, without its busy
// handler, while another narrows holds it (two processes opening a new
// store: 1-6 in 240 opens failed, "database is locked", and a run's
// history was lost): it is tried again until the busy timeout.
func (s *Store) toWAL(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		var mode string
		err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// isBusy is SQLite's SQLITE_BUSY (5), with any extended code.
func isBusy(err error) bool {
	var c interface{ Code() int }
	return errors.As(err, &c) && c.Code()&0xff == 5
}

func (s *Store) version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, s.wrap(err)
}

// wrap names the file in an error, and turns SQLite's "not a database"
// and "malformed" into a *CorruptError.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") || strings.Contains(msg, "SQLITE_CORRUPT") || strings.Contains(msg, "SQLITE_NOTADB") {
		return &CorruptError{Path: s.path, Err: err}
	}
	return fmt.Errorf("history %s: %w", s.path, err)
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Run is one stored run.
type Run struct {
	ID        int64     `json:"id"`
	StartedAt time.Time `json:"started_at"`
	Command   string    `json:"command"`
	Target    string    `json:"target"`
	// Headline is the run's first figure (throughput, round trips...).
	HeadlineName string  `json:"headline_name,omitempty"`
	Headline     float64 `json:"headline"`
	HeadlineUnit string  `json:"headline_unit,omitempty"`
	Partial      bool    `json:"partial,omitempty"`
	Version      string  `json:"narrows_version"`
	// File is where the run was also written (doctor's --out), as an
	// absolute path; "" when it was not, or not said.
	File string `json:"file,omitempty"`
	// Report and Intervals are read by Get, not by List.
	Report           *result.Report    `json:"-"`
	Intervals        []result.Interval `json:"-"`
	IntervalsDropped int               `json:"intervals_dropped,omitempty"`
}

// TooLargeError is a run whose summary cannot be kept, or one in the
// store that unpacks to more than MaxRecordBytes.
type TooLargeError struct {
	Path  string
	ID    int64  // 0 for a run not kept
	Part  string // "summary" or "intervals"
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.ID == 0 {
		return fmt.Sprintf("the run's %s is more than %s of JSON, the most the history %s keeps of a run (compare and report read the run's --json output instead)",
			e.Part, mib(e.Limit), e.Path)
	}
	return fmt.Sprintf("run %d in the history %s: its %s record unpacks to more than %s, more than narrows ever writes: refused (nothing was changed; the other runs are untouched)",
		e.ID, e.Path, e.Part, mib(e.Limit))
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// errTooLarge is decode's refusal, made a *TooLargeError by its caller.
var errTooLarge = errors.New("record too large")

// Add stores a run in one transaction and returns its id. Intervals past
// MaxIntervals, or past MaxRecordBytes of JSON, are counted, not kept; a
// summary past MaxRecordBytes is a *TooLargeError.
func (s *Store) Add(ctx context.Context, rep *result.Report, ivs []result.Interval) (int64, error) {
	return s.AddFrom(ctx, rep, ivs, "")
}

// AddFrom is Add for a run also written to file (an absolute path), which
// the history shows beside its id.
func (s *Store) AddFrom(ctx context.Context, rep *result.Report, ivs []result.Interval, file string) (int64, error) {
	dropped := 0
	if len(ivs) > MaxIntervals {
		dropped, ivs = len(ivs)-MaxIntervals, ivs[:MaxIntervals]
	}
	if ivs == nil {
		ivs = []result.Interval{}
	}
	sumJSON, err := json.Marshal(rep)
	if err != nil {
		return 0, err
	}
	if int64(len(sumJSON)) > maxRecord {
		return 0, &TooLargeError{Path: s.path, Part: "summary", Limit: maxRecord}
	}
	ivJSON, kept, err := fitIntervals(ivs, maxRecord)
	if err != nil {
		return 0, err
	}
	dropped, ivs = dropped+len(ivs)-kept, ivs[:kept]
	sum, err := compress(sumJSON)
	if err != nil {
		return 0, err
	}
	ivb, err := compress(ivJSON)
	if err != nil {
		return 0, err
	}
	h, _ := Headline(rep, ivs)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.wrap(err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (started_at, command, target, headline_name, headline, headline_unit,
		partial, narrows_version, summary, intervals, intervals_kept, intervals_dropped, run_file) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		rep.StartedAt.UTC().Format(time.RFC3339Nano), rep.Command, rep.Target, h.Name, h.Value, h.Unit,
		rep.Partial, rep.Narrows.Version, sum, ivb, len(ivs), dropped, file)
	if err != nil {
		return 0, s.wrap(err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, s.wrap(err)
	}
	if s.Stall != nil {
		s.Stall()
	}
	return id, s.wrap(tx.Commit())
}

// Filter selects runs for List.
type Filter struct {
	Command string // "" for every command
	Limit   int    // the most recent Limit; 0 for all
}

// List returns runs, the most recent first, without their records.
func (s *Store) List(ctx context.Context, f Filter) ([]Run, error) {
	q := `SELECT id, started_at, command, target, headline_name, headline, headline_unit, partial, narrows_version, intervals_dropped, run_file FROM runs`
	var args []any
	if f.Command != "" {
		q += ` WHERE command = ?`
		args = append(args, f.Command)
	}
	q += ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		var r Run
		var started string
		var headline sql.NullFloat64
		if err := rows.Scan(&r.ID, &started, &r.Command, &r.Target, &r.HeadlineName, &headline, &r.HeadlineUnit, &r.Partial, &r.Version, &r.IntervalsDropped, &r.File); err != nil {
			return nil, s.wrap(err)
		}
		r.StartedAt, _ = time.Parse(time.RFC3339Nano, started)
		r.Headline = headline.Float64
		untrusted.Clean(&r) // as Get does
		runs = append(runs, r)
	}
	return runs, s.wrap(rows.Err())
}

// ErrNotFound is an id the store does not hold.
var ErrNotFound = errors.New("no such run")

// Get reads one run with its records.
func (s *Store) Get(ctx context.Context, id int64) (*Run, error) {
	var r Run
	var started string
	var headline sql.NullFloat64
	var sum, ivb []byte
	err := s.db.QueryRowContext(ctx, `SELECT id, started_at, command, target, headline_name, headline, headline_unit, partial,
		narrows_version, intervals_dropped, run_file, summary, intervals FROM runs WHERE id = ?`, id).
		Scan(&r.ID, &started, &r.Command, &r.Target, &r.HeadlineName, &headline, &r.HeadlineUnit, &r.Partial, &r.Version, &r.IntervalsDropped, &r.File, &sum, &ivb)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w in %s", id, ErrNotFound, s.path)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	r.StartedAt, _ = time.Parse(time.RFC3339Nano, started)
	r.Headline = headline.Float64
	r.Report = new(result.Report)
	for _, part := range []struct {
		name string
		b    []byte
		v    any
	}{{"summary", sum, r.Report}, {"intervals", ivb, &r.Intervals}} {
		err := decode(part.b, part.v)
		if errors.Is(err, errTooLarge) {
			return nil, &TooLargeError{Path: s.path, ID: id, Part: part.name, Limit: maxRecord}
		}
		if err != nil {
			return nil, &CorruptError{Path: s.path, Err: fmt.Errorf("run %d: %s: %w", id, part.name, err)}
		}
	}
	// A store is a file too, which someone may have handed over: its
	// strings come out escaped, as a saved run's do (jsonl.Read).
	untrusted.Clean(&r)
	return &r, nil
}

// fitIntervals is the JSON array of the first of ivs that fit in limit
// bytes, and how many those are: a run's first intervals are kept, as
// past MaxIntervals. Only a run over the limit pays for the counting.
func fitIntervals(ivs []result.Interval, limit int64) ([]byte, int, error) {
	b, err := json.Marshal(ivs)
	if err != nil || int64(len(b)) <= limit {
		return b, len(ivs), err
	}
	size, kept := int64(len("[]")), 0
	for _, iv := range ivs {
		one, err := json.Marshal(iv)
		if err != nil {
			return nil, 0, err
		}
		if kept > 0 {
			size++ // the comma
		}
		if size+int64(len(one)) > limit {
			break
		}
		size += int64(len(one))
		kept++
	}
	b, err = json.Marshal(ivs[:kept])
	return b, kept, err
}

// compress is JSON b gzipped when large.
func compress(b []byte) ([]byte, error) {
	if len(b) <= compressAbove {
		return b, nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decode reads what compress wrote (JSON starts with { or [, gzip with
// 1f 8b) into v, refusing with errTooLarge a record of more than
// MaxRecordBytes, unpacked or not, having unpacked at most one byte more.
func decode(b []byte, v any) error {
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		// The trailer's size (mod 4 GiB) is only a hint, so that a real
		// record is read into one buffer: the reader stops at the limit
		// whatever it says.
		hint := maxRecord
		if len(b) >= 8 {
			hint = min(int64(binary.LittleEndian.Uint32(b[len(b)-4:])), maxRecord)
		}
		// +1 for the byte that tells a record over the limit, + MinRead so
		// that ReadFrom never grows the buffer to look for more.
		buf := bytes.NewBuffer(make([]byte, 0, hint+1+bytes.MinRead))
		if _, err := buf.ReadFrom(io.LimitReader(zr, maxRecord+1)); err != nil {
			return err
		}
		b = buf.Bytes()
	}
	if int64(len(b)) > maxRecord {
		return errTooLarge
	}
	return json.Unmarshal(b, v)
}
