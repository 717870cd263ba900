package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// The same bound on what a request brings holds at every door of both
// faces: a push notification was refused past 1 MiB, a form (the login,
// an answer, a field's check) was read up to Go's 10 MB.
func TestEveryDoorTakesTheSameBodyBound(t *testing.T) {
	const agent = "http://127.0.0.1:9/agent"
	in := startInboxWith(t, func(c *web.Config) { c.PushAgents, c.PushToken = map[string]string{agent: ""}, "push-token-0123456789" })
	q := &question.Question{ID: "q-1", Text: "Which cost centre?",
		Schema: []byte(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`)}
	it, _, err := in.ib.Add(t.Context(), inbox.FromStatus(agent, "task-1", "ctx", q.Message()))
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.Start(t, apitest.Options{Quiet: true})
	big := strings.Repeat("x", 2<<20)
	for _, c := range []struct {
		s    site
		form string // a form page of the site, for the CSRF token
	}{
		{inboxSite(in), "/q/" + itoa(it.ID)},
		{serverPageSite(startServerPage(t, env, nil)), "/inbox/"},
	} {
		jar, _ := cookiejar.New(nil)
		hc := c.s.loginWith(t, jar)
		_, page := get(t, hc, c.s.origin+c.form)
		m := csrfField.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: no CSRF token on %s", c.s.name, c.form)
		}
		prefix := strings.TrimPrefix(c.s.base, c.s.origin) // "" or "/inbox"
		type door struct {
			path string
			form url.Values
		}
		doors := []door{{prefix + "/login", url.Values{"token": {big}}}}
		if strings.HasPrefix(c.form, "/q/") {
			doors = append(doors,
				door{c.form, url.Values{"csrf": {m[1]}, "field.costCentre": {"CC-4410"}, "justification": {big}}},
				door{c.form + "/check", url.Values{"csrf": {m[1]}, "field": {"costCentre"}, "value": {big}}})
		}
		doors = append(doors, door{prefix + "/logout", url.Values{"csrf": {m[1]}, "pad": {big}}}) // last: it may end the session
		for _, d := range doors {
			target, v := d.path, d.form
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.s.origin+target, strings.NewReader(v.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", c.s.origin)
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s: a form of 2 MiB to %s: %s, want 413", c.s.name, target, res.Status)
			}
		}
	}
	if code := apitest.PostNotification(t, t.Context(), in.url+"/push?agent="+url.QueryEscape(agent), "push-token-0123456789", []byte(`{"task":"`+big+`"}`)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a push of 2 MiB: %d, want 413", code)
	}
	if got, _ := in.ib.Get(t.Context(), it.ID); got.State != inbox.StateOpen {
		t.Errorf("after the refused forms the item is %s, want open", got.State)
	}
}
