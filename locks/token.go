package locks

import (
	"encoding/base64"
	"strings"
)

// BytesToken begins the token of a lease whose mark on the store is bytes
// that are no JSON string (rslock's random value): the adapter gives it as
// token_b64 (docs/protocol.md), and the lease's Token is this prefix and
// that base64 text, which the history keeps as it is. Mark decodes it.
const BytesToken = "b64:"

// Mark is how lock node i of n marks the lease whose token is token: a
// lock whose nodes mark one lease differently names it by one mark per
// node, comma-separated in the order of the nodes (RedissonRedLock); any
// other token is every node's. A BytesToken's marks are the bytes its
// base64 text decodes to (a mark that does not decode is kept as given,
// and matches nothing).
func Mark(token string, i, n int) string {
	text, b64 := strings.CutPrefix(token, BytesToken)
	if marks := strings.Split(text, ","); n > 1 && len(marks) == n {
		text = marks[i]
	}
	if !b64 {
		return text
	}
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return token
	}
	return string(b)
}
