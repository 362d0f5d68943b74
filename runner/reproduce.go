package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// reproduce says how to make the run in dir again, for its result.json:
// the version of lockchaos, the replay command, and the configuration and
// fault schedule it ran with. Nil when dir holds no config.json (a history
// only checked).
func reproduce(dir string) *checker.Reproduce {
	cfg, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil || !json.Valid(cfg) {
		return nil
	}
	r := &checker.Reproduce{Version: Version(), Config: json.RawMessage(cfg)}
	if s, err := os.ReadFile(filepath.Join(dir, ScheduleFile)); err == nil && json.Valid(s) {
		r.Schedule = json.RawMessage(s)
	}
	clean := filepath.Clean(dir)
	r.Command = "lockchaos run --replay " + ShellQuote(clean) + " --out " + ShellQuote(clean+"-replay")
	return r
}

// Version is this build's version: its module version, or the VCS
// revision it was built from ("(modified)" when the tree had changes).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information)"
	}
	version := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if rev != "" && !strings.Contains(version, rev[:min(12, len(rev))]) {
		version += " " + rev[:min(12, len(rev))] + modified
	}
	return strings.TrimSpace(version)
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '=' || r == ',' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
