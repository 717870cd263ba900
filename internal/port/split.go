package port

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// http2Preface opens every HTTP/2 connection made with prior knowledge,
// which is how gRPC speaks over a plain TCP connection.
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// Split shares one listener between HTTP/1.1 and gRPC: a connection that
// opens with the HTTP/2 preface goes to grpcLn, any other to httpLn
// (docs/decisions/0040). Closing a returned listener stops its Accept;
// closing both closes ln, and closing ln stops both. A connection that
// sends nothing within firstBytes is closed.
func Split(ln net.Listener, firstBytes time.Duration) (httpLn, grpcLn net.Listener) {
	if firstBytes <= 0 {
		firstBytes = 10 * time.Second
	}
	s := &splitter{ln: ln, wait: firstBytes}
	s.http = newSub(ln.Addr(), s.closed)
	s.grpc = newSub(ln.Addr(), s.closed)
	go s.run()
	return s.http, s.grpc
}

type splitter struct {
	ln         net.Listener
	wait       time.Duration
	http, grpc *sub

	mu      sync.Mutex
	open    int                   // returned listeners not yet closed
	routing map[net.Conn]struct{} // accepted, first bytes not read yet
	stopped bool                  // ln failed: no more routing
}

// closed is called once per returned listener closed; the second closes
// ln.
func (s *splitter) closed() {
	s.mu.Lock()
	s.open++
	last := s.open == 2
	s.mu.Unlock()
	if last {
		_ = s.ln.Close()
	}
}

func (s *splitter) run() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			s.http.fail(err)
			s.grpc.fail(err)
			s.stop()
			return
		}
		if !s.track(c) {
			c.Close()
			continue
		}
		go s.route(c)
	}
}

// track records c as being routed; false once the listener stopped.
func (s *splitter) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	if s.routing == nil {
		s.routing = map[net.Conn]struct{}{}
	}
	s.routing[c] = struct{}{}
	return true
}

func (s *splitter) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.routing, c)
	s.mu.Unlock()
}

// stop closes the connections still waiting for their first bytes: with
// the listener gone nothing would take them, and their route would wait
// out its deadline (a client's idle connection that never spoke).
func (s *splitter) stop() {
	s.mu.Lock()
	s.stopped = true
	pending := s.routing
	s.routing = nil
	s.mu.Unlock()
	for c := range pending {
		c.Close()
	}
}

// route reads as much of the connection's first bytes as it takes to tell
// the preface from anything else, and hands the connection on with those
// bytes put back.
func (s *splitter) route(c net.Conn) {
	defer s.untrack(c)
	_ = c.SetReadDeadline(time.Now().Add(s.wait))
	buf := make([]byte, 0, len(http2Preface))
	for len(buf) < len(http2Preface) && bytes.HasPrefix(http2Preface, buf) {
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if len(buf) == 0 {
				c.Close()
				return
			}
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	pc := &peeked{Conn: c, head: buf}
	if bytes.Equal(buf, http2Preface) {
		s.grpc.push(pc)
	} else {
		s.http.push(pc)
	}
}

// peeked is a connection whose first bytes were read already.
type peeked struct {
	net.Conn
	mu   sync.Mutex
	head []byte
}

func (p *peeked) Read(b []byte) (int, error) {
	p.mu.Lock()
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		p.mu.Unlock()
		return n, nil
	}
	p.mu.Unlock()
	return p.Conn.Read(b)
}

// sub is one side of a split listener.
type sub struct {
	addr    net.Addr
	onClose func()
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error
	closed  bool
}

func newSub(addr net.Addr, onClose func()) *sub {
	return &sub{addr: addr, onClose: onClose, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *sub) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *sub) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
	l.once.Do(func() { close(l.done) })
}

func (l *sub) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed || l.err == nil {
			return nil, net.ErrClosed
		}
		return nil, l.err
	}
}

func (l *sub) Close() error {
	l.mu.Lock()
	first := !l.closed
	l.closed = true
	l.mu.Unlock()
	l.once.Do(func() { close(l.done) })
	if first {
		l.onClose()
	}
	return nil
}

func (l *sub) Addr() net.Addr { return l.addr }

// NetConn is the connection p wraps.
func (p *peeked) NetConn() net.Conn { return p.Conn }
