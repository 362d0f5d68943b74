package proxy

import (
	"sync"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// AckLossToxic loses the answers to requests the server has acted on: the
// first reply on a connection while it is installed is dropped, and the
// connection stays silent from then on, in both directions, as a
// connection whose network died just after the request got through. The
// client's command times out without knowing that it ran; later requests
// on the connection still reach the server, and their answers are lost
// too (a link that has failed one way). TCP never delivers a byte after a
// lost one, so such a connection must not carry a reply again: whoever
// removes the toxic closes the link's connections first (Link.Disable),
// as the ack-loss nemesis's heal does. A Redis handshake's reply (HELLO)
// passes, as for slow-reply, so that a client that reconnects sends its
// command.
//
// Tag names the fault: Dropped(Tag) counts the replies it dropped.
type AckLossToxic struct {
	Tag string `json:"tag"`
}

var dropped tally

// Dropped says how many replies the ack-loss toxics tagged tag dropped.
func Dropped(tag string) int { return dropped.get(tag) }

// tally counts what toxics did, by their fault's tag: a toxic runs once per
// connection and stream, a fault asks for the sum.
type tally struct {
	sync.Mutex
	n map[string]int
}

func (t *tally) add(tag string) {
	t.Lock()
	defer t.Unlock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[tag]++
}

func (t *tally) get(tag string) int {
	t.Lock()
	defer t.Unlock()
	return t.n[tag]
}

// Pipe forwards replies until one that is not a handshake's arrives; it
// drops that one and all that follow.
func (t *AckLossToxic) Pipe(stub *toxics.ToxicStub) {
	dead := false
	eachChunk(stub, func(c *stream.StreamChunk) bool {
		switch {
		case dead:
		case IsHelloReply(c.Data):
			stub.Output <- c
		default:
			dead = true
			dropped.add(t.Tag)
		}
		return true
	})
}

func init() { toxics.Register("ack-loss", new(AckLossToxic)) }
