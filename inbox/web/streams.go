package web

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultMaxStreams is how many live pages (event streams) one person may
// hold open at once unless told otherwise: the server's default for a
// principal's streams.
const DefaultMaxStreams = 32

// streamCap counts each person's open event streams.
type streamCap struct {
	mu    sync.Mutex
	limit int
	open  map[string]int
}

func newStreamCap(limit int) *streamCap {
	if limit <= 0 {
		limit = DefaultMaxStreams
	}
	return &streamCap{limit: limit, open: map[string]int{}}
}

// acquire takes one of who's stream slots, or says why it cannot; release
// may be called more than once.
func (c *streamCap) acquire(who string) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[who] >= c.limit {
		return nil, fmt.Errorf("you have %d live pages open already, the limit; close one and reload", c.limit)
	}
	c.open[who]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.open[who]--; c.open[who] <= 0 {
				delete(c.open, who)
			}
		})
	}, nil
}

// serveEvents streams "changed" events (server-sent events) until the
// client leaves or done closes, each with the tag of the version it tells
// of as its ID and data. current gives the version's tag and a channel
// closed at the next change. The stream starts from the version the
// client already shows: the last event's ID when the browser reconnects
// (Last-Event-ID), else ?since= (the tag the page was rendered at); from
// neither, the first event comes as soon as there is a version. A page
// that is up to date is not told to fetch again: the refetch would replace
// the list under the reader's eyes (and under a test's queries) for
// nothing.
func serveEvents(w http.ResponseWriter, r *http.Request, done <-chan struct{}, current func() (string, <-chan struct{})) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("since")
	}
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		v, ch := current()
		if v != last {
			if _, err := fmt.Fprintf(w, "event: changed\nid: %s\ndata: %s\n\n", v, v); err != nil {
				return
			}
			fl.Flush()
			last = v
		}
		select {
		case <-ch:
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
	}
}
