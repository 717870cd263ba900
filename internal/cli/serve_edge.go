package cli

import (
	"net"
	"strconv"
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
