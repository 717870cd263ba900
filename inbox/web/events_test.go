package web_test

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// eventStream reads the IDs of the "changed" events of one /events stream
// ("" for an event without one).
type eventStream struct {
	ids  chan string
	done chan struct{}
	stop func() // closes the stream and waits for its reader
}

// openEvents opens /events (with since, or the Last-Event-ID header when
// lastID is set) on frank's session; the stream ends with the test.
func openEvents(t *testing.T, hc *http.Client, base, since, lastID string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	u := base + "/events"
	if since != "" {
		u += "?since=" + since
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := hc.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		res.Body.Close()
		t.Fatalf("GET %s: %s", u, res.Status)
	}
	s := &eventStream{ids: make(chan string, 64), done: make(chan struct{})}
	s.stop = func() { cancel(); <-s.done }
	go func() {
		defer close(s.done)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		event, id := "", ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			if line == "" && event == "changed" {
				s.ids <- id
				event, id = "", ""
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *eventStream) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case id := <-s.ids:
		return id
	case <-time.After(10 * time.Second):
		t.Fatalf("no event within 10s: %s", what)
		return ""
	}
}

var sinceAttr = regexp.MustCompile(`data-since="([0-9a-f]+)"`)

// The list page says which version of the inbox it shows, and its event
// stream, opened from that version, tells of the next change and not of
// the version the page already shows: a page just loaded was replaced by
// a refetch of the same list at once (the browser test read a row that
// the refetch had just swapped out). A reconnect (Last-Event-ID) starts
// from the last event, and a stream opened from nothing is told at once.
func TestTheListsEventStreamStartsFromTheVersionThePageShows(t *testing.T) {
	in := startInbox(t, nil)
	hc := in.login(t)
	add := func(task string) {
		t.Helper()
		q := &question.Question{ID: "q-" + task, Text: "Which cost centre?", Expires: time.Now().Add(time.Hour),
			Schema: []byte(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string"}}}`)}
		if _, _, err := in.ib.Add(t.Context(), inbox.FromStatus("http://agent", task, "ctx", q.Message())); err != nil {
			t.Fatal(err)
		}
	}
	// From nothing: told at once of the version there is, then of task-1.
	first := openEvents(t, hc, in.url, "", "")
	v0 := first.next(t, "the stream opened from no version")
	add("task-1")
	shown := first.next(t, "task-1 added")
	if shown == v0 {
		t.Fatalf("the change that added task-1 came as version %s, the one before it", v0)
	}
	_, page := get(t, hc, in.url+"/")
	if m := sinceAttr.FindStringSubmatch(page); m == nil || m[1] != shown || !strings.Contains(page, "task-1") {
		t.Fatalf("the list page shows data-since %v; want %s, with task-1 listed:\n%s", m, shown, page)
	}

	fromPage := openEvents(t, hc, in.url, shown, "")
	add("task-2")
	v2 := fromPage.next(t, "the change after the page")
	if v2 == shown {
		t.Fatalf("the stream opened from the page's version %s told of that version; want only the change after it", shown)
	}

	again := openEvents(t, hc, in.url, shown, v2) // Last-Event-ID wins over ?since
	add("task-3")
	if v3 := again.next(t, "the change after a reconnect"); v3 == v2 || v3 == shown {
		t.Fatalf("the reconnected stream (Last-Event-ID %s) told of %s; want the version after task-3", v2, v3)
	}
}

// Issue 30, finding 5, at the web inbox's own door: a person's live pages
// (/events) are capped, per person, like the server page's.
func TestAPersonsLivePagesAreCapped(t *testing.T) {
	const slots = 3
	in := startInboxWith(t, func(c *web.Config) { c.MaxStreams = slots })
	hc := in.login(t)
	pages := make([]*eventStream, slots)
	for i := range pages {
		pages[i] = openEvents(t, hc, in.url, "", "")
		pages[i].next(t, "a live page's first event")
	}
	status := func(hc *http.Client) int { return streamStatus(t, hc, in.url+"/events") }
	if code := status(hc); code != http.StatusTooManyRequests {
		t.Errorf("frank's live page number %d (the cap is %d): %d, want 429", slots+1, slots, code)
	}
	pages[0].stop()
	apitest.Eventually(t, "a live page closed gives its slot back", 10*time.Second, func() bool { return status(hc) == http.StatusOK })
}

// streamStatus opens the event stream at u and closes it: the status it
// was answered with.
func streamStatus(t *testing.T, hc *http.Client, u string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
