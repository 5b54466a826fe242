// Package client is the client's side of a session with an agent: dial,
// version negotiation, mutual authentication, asking for a test and opening
// its data connections. Probes use it; it measures nothing itself beyond
// the time each connection took to open.
package client
