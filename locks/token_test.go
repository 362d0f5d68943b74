package locks

import "testing"

// A token names each node's mark: one for every node, or one per node,
// comma-separated; a token_b64's marks are the bytes their base64 gives.
func TestMarkIsEachNodesBytes(t *testing.T) {
	for _, tc := range []struct {
		token string
		i, n  int
		want  string
	}{
		{"client-1:7", 0, 1, "client-1:7"},
		{"a,b,c", 2, 3, "c"},
		{"a,b", 0, 3, "a,b"}, // not one per node: every node's
		{"b64:/4eZ", 0, 3, "\xff\x87\x99"},
		{"b64:QQ==,Qg==,/w==", 2, 3, "\xff"},
		{"b64:not base64!", 0, 1, "b64:not base64!"}, // matches nothing on a node
	} {
		if got := Mark(tc.token, tc.i, tc.n); got != tc.want {
			t.Errorf("Mark(%q, %d, %d) = %q, want %q", tc.token, tc.i, tc.n, got, tc.want)
		}
	}
}
