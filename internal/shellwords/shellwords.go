// Package shellwords splits a command line into its words as a POSIX shell
// would for quotes and backslashes, without running a shell: --lock-cmd
// 'python3 "my adapter.py" --name it\'s' is three words; and quotes a word
// for one (Quote, Split's inverse).
package shellwords

import (
	"errors"
	"fmt"
	"strings"
)

// Split returns the words of line. Outside quotes, blanks separate words
// and a backslash takes the next character as it is; in single quotes
// every character is itself; in double quotes a backslash escapes only $,
// `, ", \ and a newline. Two quotes with nothing between them are an
// empty word.
//
// Nothing is expanded: an unquoted character that a shell would expand or
// read as an operator ($, `, ;, &, |, <, >, (, ), *, ?, [, and ~ or # at
// the start of a word),
// and $ or ` in double quotes, is an error saying to quote it or to run a
// shell (sh -c '…'), since running the words without one would quietly
// mean something else.
func Split(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	shell := func(c rune) error {
		return fmt.Errorf("%q: %c means something to a shell, and no shell runs this command: quote it (\\%c or '%c') to mean the character, or run a shell: sh -c '…'", line, c, c, c)
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			end()
		case c == '\\':
			if i+1 == len(rs) {
				return nil, fmt.Errorf("%q: a backslash at the end escapes nothing", line)
			}
			i++
			if rs[i] != '\n' { // backslash-newline continues the line
				cur.WriteRune(rs[i])
				inWord = true
			}
		case c == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("%q: a single quote is not closed", line)
			}
			cur.WriteString(string(rs[i+1 : j]))
			inWord, i = true, j
		case c == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch {
				case rs[j] == '$' || rs[j] == '`':
					return nil, shell(rs[j])
				case rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[j+1]):
					j++
					if rs[j] != '\n' {
						cur.WriteRune(rs[j])
					}
				default:
					cur.WriteRune(rs[j])
				}
			}
			if j == len(rs) {
				return nil, fmt.Errorf("%q: a double quote is not closed", line)
			}
			inWord, i = true, j
		case strings.ContainsRune("$`;&|<>()*?[", c) || (c == '~' || c == '#') && !inWord:
			return nil, shell(c)
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	end()
	if len(words) == 0 {
		return nil, errors.New("no command: the line is empty")
	}
	return words, nil
}

// Quote quotes s for a POSIX shell when it needs it: the commands
// lockchaos prints for the user to run, a CI script's lines.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '=' || r == ',' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
