package shellwords_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/shellwords"
)

// Words come out as a POSIX shell makes them of quotes and backslashes.
func TestSplitAsAShellWould(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"perl adapter.pl", []string{"perl", "adapter.pl"}},
		{"  perl\tadapter.pl  \n", []string{"perl", "adapter.pl"}},
		{`python3 "my adapter.py"`, []string{"python3", "my adapter.py"}},
		{`python3 'my adapter.py' --name "it's"`, []string{"python3", "my adapter.py", "--name", "it's"}},
		{`java -Dx='a b'c -jar x.jar`, []string{"java", "-Dx=a bc", "-jar", "x.jar"}},
		{`node my\ adapter.js`, []string{"node", "my adapter.js"}},
		{`echo 'a\b' "a\b" "a\"b" "a\\b" a\\b`, []string{"echo", `a\b`, `a\b`, `a"b`, `a\b`, `a\b`}},
		{`sh -c 'exec perl a.pl "$@"; echo $HOME' x`, []string{"sh", "-c", `exec perl a.pl "$@"; echo $HOME`, "x"}},
		{`prog '' "" x`, []string{"prog", "", "", "x"}},
		{"prog a\\\nb", []string{"prog", "ab"}},
		{`prog a~b c#d`, []string{"prog", "a~b", "c#d"}},
	} {
		got, err := shellwords.Split(tc.line)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

// What a shell would expand, or read as an operator, is refused with a
// reason, as is a quote left open: running the words without a shell
// would quietly do something else.
func TestSplitRefusesWhatOnlyAShellCanDo(t *testing.T) {
	for _, tc := range []struct{ line, says string }{
		{`perl 'adapter.pl`, "single quote is not closed"},
		{`perl "adapter.pl`, "double quote is not closed"},
		{`perl adapter.pl\`, "backslash at the end"},
		{`perl $HOME/adapter.pl`, "$ means something to a shell"},
		{`perl "$HOME/adapter.pl"`, "$ means something to a shell"},
		{"perl `pwd`/a.pl", "` means something to a shell"},
		{`cd x && perl a.pl`, "& means something to a shell"},
		{`perl a.pl | tee log`, "| means something to a shell"},
		{`perl a.pl 2>log`, "> means something to a shell"},
		{`perl ~/a.pl`, "~ means something to a shell"},
		{`perl *.pl`, "* means something to a shell"},
		{`perl a.pl # try`, "# means something to a shell"},
		{"   ", "no command"},
	} {
		got, err := shellwords.Split(tc.line)
		if err == nil {
			t.Errorf("Split(%q) = %q; want an error saying %s", tc.line, got, tc.says)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Split(%q): %v; want it to say %s", tc.line, err, tc.says)
		}
	}
}

// Split reads back what Quote writes.
func TestSplitReadsShellQuote(t *testing.T) {
	words := []string{"perl", "my adapter.pl", "it's", `a"b`, `back\slash`, "$HOME", "a;b", "", "tab\there", "~x", "*"}
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, shellwords.Quote(w))
	}
	got, err := shellwords.Split(strings.Join(quoted, " "))
	if err != nil || !slices.Equal(got, words) {
		t.Errorf("Split(%s) = %q, %v; want %q", strings.Join(quoted, " "), got, err, words)
	}
}
