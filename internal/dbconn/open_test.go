package dbconn

import (
	"testing"
	"time"
)

// TestPhasesAccountForEveryAttempt: a refused TLS attempt and a failed
// dial before the session's own connection are each named, and setup,
// the attempts, TCP, TLS and login add up to the total to the nanosecond.
func TestPhasesAccountForEveryAttempt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	cases := []struct {
		name     string
		attempts []*attempt
		outcomes []string
		tls      bool
	}{
		{"one connection", []*attempt{{start: at(40), dialEnd: at(150)}}, nil, false},
		{"refused TLS, then plain", []*attempt{
			{start: at(40), dialEnd: at(150), tlsAsked: true, tlsRefused: true},
			{start: at(8040), dialEnd: at(8148)},
		}, []string{AttemptTLSRefused}, false},
		{"no TCP, TLS failed, then TLS", []*attempt{
			{start: at(40)},
			{start: at(1000), dialEnd: at(1100), tlsAsked: true},
			{start: at(3000), dialEnd: at(3100), tlsEnd: at(4000)},
		}, []string{AttemptNoTCP, AttemptTLSFailed}, true},
		{"login over TLS refused, then plain", []*attempt{
			{start: at(40), dialEnd: at(150), tlsAsked: true, tlsEnd: at(900)},
			{start: at(2000), dialEnd: at(2100)},
		}, []string{AttemptAbandoned}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{start: t0, attempts: c.attempts}
			p := r.phases(at(21100))
			var got []string
			sum := p.Setup + p.TCP + p.TLS + p.Login
			for _, a := range p.Failed {
				got = append(got, a.Outcome)
				sum += a.Took
			}
			if len(got) != len(c.outcomes) {
				t.Fatalf("failed attempts %v, want %v", got, c.outcomes)
			}
			for i := range got {
				if got[i] != c.outcomes[i] {
					t.Fatalf("failed attempts %v, want %v", got, c.outcomes)
				}
			}
			if sum != p.Total || p.Total != 21100*time.Microsecond || p.TLSUsed != c.tls {
				t.Fatalf("parts add to %v, total %v, TLS %v: %+v", sum, p.Total, p.TLSUsed, p)
			}
		})
	}
}
