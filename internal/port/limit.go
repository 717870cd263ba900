package port

import (
	"container/list"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limiter is a listener that holds at most max connections open at once.
// It never leaves a connection waiting in the kernel's backlog: past the
// cap it closes the connection idle the longest (an HTTP keep-alive
// connection between requests, as the http.Server's ConnState reports it)
// to make room, and when none is idle it answers the new connection with
// an HTTP 503 that says why and closes it. A caller is told promptly,
// instead of hanging until some connection ends.
type Limiter struct {
	net.Listener
	max int

	mu   sync.Mutex
	open int
	idle *list.List // *conn idle the longest first
	// refused counts connections refused past the cap (for tests and logs).
	refused int
}

// Limit caps ln at max open connections (max > 0).
func Limit(ln net.Listener, max int) *Limiter {
	return &Limiter{Listener: ln, max: max, idle: list.New()}
}

// Accept returns the next connection under the cap, refusing those past it.
func (l *Limiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open >= l.max {
			if e := l.idle.Front(); e != nil {
				// Room is made by the connection idle the longest; it
				// leaves the count when its Close runs.
				victim := e.Value.(*conn)
				l.idle.Remove(e)
				victim.elem = nil
				l.open-- // counted out here so the new one fits; Close won't count it again
				victim.counted = false
				l.mu.Unlock()
				_ = victim.Conn.Close()
				l.mu.Lock()
			}
		}
		if l.open >= l.max {
			l.refused++
			l.mu.Unlock()
			refuse(c, l.max)
			continue
		}
		l.open++
		l.mu.Unlock()
		return &conn{Conn: c, l: l, counted: true}, nil
	}
}

// Refused is how many connections were refused past the cap.
func (l *Limiter) Refused() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// ConnState is the http.Server's ConnState hook: it tells the limiter which
// connections are idle between requests, the first to close under
// pressure.
func (l *Limiter) ConnState(nc net.Conn, st http.ConnState) {
	c := unwrap(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateIdle:
		if c.elem == nil && c.counted {
			c.elem = l.idle.PushBack(c)
		}
	default: // active, hijacked, closed
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
	}
}

// refusal is what a connection past the cap reads before it is closed: an
// HTTP/1.1 answer (a gRPC client reads it as a broken connection and says
// so).
const refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s"

func refuse(c net.Conn, max int) {
	msg := fmt.Sprintf("the server holds as many connections as it takes (%d); try again shortly\n", max)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, refusal, len(msg), msg)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite() // the answer is read before the reset a close with unread input sends
	}
	_ = c.Close()
}

// conn is a connection counted against the cap until it closes.
type conn struct {
	net.Conn
	l *Limiter
	// counted: the connection is in l.open (false once it left, by its
	// Close or by being closed to make room); elem: its place in l.idle.
	counted bool
	elem    *list.Element
	once    sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		defer c.l.mu.Unlock()
		if c.elem != nil {
			c.l.idle.Remove(c.elem)
			c.elem = nil
		}
		if c.counted {
			c.counted = false
			c.l.open--
		}
	})
	return err
}

// NetConn is the connection c wraps.
func (c *conn) NetConn() net.Conn { return c.Conn }

// unwrap finds the limiter's conn under nc (a split listener's peeked
// connection wraps it).
func unwrap(nc net.Conn) *conn {
	for nc != nil {
		if c, ok := nc.(*conn); ok {
			return c
		}
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = u.NetConn()
	}
	return nil
}
