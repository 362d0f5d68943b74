package cli

import (
	"strings"
	"testing"
)

// A flag that takes one value, given twice, is a usage error naming the
// flag and both values: the last does not silently win. --opt, which is
// repeatable, may be given twice.
func TestFlagGivenTwiceIsAUsageError(t *testing.T) {
	// Each line is wrong in a second way that the code before this check
	// refused at once (--clients 0, a nemesis nobody knows, an empty
	// folder): a flag given twice is found first.
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--lock", "token-lua", "--lock", "fenced", "--clients", "0", "--out", dir}, "--lock given twice (token-lua, then fenced)"},
		{[]string{"run", "--lock=token-lua", "--ttl", "300ms", "--ttl=1s", "--clients", "0", "--out", dir}, "--ttl given twice (300ms, then 1s)"},
		{[]string{"run", "--quiet", "--lock", "token-lua", "--quiet", "--clients", "0", "--out", dir}, "--quiet given twice"},
		{[]string{"chaos", "--parallel", "2", "--parallel", "3", "--scenarios", "no-such-cell", "--out", dir}, "--parallel given twice (2, then 3)"},
		{[]string{"compare", "--locks", "token-lua", "--locks", "fenced", "--nemeses", "gremlins", "--out", dir}, "--locks given twice (token-lua, then fenced)"},
		// shrink takes its flags on either side of the folder.
		{[]string{"shrink", "--tries", "2", dir, "--tries", "3"}, "--tries given twice (2, then 3)"},
	} {
		_, stderr, code := lockchaos(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockchaos %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	// --opt is repeatable: the error is the unknown lock's, not a flag given twice.
	_, stderr, code := lockchaos(t, "run", "--lock", "nope", "--opt", "pause-client.duration=1ttl", "--opt", "pause-client.phase=acquire", "--out", dir)
	if code != ExitUsage || strings.Contains(stderr, "twice") || !strings.Contains(stderr, `unknown lock "nope"`) {
		t.Errorf("run --opt twice: exit %d, stderr %q; want the unknown lock, not a flag given twice", code, stderr)
	}
}
