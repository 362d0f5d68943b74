package proxy

import (
	"bytes"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"

	"github.com/lockchaos/lockchaos/history"
)

// SlowReplyToxic delays replies by Latency ms, except the reply to a Redis
// client's connection handshake (HELLO), which passes at once.
//
// A client whose op timeout is shorter than the delay times out, and
// go-redis (like most clients) closes a connection after a timeout; its
// next command opens a new one and sends HELLO first. Delaying that reply
// too would keep every later command from ever reaching the server: the
// fault would block requests instead of delaying replies (redis-cli
// MONITOR showed the slowed client's commands arriving only in the first
// moments of each fault). With the handshake answered at once, every
// command the client sends during the fault reaches the server, runs, and
// its reply comes late — which is what slow-reply is meant to do.
//
// Other stores' protocols (etcd's gRPC, ZooKeeper's, PostgreSQL's) have no
// such reply to recognise: every reply on their links is delayed,
// connection set-up included.
type SlowReplyToxic struct {
	Latency int64 `json:"latency"` // ms
	// Log, when set, names the ReplyLog (NewReplyLog) that records each
	// reply the toxic delays.
	Log string `json:"log,omitempty"`
}

// ReplyLog records the replies slow-reply toxics delayed: when each came
// from the server, and when it was due out to the client (a delay later),
// in history time.
type ReplyLog struct {
	mu      sync.Mutex
	replies [][2]int64
}

// maxLoggedReplies bounds a log: the newest are kept.
const maxLoggedReplies = 4096

var replyLogs sync.Map // name → *ReplyLog

// NewReplyLog registers a log for the toxics whose Log is name; forget
// removes it.
func NewReplyLog(name string) (l *ReplyLog, forget func()) {
	l = &ReplyLog{}
	replyLogs.Store(name, l)
	return l, func() { replyLogs.Delete(name) }
}

func (l *ReplyLog) add(came, due int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.replies) == maxLoggedReplies {
		l.replies = l.replies[1:]
	}
	l.replies = append(l.replies, [2]int64{came, due})
}

// HeldPast says whether a reply that came from the server between from and
// to was still held back at to, due out after it: a client that stopped
// waiting at to gave up on a reply its delay kept from it.
func (l *ReplyLog) HeldPast(from, to int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.replies {
		if r[0] >= from && r[0] <= to && r[1] > to {
			return true
		}
	}
	return false
}

// LastCame is when the last reply that came from the server between from
// and to came; false when none did.
func (l *ReplyLog) LastCame(from, to int64) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last int64
	for _, r := range l.replies {
		if r[0] >= from && r[0] <= to && r[0] > last {
			last = r[0]
		}
	}
	return last, last > 0
}

// GetBufferSize is as toxiproxy's latency toxic's.
func (t *SlowReplyToxic) GetBufferSize() int { return 1024 }

// Pipe forwards each chunk Latency after it arrived, a handshake reply at
// once.
func (t *SlowReplyToxic) Pipe(stub *toxics.ToxicStub) {
	delay := time.Duration(t.Latency) * time.Millisecond
	var log *ReplyLog
	if l, ok := replyLogs.Load(t.Log); ok && t.Log != "" {
		log = l.(*ReplyLog)
	}
	eachChunk(stub, func(c *stream.StreamChunk) bool {
		if IsHelloReply(c.Data) {
			stub.Output <- c
			return true
		}
		if log != nil {
			came := history.Now() - time.Since(c.Timestamp).Nanoseconds()
			log.add(came, came+delay.Nanoseconds())
		}
		select {
		case <-time.After(delay - time.Since(c.Timestamp)):
			stub.Output <- c
			return true
		case <-stub.Interrupt:
			stub.Output <- c // drop nothing on the floor
			return false
		}
	})
}

// IsHelloReply says whether b begins with the reply to HELLO: a RESP2
// array or RESP3 map whose first element is the bulk string "server"
// (`*14\r\n$6\r\nserver\r\n…`, `%7\r\n$6\r\nserver\r\n…`). No lock
// command's reply begins that way.
func IsHelloReply(b []byte) bool {
	if len(b) < 2 || b[0] != '*' && b[0] != '%' {
		return false
	}
	i := 1
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i > 1 && bytes.HasPrefix(b[i:], []byte("\r\n$6\r\nserver\r\n"))
}

func init() { toxics.Register("slow-reply", new(SlowReplyToxic)) }
