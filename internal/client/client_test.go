package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/wire"
)

// standIn is a fake agent on a real socket: it speaks the wire protocol as
// far as the Welcome, announcing authRequired and sending mac as its own
// proof. It reports whether the client sent it a proof.
func standIn(t *testing.T, authRequired bool, mac []byte) (addr string, sentProof <-chan bool) {
	t.Helper()
	return standInSaying(t, wire.Challenge{AuthRequired: authRequired, Software: "stand-in"}, wire.Welcome{MAC: mac})
}

// standInSaying is a stand-in sending ch (its version, session and nonce
// filled in) and w (with limits).
func standInSaying(t *testing.T, ch wire.Challenge, w wire.Welcome) (addr string, sentProof <-chan bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	proof := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var h wire.Hello
		if wire.ReadMagic(c) != nil || wire.Expect(c, wire.THello, &h) != nil {
			return
		}
		ch.Version, ch.Session, ch.Nonce = wire.Version, "s", wire.NewNonce()
		wire.WriteFrame(c, wire.TChalleng, ch)
		var a wire.Auth
		if wire.Expect(c, wire.TAuth, &a) != nil {
			return
		}
		proof <- len(a.MAC) > 0
		w.Limits = wire.Limits{MaxTests: 1, MaxStreams: 1}
		wire.WriteFrame(c, wire.TWelcome, w)
		c.Read(make([]byte, 1)) // hold the connection until the client is done with it
	}()
	return ln.Addr().String(), proof
}

// TestStandInCannotSwitchAuthOff: an agent's "no auth needed" never
// overrides the client. A client with a secret demands the agent's proof;
// one without needs its own Insecure to accept an unauthenticated agent,
// and the session then says it is unauthenticated.
func TestStandInCannotSwitchAuthOff(t *testing.T) {
	secret := []byte("0123456789abcdef0123")
	cases := []struct {
		name         string
		authRequired bool
		mac          []byte
		secret       []byte
		insecure     bool
		want         string // "" means the session opens
	}{
		{"secret held, agent says no auth", false, nil, secret, false, "does not authenticate"},
		{"secret held and --insecure, agent says no auth", false, nil, secret, true, "does not authenticate"},
		{"no secret, agent says no auth", false, nil, nil, false, "pass --insecure"},
		{"no secret, --insecure", false, nil, nil, true, ""},
		{"agent asks for auth but proves nothing", true, []byte("forged"), secret, false, "did not prove"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, proof := standIn(t, c.authRequired, c.mac)
			s, err := client.Dial(context.Background(), client.Options{Addr: addr, Secret: c.secret, Insecure: c.insecure, Timeout: 5 * time.Second})
			if c.want != "" {
				if s != nil {
					s.Close()
				}
				if !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Dial = %v, want ErrAuth containing %q", err, c.want)
				}
				if strings.Contains(err.Error(), string(secret)) {
					t.Fatalf("the secret is in the error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer s.Close()
			if s.Authenticated {
				t.Fatal("a session with an agent that proved nothing says it is authenticated")
			}
			if <-proof {
				t.Fatal("the client sent a proof to an agent that asked for none")
			}
			if s.Facts != nil {
				t.Fatalf("facts from an agent that told none (an old agent's Welcome): %+v", s.Facts)
			}
		})
	}
}

// TestReleaseFromWelcome: the client takes the agent's release from the
// Welcome, which an agent sends only after the client's proof, and from
// the Challenge only when an older agent told it there and not in the
// Welcome.
func TestReleaseFromWelcome(t *testing.T) {
	for _, c := range []struct {
		name               string
		challenge, welcome string
		want               string
	}{
		{"an agent of this release", "", "0.2.0", "0.2.0"},
		{"an older agent", "0.1.0", "", "0.1.0"},
		{"both", "0.1.0", "0.2.0", "0.2.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, _ := standInSaying(t, wire.Challenge{Software: c.challenge}, wire.Welcome{Software: c.welcome})
			s, err := client.Dial(context.Background(), client.Options{Addr: addr, Insecure: true, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Software != c.want {
				t.Errorf("Software %q, want %q", s.Software, c.want)
			}
		})
	}
}
