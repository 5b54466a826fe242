package output_test

import (
	"crypto/sha256"
	"encoding/base64"
)

func hashCSS(s string) string {
	h := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}
