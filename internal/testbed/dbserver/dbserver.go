// Package dbserver starts real database servers from the Debian packages
// for tests, on loopback ports in temporary directories, and stops them: a
// PostgreSQL primary with a streaming standby (initdb, pg_basebackup -R),
// and a MariaDB source with a replica (mariadb-install-db, binary log,
// CHANGE MASTER TO). StartPostgresOn and StartMariaDBOn place either pair
// on two testbed hosts instead, across the link between them. Nothing here is a
// fake: the servers are the ones a DBA runs. As root, PostgreSQL runs as
// the postgres user and MariaDB as mysql, in directories they own. Test
// code only.
package dbserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Passwords of the users the clusters are made with. Distinctive, so a
// test can look for them in output.
const (
	SuperPassword   = "Sup3r-s3cret-P4ss"
	NarrowsPassword = "n4rr0ws-Pw-7d1f9"
	ReplPassword    = "r3pl-Pw-55aa"
)

// freePort is a TCP port for a server: free on loopback here, and not
// given before in this process.
func freePort() (int, error) {
	givenMu.Lock()
	defer givenMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// Free here, in this process's namespace, is not free where the
		// server listens: a standby made beside its primary in a
		// testbed's namespace was given the primary's port (the
		// primary listens only there), and could not start. A port is
		// given once per process.
		if !given[port] {
			given[port] = true
			return port, nil
		}
	}
}

// given are the ports freePort has handed out in this process.
var (
	givenMu sync.Mutex
	given   = map[int]bool{}
)

func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// asUser prefixes a command with runuser when we are root.
func asUser(u string, name string, args ...string) (string, []string) {
	if os.Geteuid() == 0 {
		return "runuser", append([]string{"-u", u, "--", name}, args...)
	}
	return name, args
}

// ownedTempDir makes a temporary directory in parent (the temp
// directory if "") owned by u (when root).
func ownedTempDir(parent, prefix, u string) (string, error) {
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		if err := chownTo(dir, u); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func chownTo(path, u string) error {
	usr, err := user.Lookup(u)
	if err != nil {
		return fmt.Errorf("user %s: %w", u, err)
	}
	uid, _ := strconv.Atoi(usr.Uid)
	gid, _ := strconv.Atoi(usr.Gid)
	return os.Chown(path, uid, gid)
}

// pgBin finds the newest PostgreSQL server binaries Debian installed.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_basebackup")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)")
}

// Node is what a PostgreSQL and a MariaDB node share: one server
// process, placed on a host.
type Node struct {
	Name string
	Addr string // the address it listens on ("" = 127.0.0.1)
	Port int
	Dir  string // PostgreSQL: the data directory; MariaDB: the node's directory
	cmd  *exec.Cmd
	done chan struct{}
	do   func(func() error) error // runs its processes on its host (nil = here)
}

func (n *Node) addr() string { return cmp.Or(n.Addr, "127.0.0.1") }

// inPlace runs fn where the node lives.
func (n *Node) inPlace(fn func() error) error {
	if n.do == nil {
		return fn()
	}
	return n.do(fn)
}

