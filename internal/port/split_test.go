package port_test

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/port"
)

func TestClosingBothSidesOfASplitFreesThePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	httpLn, grpcLn := port.Split(ln, 0)
	httpLn.Close()
	if again, err := net.Listen("tcp", addr); err == nil {
		again.Close()
		t.Fatalf("the port was free with the gRPC side still open")
	}
	grpcLn.Close()
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s after closing both sides: %v", addr, err)
	}
	again.Close()
	if _, err := httpLn.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed side = %v, want net.ErrClosed", err)
	}
}

// A connection that has not sent its first bytes when the split listener
// closes is closed then, not left to wait out its deadline: a client's
// idle connection that never spoke held a goroutine of the server's past
// its stop.
func TestClosingASplitClosesConnectionsThatHaveNotSpoken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpLn, grpcLn := port.Split(ln, time.Hour)
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Connections are accepted in order: once one dialed after it reaches
	// the HTTP side, the silent one was accepted and waits for its first
	// bytes.
	probe, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	got, err := httpLn.Accept()
	if err != nil {
		t.Fatal(err)
	}
	got.Close()
	probe.Close()

	httpLn.Close()
	grpcLn.Close()
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a silent connection after the split closed = %v, want it closed by the server", err)
	}
}
