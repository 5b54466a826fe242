package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/narrows/narrows/internal/wire"
)

// Config is an agent's settings. Zero values take the defaults below.
type Config struct {
	// Secret is the shared secret clients must prove. Empty means
	// insecure, which Validate allows only on a loopback address.
	Secret   []byte
	Insecure bool

	MaxTests         int           // concurrent tests (default 4)
	MaxConns         int           // open connections of any kind (default 64)
	MaxUnauthPerHost int           // connections from one address not yet authenticated (default MaxConns/8, at least 4)
	MaxDuration      time.Duration // one test (default 10 min)
	MaxStreams       int           // data connections per test direction (default 128)
	MaxBlock         int64         // block, request or response size (default 16 MiB)
	MaxMemory        int64         // buffers of all running tests together (default 512 MiB)
	MaxTestMemory    int64         // buffers of one test (default 256 MiB, at most MaxMemory)
	HandshakeTimeout time.Duration // from accept to authenticated (default 10 s)
	IdleTimeout      time.Duration // an authenticated control connection with no test (default 60 s)
	DataTimeout      time.Duration // a data connection that moves nothing (default 10 s)

	// DiskRoots are the directories disk tests may run in (--disk-path,
	// from ResolveDiskPaths); none: disk tests are refused.
	DiskRoots   []DiskRoot
	MaxDiskSize int64 // the largest test file a disk test may ask for (default 4 GiB)

	// AllowTry lets a client's test change this host's settings for the
	// test's length, and put them back (--allow-try): a stream's receive
	// steered off a core (`net stream --try-rps`).
	AllowTry bool

	Logger *slog.Logger
	// Software is the agent's version string, told to a client in the
	// Welcome, once it has proved it holds the secret.
	Software string
}

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxTests, 4)
	def(&c.MaxConns, 64)
	def(&c.MaxUnauthPerHost, max(4, c.MaxConns/8))
	def(&c.MaxStreams, 128)
	if c.MaxBlock <= 0 {
		c.MaxBlock = 16 << 20
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = 512 << 20
	}
	if c.MaxTestMemory <= 0 {
		c.MaxTestMemory = 256 << 20
	}
	c.MaxTestMemory = min(c.MaxTestMemory, c.MaxMemory)
	if c.MaxDiskSize <= 0 {
		c.MaxDiskSize = DefaultMaxDiskSize
	}
	defd(&c.MaxDuration, 10*time.Minute)
	defd(&c.HandshakeTimeout, 10*time.Second)
	defd(&c.IdleTimeout, 60*time.Second)
	defd(&c.DataTimeout, 10*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// DefaultMaxDiskSize is the largest disk test file an agent allows unless
// its operator says otherwise: four times `narrows disk`'s default size.
const DefaultMaxDiskSize = 4 << 30

// maxDataConns is how many data connections one test may open: what one
// report frame can carry, and never more than --max-conns leaves beside
// the test's own control connection.
func (c *Config) maxDataConns() int { return max(1, min(wire.MaxSlots, c.MaxConns-1)) }

// ErrInsecureNotLoopback refuses an unauthenticated agent on a reachable address.
var ErrInsecureNotLoopback = errors.New("--insecure is allowed only on a loopback address (127.0.0.1 or [::1]); give the agent a secret with --secret-file or NARROWS_SECRET")

// Validate checks the security settings against the address the agent
// listens on (a host:port; the host must be a literal IP).
func (c *Config) Validate(listen netip.AddrPort) error {
	switch {
	case len(c.Secret) == 0 && !c.Insecure:
		return errors.New("no secret: give one with --secret-file FILE or NARROWS_SECRET, or --insecure on loopback only")
	case len(c.Secret) > 0 && c.Insecure:
		return errors.New("both a secret and --insecure given: choose one")
	case c.Insecure && !listen.Addr().IsLoopback():
		return fmt.Errorf("listen address %s: %w", listen, ErrInsecureNotLoopback)
	case len(c.Secret) > 0 && len(c.Secret) < 16:
		return errors.New("the secret is too short: use at least 16 characters, e.g. (umask 077; openssl rand -hex 32 > secret)")
	}
	return nil
}
