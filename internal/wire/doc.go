// Package wire is the agent's control protocol, shared by the client and the
// agent: a magic preface, then length-prefixed frames of one type byte and a
// JSON body, capped at MaxFrame; the message types; version negotiation; and
// the HMAC challenge-response that proves both ends hold the shared secret.
// It owns no sockets and no goroutines: callers bring a net.Conn with
// deadlines already set.
package wire
