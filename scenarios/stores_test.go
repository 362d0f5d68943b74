package scenarios

// The grid and the schema name every lock, those of the stores in folders
// of their own too (stores/NAME), which register from their init functions.
import _ "github.com/lockchaos/lockchaos/stores"