// Pid is the server's process id (0 when stopped).
func (n *Node) Pid() int {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// launch starts cmd, the server, where the node lives (so that it
// listens there, and connects out from there), and waits until ping
// succeeds: at most 60 s, and not once the server has exited. log says
// what the server logged, for the error.
func (n *Node) launch(ctx context.Context, what string, cmd *exec.Cmd, ping func() error, log func() string) error {
	if err := n.inPlace(cmd.Start); err != nil {
		return err
	}
	n.cmd, n.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(n.done) }() //nolint:errcheck
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ping() == nil {
			return nil
		}
		select {
		case <-n.done:
			return fmt.Errorf("%s (%s) exited at start; its log:\n%s", what, n.Name, log())
		case <-ctx.Done():
			return fmt.Errorf("%s (%s) did not accept connections before %w; its log:\n%s", what, n.Name, ctx.Err(), log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (%s) did not accept connections within 60s; its log:\n%s", what, n.Name, log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop asks the server to shut down with sig (PostgreSQL: SIGINT is its
// fast shutdown; MariaDB: SIGTERM), kills it after grace, and waits until
// it has exited; a stopped node can be launched again.
func (n *Node) stop(sig os.Signal, grace time.Duration) {
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(sig) //nolint:errcheck // it may have exited already
	select {
	case <-n.done:
	case <-time.After(grace):
		n.cmd.Process.Kill() //nolint:errcheck
		<-n.done
	}
	n.cmd = nil
}

// PGNode is one PostgreSQL server.
type PGNode struct {
	Node
	Sock string // Unix socket directory
	Log  string
}

// Place puts a server on a host, such as a testbed.Host: it listens on
// Addr, and its processes are started by Do, which runs a function on a
// thread inside the host's network namespace (testbed.Host.Do), so that
// they are children of this process inside that namespace. The zero Place
// is loopback in this namespace.
type Place struct {
	Addr string
	Do   func(func() error) error
}

// PostgresOptions place a primary and its standby.
type PostgresOptions struct {
	Primary, Standby Place
	// Dir is where the clusters' directories are made (the temp
	// directory if ""): a tmpfs keeps a test's gigabytes off the disk
	// other tests time their flushes on.
	Dir string
}

// Postgres is a primary and one streaming standby.
type Postgres struct {
	Bin              string
	Primary, Standby *PGNode
	root             string
}

// DSN is a postgres:// URL for user on node.
func (p *Postgres) DSN(n *PGNode, user, password string) string {
	if password == "" {
		return fmt.Sprintf("postgres://%s@%s/postgres?sslmode=disable", user, net.JoinHostPort(n.addr(), strconv.Itoa(n.Port)))
	}
	return fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable", user, password, net.JoinHostPort(n.addr(), strconv.Itoa(n.Port)))
}

func (p *Postgres) pg(ctx context.Context, env []string, tool string, args ...string) (string, error) {
	name, a := asUser("postgres", filepath.Join(p.Bin, tool), args...)
	return run(ctx, env, name, a...)
}

// Psql runs SQL on a node as the superuser, over its Unix socket.
func (p *Postgres) Psql(ctx context.Context, n *PGNode, sql string) (string, error) {
	return p.pg(ctx, nil, "psql", "-X", "-q", "-At", "-h", n.Sock, "-p", strconv.Itoa(n.Port), "-U", "postgres", "-d", "postgres", "-c", sql)
}

// StartPostgres makes and starts a primary and a standby, on loopback.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	return StartPostgresOn(ctx, PostgresOptions{})
}

// StartPostgresOn makes and starts a primary and a streaming standby where
// opts places them: the primary is made on its host, and the standby is
// copied from it by pg_basebackup run on the standby's host, so across
// whatever joins the two.
func StartPostgresOn(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	root, err := ownedTempDir(opts.Dir, "narrows-pg-", "postgres")
	if err != nil {
		return nil, err
	}
	p := &Postgres{Bin: bin, root: root}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	for _, d := range []string{"sock1", "sock2"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
		if os.Geteuid() == 0 {
			chownTo(filepath.Join(root, d), "postgres")
		}
	}
	pw := filepath.Join(root, "pw")
	if err := os.WriteFile(pw, []byte(SuperPassword+"\n"), 0o600); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		chownTo(pw, "postgres")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p.Primary = &PGNode{Node: Node{Name: "primary", Addr: opts.Primary.Addr, Port: port, Dir: filepath.Join(root, "primary"), do: opts.Primary.Do},
		Sock: filepath.Join(root, "sock1"), Log: filepath.Join(root, "primary.log")}
	if _, err := p.pg(ctx, nil, "initdb", "-D", p.Primary.Dir, "-U", "postgres", "--pwfile", pw, "-A", "scram-sha-256",
		"--auth-local", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`
listen_addresses = '%s'
port = %d
unix_socket_directories = '%s'
wal_level = replica
max_wal_senders = 8
max_replication_slots = 8
wal_keep_size = '512MB'
hot_standby = on
shared_buffers = '32MB'
max_connections = 40
fsync = on
synchronous_commit = on
wal_receiver_status_interval = '1s'
checkpoint_timeout = '5min'
max_wal_size = '1GB'
log_min_messages = warning
logging_collector = off
ssl = on
`, p.Primary.addr(), p.Primary.Port, p.Primary.Sock)
	// A self-signed certificate, so sessions can be timed with TLS too.
	if err := writeCert(p.Primary.Dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(p.Primary.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	f.WriteString(conf)
	f.Close()
	if p.Primary.addr() != "127.0.0.1" || cmp.Or(opts.Standby.Addr, "127.0.0.1") != "127.0.0.1" {
		// Off loopback: sessions and the standby's replication connection
		// come from the other host's address.
		hba, err := os.OpenFile(filepath.Join(p.Primary.Dir, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		hba.WriteString("host all all 0.0.0.0/0 scram-sha-256\nhost replication all 0.0.0.0/0 scram-sha-256\n")
		hba.Close()
	}
	if err := p.start(ctx, p.Primary); err != nil {
		return nil, err
	}
	for _, sql := range []string{
		fmt.Sprintf(`CREATE ROLE narrows LOGIN PASSWORD '%s' IN ROLE pg_monitor`, NarrowsPassword),
		`CREATE ROLE limited LOGIN PASSWORD 'limited-pw-1'`,
		`GRANT CREATE ON SCHEMA public TO narrows`,
		`GRANT EXECUTE ON FUNCTION pg_wal_replay_pause() TO narrows`,
	} {
		if _, err := p.Psql(ctx, p.Primary, sql); err != nil {
			return nil, err
		}
	}
	sport, err := freePort()
	if err != nil {
		return nil, err
	}
	p.Standby = &PGNode{Node: Node{Name: "standby1", Addr: opts.Standby.Addr, Port: sport, Dir: filepath.Join(root, "standby"), do: opts.Standby.Do},
		Sock: filepath.Join(root, "sock2"), Log: filepath.Join(root, "standby.log")}
	if err := p.Standby.inPlace(func() error {
		_, err := p.pg(ctx, []string{"PGPASSWORD=" + SuperPassword}, "pg_basebackup", "-h", p.Primary.addr(), "-p", strconv.Itoa(p.Primary.Port),
			"-U", "postgres", "-D", p.Standby.Dir, "-R", "-X", "stream", "-c", "fast", "--no-sync")
		return err
	}); err != nil {
		return nil, err
	}
	f, err = os.OpenFile(filepath.Join(p.Standby.Dir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "\nlisten_addresses = '%s'\nport = %d\nunix_socket_directories = '%s'\ncluster_name = 'standby1'\n", p.Standby.addr(), p.Standby.Port, p.Standby.Sock)
	f.Close()
	if err := p.start(ctx, p.Standby); err != nil {
		return nil, err
	}
	if err := p.WaitStreaming(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

// writeCert puts a fresh self-signed server.crt and server.key in dir.
func writeCert(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"server.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"server.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	}
	for name, b := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := chownTo(path, "postgres"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Postgres) start(ctx context.Context, n *PGNode) error {
	// The server runs as a child of the test process, not daemonized by
	// pg_ctl, so that it dies with the test process whatever kills it.
	logf, err := os.OpenFile(n.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the server has its own copy once started
	cmd := exec.Command(filepath.Join(p.Bin, "postgres"), "-D", n.Dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := asChild(cmd, "postgres", syscall.SIGQUIT); err != nil {
		return err
	}
	return n.launch(ctx, "postgres", cmd, func() error {
		_, err := p.Psql(ctx, n, "SELECT 1")
		return err
	}, func() string {
		log, _ := os.ReadFile(n.Log)
		return string(log)
	})
}

// pgStop is PostgreSQL's fast shutdown.
const pgStop = syscall.SIGINT

// WaitStreaming waits until the standby streams from the primary.
func (p *Postgres) WaitStreaming(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		out, err := p.Psql(ctx, p.Primary, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'`)
		if err == nil && strings.TrimSpace(out) == "1" {
			return nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(p.Standby.Log)
			return fmt.Errorf("the standby did not start streaming within %s (%v %s); standby log:\n%s", limit, err, out, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// StopStandby stops the standby (fast shutdown).
func (p *Postgres) StopStandby(ctx context.Context) error {
	p.Standby.stop(pgStop, 30*time.Second)
	return nil
}

// StartStandby starts it again and waits until it streams: until it has
// caught up with what the primary wrote meanwhile, which across a slow
// line takes as long as that log takes to cross (a minute and more for
// the long index rebuild's gigabyte at 100 Mbit/s).
func (p *Postgres) StartStandby(ctx context.Context) error {
	if err := p.start(ctx, p.Standby); err != nil {
		return err
	}
	return p.WaitStreaming(ctx, 3*time.Minute)
}

// LaunchStandby starts the standby again and returns once it takes
// connections, before it has caught up with the primary.
func (p *Postgres) LaunchStandby(ctx context.Context) error { return p.start(ctx, p.Standby) }

// Close stops both servers and removes their files.
func (p *Postgres) Close() {
	for _, n := range []*PGNode{p.Standby, p.Primary} {
		if n != nil {
			n.stop(pgStop, 30*time.Second)
		}
	}
	if p.root != "" {
		os.RemoveAll(p.root)
	}
}

// MariaNode is one MariaDB server: its data, socket and logs are in Dir.
type MariaNode struct{ Node }

// MariaOptions place a source and its replica.
type MariaOptions struct {
	Source, Replica Place
}

// Socket is the node's Unix socket.
func (n *MariaNode) Socket() string { return filepath.Join(n.Dir, "sock") }

// MariaDB is a source and one replica.
type MariaDB struct {
	Source, Replica *MariaNode
	root            string
}

// DSN is a mysql:// URL for user on node, database narrows.
func (m *MariaDB) DSN(n *MariaNode, user, password string) string {
	return fmt.Sprintf("mysql://%s:%s@%s/narrows", user, password, net.JoinHostPort(n.addr(), strconv.Itoa(n.Port)))
}

// SQL runs statements on a node as root over its socket. A Unix socket
// is a file, not in any network namespace, so this works wherever the
// node is placed.
func (m *MariaDB) SQL(ctx context.Context, n *MariaNode, sql string) (string, error) {
	return run(ctx, nil, "mariadb", "--no-defaults", "-uroot", "--socket="+n.Socket(), "-N", "-B", "-e", sql)
}

func mariaBins() (server, install string, err error) {
	for _, s := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(s); err == nil {
			server = p
			break
		}
		if _, err := os.Stat("/usr/sbin/" + s); err == nil {
			server = "/usr/sbin/" + s
			break
		}
	}
	for _, s := range []string{"mariadb-install-db", "mysql_install_db"} {
		if p, err := exec.LookPath(s); err == nil {
			install = p
			break
		}
	}
	if server == "" || install == "" {
		return "", "", errors.New("MariaDB server not found (Debian: apt-get install mariadb-server mariadb-client)")
	}
	if _, err := exec.LookPath("mariadb"); err != nil {
		return "", "", errors.New("the mariadb client is not installed (Debian: apt-get install mariadb-client)")
	}
	return server, install, nil
}

// StartMariaDB makes and starts a source and a replica, on loopback.
func StartMariaDB(ctx context.Context) (*MariaDB, error) {
	return StartMariaDBOn(ctx, MariaOptions{})
}

// StartMariaDBOn makes and starts a source and a replica where opts places
// them: each mariadbd is started on its host and listens on its address,
// and the replica's IO thread connects to the source's address, so the
// binary log crosses whatever joins the two.
//
// Seeding: both data directories are made fresh by mariadb-install-db,
// with the same system tables and no data, so the replica starts from the
// source's binary log position of the moment instead of from a copy (no
// base backup crosses the link, unlike StartPostgresOn); the users and the
// narrows database are made on the source after that position and reach
// the replica through replication.
func StartMariaDBOn(ctx context.Context, opts MariaOptions) (*MariaDB, error) {
	server, install, err := mariaBins()
	if err != nil {
		return nil, err
	}
	root, err := ownedTempDir("", "narrows-maria-", "mysql")
	if err != nil {
		return nil, err
	}
	m := &MariaDB{root: root}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	mk := func(name string, pl Place) (*MariaNode, error) {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		n := &MariaNode{Node{Name: name, Addr: pl.Addr, Port: port, Dir: filepath.Join(root, name), do: pl.Do}}
		args := []string{"--no-defaults", "--datadir=" + filepath.Join(n.Dir, "data"), "--auth-root-authentication-method=socket",
			"--skip-test-db", "--skip-name-resolve"}
		if os.Geteuid() == 0 {
			args = append(args, "--user=mysql")
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return nil, err
		}
		if os.Geteuid() == 0 {
			chownTo(n.Dir, "mysql")
		}
		// One retry: on a machine busy with disk benchmarks the install
		// has been seen to fail once and pass the next time.
		var err2 error
		for attempt := 0; attempt < 2; attempt++ {
			if attempt > 0 {
				os.RemoveAll(filepath.Join(n.Dir, "data"))
			}
			if _, err2 = run(ctx, nil, install, args...); err2 == nil {
				return n, nil
			}
		}
		return nil, err2
	}
	// The two data directories are made at once: it is most of the time.
	type made struct {
		n   *MariaNode
		err error
	}
	ch := make(chan made, 2)
	for name, pl := range map[string]Place{"source": opts.Source, "replica": opts.Replica} {
		go func() { n, err := mk(name, pl); ch <- made{n, err} }()
	}
	var firstErr error
	for range 2 { // both, so that no install still writes when Close removes the files
		x := <-ch
		if x.err != nil {
			firstErr = cmp.Or(firstErr, x.err)
			continue
		}
		if x.n.Name == "source" {
			m.Source = x.n
		} else {
			m.Replica = x.n
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for i, n := range []*MariaNode{m.Source, m.Replica} {
		if err := m.start(ctx, server, n, i+1); err != nil {
			return nil, err
		}
	}
	file, pos, err := m.sourcePos(ctx)
	if err != nil {
		return nil, err
	}
	// Made on the source after the replica's starting point: they reach
	// the replica through replication. Off loopback, sessions and the
	// replica's IO thread come from the other host's address (or the
	// host's own, for a client beside the server): each user is made for
	// any host as well as for 127.0.0.1.
	hosts := []string{"127.0.0.1"}
	if m.Source.addr() != "127.0.0.1" || m.Replica.addr() != "127.0.0.1" {
		hosts = append(hosts, "%")
	}
	users := "CREATE DATABASE narrows;\n"
	for _, h := range hosts {
		users += fmt.Sprintf(`CREATE USER 'repl'@'%[1]s' IDENTIFIED BY '%[2]s';
GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%[1]s';
CREATE USER 'narrows'@'%[1]s' IDENTIFIED BY '%[3]s';
GRANT ALL ON narrows.* TO 'narrows'@'%[1]s';
GRANT REPLICATION CLIENT, BINLOG MONITOR, REPLICA MONITOR, RELOAD ON *.* TO 'narrows'@'%[1]s';
CREATE USER 'limited'@'%[1]s' IDENTIFIED BY 'limited-pw-1';
GRANT SELECT ON narrows.* TO 'limited'@'%[1]s';
`, h, ReplPassword, NarrowsPassword)
	}
	if _, err := m.SQL(ctx, m.Source, users); err != nil {
		return nil, err
	}
	// The repl user exists by now, so the IO thread's first connection
	// succeeds (no retry wait).
	if _, err := m.SQL(ctx, m.Replica, fmt.Sprintf(`CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%d, MASTER_USER='repl',
  MASTER_PASSWORD='%s', MASTER_LOG_FILE='%s', MASTER_LOG_POS=%s, MASTER_USE_GTID=no, MASTER_CONNECT_RETRY=1; START SLAVE`,
		m.Source.addr(), m.Source.Port, ReplPassword, file, pos)); err != nil {
		return nil, err
	}
	if err := m.WaitReplicating(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return m, nil
}

func (m *MariaDB) start(ctx context.Context, server string, n *MariaNode, id int) error {
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(n.Dir, "data"), "--port=" + strconv.Itoa(n.Port),
		"--bind-address=" + n.addr(), "--socket=" + n.Socket(), "--pid-file=" + filepath.Join(n.Dir, "pid"),
		"--log-error=" + filepath.Join(n.Dir, "error.log"), "--server-id=" + strconv.Itoa(id),
		"--log-bin=" + filepath.Join(n.Dir, "data", "binlog"), "--binlog-format=ROW", "--skip-name-resolve",
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=64M", "--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0", "--max-connections=50", "--performance-schema=OFF"}
	if id > 1 {
		args = append(args, "--relay-log="+filepath.Join(n.Dir, "data", "relay"), "--read-only=OFF")
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=mysql")
	}
	// What it says before its error log is open (a bad option, say).
	console := filepath.Join(n.Dir, "console.log")
	out, err := os.OpenFile(console, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the server has its own copy once started
	cmd := exec.Command(server, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := asChild(cmd, "", syscall.SIGKILL); err != nil {
		return err
	}
	return n.launch(ctx, "mariadbd", cmd, func() error {
		_, err := m.SQL(ctx, n, "SELECT 1")
		return err
	}, func() string {
		early, _ := os.ReadFile(console)
		log, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
		return string(early) + string(log)
	})
}

// sourcePos is the source's binary log file and position now.
func (m *MariaDB) sourcePos(ctx context.Context) (file, pos string, err error) {
	status, err := m.SQL(ctx, m.Source, "SHOW MASTER STATUS")
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(status)
	if len(f) < 2 {
		return "", "", fmt.Errorf("SHOW MASTER STATUS: %q", status)
	}
	return f[0], f[1], nil
}

// WaitReplicating waits until both replication threads run and the
// replica has applied everything the source had when it was called.
func (m *MariaDB) WaitReplicating(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	file, pos, err := m.sourcePos(ctx)
	if err != nil {
		return err
	}
	want, _ := strconv.ParseInt(pos, 10, 64)
	for {
		out, err := run(ctx, nil, "mariadb", "--no-defaults", "-uroot", "--socket="+m.Replica.Socket(), "-e", "SHOW SLAVE STATUS\\G")
		if err == nil {
			st := map[string]string{}
			for _, line := range strings.Split(out, "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
					st[k] = v
				}
			}
			execPos, _ := strconv.ParseInt(st["Exec_Master_Log_Pos"], 10, 64)
			// Binary log names differ only in their zero-padded number.
			applied := st["Relay_Master_Log_File"] > file || st["Relay_Master_Log_File"] == file && execPos >= want
			if st["Slave_IO_Running"] == "Yes" && st["Slave_SQL_Running"] == "Yes" && applied {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica is not replicating, or has not applied the source's log up to %s:%s, after %s: %v\n%s", file, pos, limit, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close stops both servers and removes their files.
func (m *MariaDB) Close() {
	for _, n := range []*MariaNode{m.Replica, m.Source} {
		if n != nil {
			n.stop(syscall.SIGTERM, 20*time.Second)
		}
	}
	if m.root != "" {
		os.RemoveAll(m.root)
	}
}

// Tool runs a PostgreSQL program (pgbench, pg_basebackup, ...) as the
// postgres user on node n's host, with env added, and returns its output.
func (p *Postgres) Tool(ctx context.Context, n *PGNode, env []string, tool string, args ...string) (string, error) {
	var out string
	err := n.inPlace(func() error {
		var err error
		out, err = p.pg(ctx, env, tool, args...)
		return err
	})
	return out, err
}

// ScratchDir makes an empty directory the postgres user owns, removed
// with the servers by Close.
func (p *Postgres) ScratchDir(name string) (string, error) {
	dir := filepath.Join(p.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		if err := chownTo(dir, "postgres"); err != nil {
			return "", err
		}
	}
	return dir, nil
}
