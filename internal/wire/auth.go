package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
)

// NonceSize is the size of each side's challenge.
const NonceSize = 32

// NewNonce returns NonceSize random bytes.
func NewNonce() []byte {
	b := make([]byte, NonceSize)
	if _, err := rand.Read(b); err != nil {
		panic("wire: no randomness: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	return b
}

// Proof is the HMAC-SHA256 that one side sends to show it holds the
// secret. The role string binds the proof to its direction so that an
// agent's proof can never be replayed as a client's; the session and both
// nonces bind it to this one connection.
func Proof(secret []byte, role, session string, clientNonce, agentNonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("narrows/v1 " + role + "\x00" + session + "\x00"))
	m.Write(clientNonce)
	m.Write(agentNonce)
	return m.Sum(nil)
}

// Verify checks a proof in constant time.
func Verify(secret []byte, role, session string, clientNonce, agentNonce, mac []byte) bool {
	return hmac.Equal(mac, Proof(secret, role, session, clientNonce, agentNonce))
}

// Overlap returns the highest version both ranges share, or 0.
func Overlap(minA, maxA, minB, maxB int) int {
	hi := min(maxA, maxB)
	if hi < max(minA, minB) {
		return 0
	}
	return hi
}
