package engine

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// The webhook guard: one list of address ranges that push notifications
// may not reach, checked when a configuration is set (every address its
// host resolves to) and at every dial of every delivery (the address
// actually connected to, so a DNS answer that changed since is caught).
// The client uses no proxy (an HTTP_PROXY setting would take the dial out
// of the guard's sight) and follows no redirects (a receiver answers
// where it was configured, or the delivery fails). See
// docs/decisions/0061-one-webhook-guard.md.

// blockedPrefixes are the ranges the standard library's predicates miss:
// IPv4-compatible IPv6 (::a.b.c.d, deprecated, but some stacks still route
// it to the IPv4 address), site-local (fec0::/10, deprecated), the IPv4
// broadcast address, carrier-grade NAT (where some clouds keep metadata
// services), benchmarking, and the IPv6 prefixes that embed IPv4 addresses
// (NAT64, 6to4).
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("0.0.0.0/8"),
}

// blockedIP says whether a push notification may not go to ip.
func blockedIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	return blockedAddr(a)
}

func blockedAddr(a netip.Addr) bool {
	a = a.WithZone("")
	if a.Is4In6() { // ::ffff:a.b.c.d is the IPv4 address a.b.c.d
		a = a.Unmap()
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// errBlockedDial is a delivery refused at dial time.
var errBlockedDial = errors.New("the push notification URL now resolves to a loopback, private or reserved address")

// guardControl refuses, at dial time, a connection to a blocked address.
func guardControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("push: dial %s: %w", address, err)
	}
	if blockedAddr(ap.Addr()) {
		return fmt.Errorf("push: dial %s: %w", address, errBlockedDial)
	}
	return nil
}

// newPushClient is the HTTP client of push deliveries: guarded unless
// open, never through a proxy, never following a redirect.
func newPushClient(timeout time.Duration, open bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !open {
		d.Control = guardControl
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		// A redirect is not followed: the 3xx is the answer, and a failed
		// delivery (postPush), so no hop gets the token or the body.
		CheckRedirect: refuseRedirects,
	}
}
