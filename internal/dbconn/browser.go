package dbconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A named instance (HOST\INSTANCE) listens on a port that the SQL Server
// Browser on the host gives out over UDP 1434 (SSRP, [MC-SQLR]). The
// driver would ask it inside every connect; narrows asks once, before
// the first: the TCP probes need the port, the connect's phases then
// hold no Browser round trip (and no UDP dial taken for a failed TCP
// attempt), and a Browser that does not answer is named as such.

// BrowserPort is the SQL Server Browser's UDP port.
const BrowserPort = 1434

// browserPort is BrowserPort; unit tests move it off the privileged port.
var browserPort = BrowserPort

// resolveMu keeps sessions opened at once from each asking the Browser.
var resolveMu sync.Mutex

// Resolve asks the SQL Browser for the port of d's named instance when
// the DSN gives none; it does nothing otherwise, or once it is known.
func (d *DSN) Resolve(ctx context.Context, timeout time.Duration) error {
	resolveMu.Lock()
	defer resolveMu.Unlock()
	if d.Engine != SQLServer || d.Instance == "" || d.Port != 0 {
		return nil
	}
	port, err := browse(ctx, d.Host, d.Instance, timeout)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Msg = fmt.Sprintf("connect: %s: %s", d.Redacted, e.Msg)
		}
		return err
	}
	d.Port = port
	return nil
}

// browse asks the Browser on host for instance's TCP port: a
// CLNT_UCAST_INST request, sent again each second (UDP may lose it) until
// timeout, at most 5 s.
func browse(ctx context.Context, host, instance string, timeout time.Duration) (int, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(browserPort))
	give := fmt.Sprintf("give the port instead: sqlserver://USER@%s:PORT, or Server=%s,PORT", host, host)
	noAnswer := func(err error, how string) error {
		return &Error{Kind: Unreachable, Err: err, Msg: fmt.Sprintf("the SQL Browser on %s did not answer for instance %s%s: start the SQL Server Browser service on %s (and let UDP %d through its firewall), or %s",
			addr, instance, how, host, browserPort, give)}
	}
	if timeout <= 0 || timeout > 5*time.Second {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "udp", addr)
	if err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) {
			return 0, &Error{Kind: Unreachable, Err: err, Msg: fmt.Sprintf("resolve %s: %s (is the host name right?)", host, dns.Err)}
		}
		return 0, noAnswer(err, " (it cannot be reached)")
	}
	defer c.Close()
	// CLNT_UCAST_INST: 0x04, then the instance name, NUL-terminated.
	req := append(append([]byte{0x04}, instance...), 0)
	buf := make([]byte, 65535)
	for ctx.Err() == nil {
		if _, err := c.Write(req); err != nil {
			return 0, noAnswer(err, " (it cannot be reached)")
		}
		wait := time.Now().Add(time.Second)
		if dl, _ := ctx.Deadline(); dl.Before(wait) {
			wait = dl
		}
		c.SetReadDeadline(wait)
		n, err := c.Read(buf)
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			// The host said no one listens there: asking again is no use.
			return 0, noAnswer(err, " (nothing listens on that UDP port)")
		case err != nil:
			continue
		}
		return instancePort(buf[:n], host, instance, give)
	}
	if err := context.Cause(ctx); errors.Is(err, context.Canceled) {
		return 0, err
	}
	return 0, noAnswer(ctx.Err(), fmt.Sprintf(" within %s", timeout))
}

// instancePort reads the Browser's SVR_RESP: 0x05, a little-endian
// uint16 length, then "ServerName;H;InstanceName;X;...;tcp;PORT;;" for
// each instance it lists.
func instancePort(msg []byte, host, instance, give string) (int, error) {
	bad := func(why string) error {
		return &Error{Kind: Unreachable, Msg: fmt.Sprintf("the SQL Browser on %s answered for instance %s, but %s: %s", host, instance, why, give)}
	}
	if len(msg) < 3 || msg[0] != 0x05 {
		return 0, bad("not with an SSRP reply (is something else on UDP 1434?)")
	}
	body := msg[3:]
	if n := int(binary.LittleEndian.Uint16(msg[1:3])); n < len(body) {
		body = body[:n]
	}
	var names []string
	for _, rec := range strings.Split(string(body), ";;") {
		f := strings.Split(rec, ";")
		kv := map[string]string{}
		for i := 0; i+1 < len(f); i += 2 {
			kv[strings.ToLower(f[i])] = f[i+1]
		}
		name := kv["instancename"]
		if name == "" {
			continue
		}
		if !strings.EqualFold(name, instance) {
			names = append(names, name)
			continue
		}
		tcp, ok := kv["tcp"]
		if !ok {
			return 0, &Error{Kind: Unreachable, Msg: fmt.Sprintf("instance %s on %s does not listen on TCP: enable TCP/IP for it (SQL Server Configuration Manager) and restart it", instance, host)}
		}
		port, err := strconv.Atoi(tcp)
		if err != nil || port < 1 || port > 65535 {
			return 0, bad(fmt.Sprintf("with the TCP port %q", tcp))
		}
		return port, nil
	}
	if len(names) > 0 {
		return 0, &Error{Kind: Unreachable, Msg: fmt.Sprintf("the SQL Browser on %s knows no instance %s (it lists %s): check the instance name", host, instance, strings.Join(names, ", "))}
	}
	return 0, bad("its reply names no instance")
}
