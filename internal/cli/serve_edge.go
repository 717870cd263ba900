package cli

import (
	"net"
	"strconv"
	"sync"
	"syscall"
)

// listenURL is the URL a caller on this machine uses for the listener's
// address: on every interface (0.0.0.0, ::) that is the loopback address,
// not "http://[::]:P", which no client can dial. anyAddr says it was such
// an address.
func listenURL(a net.Addr) (url string, anyAddr bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String(), false
	}
	port := strconv.Itoa(tcp.Port)
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return "http://127.0.0.1:" + port, true
	}
	return "http://" + net.JoinHostPort(tcp.IP.String(), port), false
}

// selfHosts are the host:port forms of this server's own address that
// push notifications may go to (an orchestrator hearing from a sub-agent
// on the same server).
func selfHosts(a net.Addr) []string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return []string{a.String()}
	}
	port := strconv.Itoa(tcp.Port)
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}
	}
	return []string{net.JoinHostPort(tcp.IP.String(), port)}
}

// defaultMaxConnections is 1024, or fewer when the process may open fewer
// files: accept then waits instead of failing with "too many open files",
// and the store keeps descriptors for its files.
func defaultMaxConnections() int {
	n := 1024
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		if room := int(rl.Cur) - 64; room < n {
			n = max(room, 8)
		}
	}
	return n
}

// limitListener accepts at most n connections at once; Accept waits for
// one to close before it takes the next.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
