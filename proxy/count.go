package proxy

import (
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// CountToxic passes everything through and counts the connections that
// carry data while it is installed. Put in front of a reset_peer toxic on
// the same stream, it counts the connections that toxic reset: each one a
// request that reached the link and was lost with its connection.
//
// Tag names the fault: Carried(Tag) says how many connections it counted.
type CountToxic struct {
	Tag string `json:"tag"`
}

var carried tally

// Carried says how many connections the count toxics tagged tag saw carry
// data.
func Carried(tag string) int { return carried.get(tag) }

// NewState is one connection's: whether it has carried data yet.
func (t *CountToxic) NewState() any { return new(bool) }

func (t *CountToxic) Pipe(stub *toxics.ToxicStub) {
	seen := stub.State.(*bool)
	eachChunk(stub, func(c *stream.StreamChunk) bool {
		if !*seen {
			*seen = true
			carried.add(t.Tag)
		}
		stub.Output <- c
		return true
	})
}

// eachChunk calls f with each chunk of stub's input, in order, until the
// stub is interrupted, its input ends (then it closes the stub) or f says
// to stop: a toxic's Pipe, as toxiproxy's own toxics loop.
func eachChunk(stub *toxics.ToxicStub, f func(c *stream.StreamChunk) bool) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if !f(c) {
				return
			}
		}
	}
}

func init() { toxics.Register("count", new(CountToxic)) }
