//go:build !linux

package linuxonly

// The compiler's error quotes the string.
var _ int = "lockchaos runs only on Linux: see README.md, Install"
