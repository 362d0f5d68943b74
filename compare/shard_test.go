package compare

import (
	"slices"
	"testing"
)

// The shards of a comparison hold every cell exactly once, each in the
// shard its name decides whatever the other flags, and share the cells
// that run evenly.
func TestShardOfDealsEveryCellOnceByName(t *testing.T) {
	var cells []Cell
	for _, l := range []string{"token-lua", "set-nx-px", "redlock"} {
		for _, n := range []string{"none", "pause-client", "crash-restart:persistence=always", "clock-jump"} {
			c := Cell{Lock: l, Nemesis: n}
			if l == "redlock" && n == "none" {
				c.Skip = SkipNA
			}
			cells = append(cells, c)
		}
	}
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		mine := ShardOf(cells, i, 3)
		running := 0
		for _, c := range mine {
			seen[c.Name()]++
			if c.Skip == "" {
				running++
			}
		}
		if running < 3 || running > 4 {
			t.Errorf("shard %d/3 runs %d of the 11 cells that run, want 3 or 4", i, running)
		}
		// The same cells with other settings (another seed): the same shard.
		other := slices.Clone(cells)
		for k := range other {
			other[k].Config.Seed = 42
		}
		var a, b []string
		for _, c := range mine {
			a = append(a, c.Name())
		}
		for _, c := range ShardOf(other, i, 3) {
			b = append(b, c.Name())
		}
		if !slices.Equal(a, b) {
			t.Errorf("shard %d/3: %v, with other settings %v", i, a, b)
		}
	}
	for _, c := range cells {
		if seen[c.Name()] != 1 {
			t.Errorf("%s is in %d shards", c.Name(), seen[c.Name()])
		}
	}
	if got := ShardOf(cells, 1, 1); len(got) != len(cells) {
		t.Errorf("shard 1/1 holds %d of %d cells", len(got), len(cells))
	}
}
