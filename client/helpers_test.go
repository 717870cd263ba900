package client_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/inbox"
)

const receipt = "File my taxi receipt from Tuesday, 42 euros"

// ctx is the test's context, bounded so that a hang fails instead of
// stalling the run.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// dial connects to an agent through hc (nil: a fresh http.Client), on any
// of its bindings, gRPC's too.
func dial(t *testing.T, url string, hc *http.Client, pref ...a2a.TransportProtocol) *a2aclient.Client {
	t.Helper()
	c, err := grpcdial.Dial(ctx(t), url, client.DialOptions{HTTP: hc, Preferred: pref})
	if err != nil {
		t.Fatalf("Dial(%s) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func openInbox(t *testing.T, path string) *inbox.Inbox {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "inbox.db")
	}
	ib, err := inbox.Open(ctx(t), path)
	if err != nil {
		t.Fatalf("inbox.Open = %v", err)
	}
	t.Cleanup(func() { _ = ib.Close() })
	return ib
}

func textMessage(s string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s))
}

// artifactData returns the first data part of the named artifact.
func artifactData(t *testing.T, res *client.Result, name string) map[string]any {
	t.Helper()
	for _, a := range res.Artifacts() {
		if a.Name != name {
			continue
		}
		for _, p := range a.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				m, _ := d.Value.(map[string]any)
				return m
			}
		}
	}
	t.Fatalf("no artifact %q with a data part; artifacts %s", name, dump(res.Artifacts()))
	return nil
}

// artifactText joins the text parts of the named artifact.
func artifactText(res *client.Result, name string) string {
	var out []string
	for _, a := range res.Artifacts() {
		if a.Name != name {
			continue
		}
		for _, p := range a.Parts {
			if s, ok := p.Content.(a2a.Text); ok {
				out = append(out, string(s))
			}
		}
	}
	return strings.Join(out, "\n")
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// userAnswers returns the caller's messages in the task's history after the
// request.
func userAnswers(t *testing.T, task *a2a.Task) []*a2a.Message {
	t.Helper()
	var out []*a2a.Message
	for i, m := range task.History {
		if m.Role == a2a.MessageRoleUser && i > 0 {
			out = append(out, m)
		}
	}
	return out
}

func dataOf(m *a2a.Message) map[string]any {
	for _, p := range m.Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			v, _ := d.Value.(map[string]any)
			return v
		}
	}
	return nil
}

func count(calls []string, method string) int {
	n := 0
	for _, c := range calls {
		if c == method {
			n++
		}
	}
	return n
}

// severable is an HTTP transport whose connections the test can cut, as a
// network failure would; new connections work again afterwards.
type severable struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   int
}

func (s *severable) client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			return c, nil
		},
	}}
}

// sever closes every connection made so far and says how many there were.
func (s *severable) sever() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	s.cut += n
	return n
}
