package nemesis

import "github.com/lockchaos/lockchaos/cluster"

// groupOf is lock node n's replication group, or nil (also when the run's
// environment has no replication groups).
func groupOf(env Env, n int) *cluster.Group {
	repl, err := replicationOf(env)
	if err != nil {
		return nil
	}
	if gs := repl.Groups(); n < len(gs) {
		return gs[n]
	}
	return nil
}
