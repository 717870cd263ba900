package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
)

// Issue 30, finding 6: a form's field is checked by the inbox, in the
// answer's words, at both faces (ACTION/check), behind the same login,
// CSRF token and origin rule as the answer itself.
func TestTheFieldCheckDoorIsGuardedAndSpeaksTheAnswersWords(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
	}})
	alice := env.ClientAs(t, "expense", a2a.TransportProtocolJSONRPC, aliceToken)
	res, err := alice.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task) // asks amount, date (a pattern), cost centre, currency
	in := startInbox(t, nil)
	it, _, err := in.ib.Add(t.Context(), inbox.FromStatus(env.AgentURL("expense"), string(task.ID), task.ContextID, task.Status.Message))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    site
		form string
	}{
		{inboxSite(in), "/q/" + itoa(it.ID)},
		{serverPageSite(startServerPage(t, env, nil)), "/inbox/t/expense/" + string(task.ID)},
	} {
		jar, _ := cookiejar.New(nil)
		hc := c.s.loginWith(t, jar)
		_, page := get(t, hc, c.s.origin+c.form)
		m := csrfField.FindStringSubmatch(page)
		if m == nil || !strings.Contains(page, `data-pattern="^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`) {
			t.Fatalf("%s: the form has no CSRF token or no date pattern:\n%s", c.s.name, page)
		}
		check := func(origin string, v url.Values) (int, []string) {
			t.Helper()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.s.origin+c.form+"/check", strings.NewReader(v.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", origin)
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out struct{ Errors []string }
			_ = json.NewDecoder(res.Body).Decode(&out)
			return res.StatusCode, out.Errors
		}
		date := url.Values{"csrf": {m[1]}, "field": {"date"}, "value": {"yesterday"}}
		if code, errs := check(c.s.origin, date); code != http.StatusOK || strings.Join(errs, "; ") != `"yesterday" is not in the expected format (the receipt's date, YYYY-MM-DD)` {
			t.Errorf("%s: check date=yesterday: %d %q; want the pattern's error in words, with the field's description", c.s.name, code, errs)
		}
		if code, errs := check(c.s.origin, url.Values{"csrf": {m[1]}, "field": {"date"}, "value": {"2026-11-20"}}); code != http.StatusOK || len(errs) != 0 {
			t.Errorf("%s: check date=2026-11-20: %d %q; want no error", c.s.name, code, errs)
		}
		if code, _ := check(c.s.origin, url.Values{"field": {"date"}, "value": {"yesterday"}}); code != http.StatusForbidden {
			t.Errorf("%s: a check without the CSRF token: %d, want 403", c.s.name, code)
		}
		if code, _ := check("http://evil.example", date); code != http.StatusForbidden {
			t.Errorf("%s: a check from another origin: %d, want 403", c.s.name, code)
		}
		if code, _ := check(c.s.origin, url.Values{"csrf": {m[1]}, "field": {"nothing"}, "value": {"x"}}); code != http.StatusBadRequest {
			t.Errorf("%s: a check of a field the question does not have: %d, want 400", c.s.name, code)
		}
	}
}
