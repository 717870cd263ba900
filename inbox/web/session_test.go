package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// site is one login door of the web inbox: the inbox's own, or a server's
// page.
type site struct {
	name   string
	origin string // scheme://host:port
	base   string // origin and path prefix
	token  string
	home   string // the list's path
}

func inboxSite(in *inboxEnv) site {
	return site{name: "the web inbox", origin: in.url, base: in.url, token: frankToken, home: "/"}
}

func serverPageSite(origin string) site {
	return site{name: "the server page", origin: origin, base: origin + "/inbox", token: aliceToken, home: "/inbox/"}
}

// loginWith logs in to s with a client on jar and returns the client,
// which follows no redirect.
func (s site) loginWith(t *testing.T, jar http.CookieJar) *http.Client {
	t.Helper()
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if code, loc := s.post(t, hc, "/login", url.Values{"token": {s.token}}); code != http.StatusSeeOther || loc != s.home {
		t.Fatalf("%s: login: %d to %q, want 303 to %s", s.name, code, loc, s.home)
	}
	return hc
}

// post posts a form from s's own origin and returns the status and the
// redirect's location.
func (s site) post(t *testing.T, hc *http.Client, path string, v url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

// loggedIn says whether hc's session shows s's list.
func (s site) loggedIn(t *testing.T, hc *http.Client) bool {
	t.Helper()
	res, err := hc.Get(s.origin + s.home)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// Issue 30, finding 6: logging out ends the session itself, so a copy of
// the old cookie (another tab's, a stolen one) no longer logs anyone in;
// before, sessions were stateless for 12 hours and logout only asked the
// browser to forget its cookie. On both login doors.
func TestLogoutEndsTheSessionNotJustTheCookie(t *testing.T) {
	in := startInbox(t, nil)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	for _, s := range []site{inboxSite(in), serverPageSite(startServerPage(t, env, nil))} {
		jar, _ := cookiejar.New(nil)
		hc := s.loginWith(t, jar)
		u, _ := url.Parse(s.origin + s.home)
		kept := jar.Cookies(u) // a copy, as another tab or a thief holds it
		if len(kept) != 1 {
			t.Fatalf("%s: %d cookies after the login, want one", s.name, len(kept))
		}
		_, page := get(t, hc, s.origin+s.home)
		m := csrfField.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: the list has no logout form with a CSRF token:\n%s", s.name, page)
		}
		if code, _ := s.post(t, hc, "/logout", url.Values{"csrf": {m[1]}}); code != http.StatusSeeOther {
			t.Fatalf("%s: logout: %d, want 303", s.name, code)
		}
		if s.loggedIn(t, hc) {
			t.Errorf("%s: the browser that logged out is still logged in", s.name)
		}
		other, _ := cookiejar.New(nil)
		other.SetCookies(u, kept)
		if s.loggedIn(t, &http.Client{Jar: other, CheckRedirect: hc.CheckRedirect}) {
			t.Errorf("%s: the session cookie still logs in after its logout", s.name)
		}
	}
}

// Issue 30, finding 6: each site has its own cookie. A browser keeps one
// set of cookies per host whatever the port, and the web inbox and
// askpoint serve's page used one name: logging in to one logged the
// person out of the other on the same host.
func TestSitesOnOneHostKeepTheirOwnSessions(t *testing.T) {
	one, two := startInbox(t, nil), startInbox(t, nil)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	sites := []site{inboxSite(one), serverPageSite(startServerPage(t, env, nil)), inboxSite(two)}
	sites[2].name = "another web inbox"
	jar, _ := cookiejar.New(nil) // one browser
	clients := make([]*http.Client, len(sites))
	for i, s := range sites {
		clients[i] = s.loginWith(t, jar)
	}
	for i, s := range sites {
		if !s.loggedIn(t, clients[i]) {
			t.Errorf("%s: logged out by the logins to the other sites on the host", s.name)
		}
	}
}

// Issue 30, finding 6: a page shows a notice only when the site itself
// wrote it for this session (after an answer), never words a link
// brought in ?notice=: a phishing link could otherwise make the trusted
// page say "your token expired, log in at …".
func TestPagesShowNoNoticeALinkBrings(t *testing.T) {
	in := startInbox(t, nil)
	it, _, err := in.ib.Add(t.Context(), inbox.FromStatus("http://127.0.0.1:9/agent", "task-1", "ctx", (&question.Question{ID: "q-1", Text: "Which cost centre?",
		Schema: []byte(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string"}}}`)}).Message()))
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.Start(t, apitest.Options{Quiet: true})
	const phish = "Your token expired: log in again at https://evil.example/inbox"
	for _, c := range []struct {
		s    site
		page string
	}{
		{inboxSite(in), "/q/" + itoa(it.ID)},
		{serverPageSite(startServerPage(t, env, nil)), "/inbox/"},
	} {
		jar, _ := cookiejar.New(nil)
		hc := c.s.loginWith(t, jar)
		code, page := get(t, hc, c.s.origin+c.page+"?notice="+url.QueryEscape(phish))
		if code != http.StatusOK || strings.Contains(page, "evil.example") {
			t.Errorf("%s: %s?notice=… (%d) shows the link's words:\n%s", c.s.name, c.page, code, page)
		}
	}
}

// Issue 30, finding 6: failed logins are throttled per address at both
// login doors: about 1,800 guesses a second were taken before. Past ten
// failures every login from the address is refused, the right token too
// (or a guesser would learn when it is right), until attempts come back
// with time.
func TestFailedLoginsAreThrottledPerAddress(t *testing.T) {
	var offset atomic.Int64 // what the clock has been moved on by
	start := time.Now()
	clock := func() time.Time { return start.Add(time.Duration(offset.Load())) }
	in := startInboxWith(t, func(c *web.Config) { c.Now = clock })
	env := apitest.Start(t, apitest.Options{Quiet: true})
	for _, s := range []site{inboxSite(in), serverPageSite(startServerPage(t, env, func(c *web.ServerPageConfig) { c.Now = clock }))} {
		offset.Store(0)
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for i := range 10 {
			if code, _ := s.post(t, hc, "/login", url.Values{"token": {"wrong-token-0123456789"}}); code != http.StatusUnauthorized {
				t.Fatalf("%s: failed login %d: %d, want 401", s.name, i+1, code)
			}
		}
		if code, _ := s.post(t, hc, "/login", url.Values{"token": {"wrong-token-0123456789"}}); code != http.StatusTooManyRequests {
			t.Errorf("%s: the 11th guess: %d, want 429", s.name, code)
		}
		if code, _ := s.post(t, hc, "/login", url.Values{"token": {s.token}}); code != http.StatusTooManyRequests {
			t.Errorf("%s: the right token right after ten failures: %d, want 429 (no answer that tells a guesser it is right)", s.name, code)
		}
		offset.Store(int64(time.Minute))
		s.loginWith(t, jar) // a minute on, the person gets in
	}
}

// Issue 30, finding 6: BASE/stats shows the whole server's figures, every
// principal's questions, so only to the principals the server names for
// them; before, every principal who could log in saw them.
func TestServerStatsOnlyForThePrincipalsNamedForThem(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	origin := startServerPage(t, env, func(c *web.ServerPageConfig) {
		c.Stats = func() ([]string, [][]string) {
			return []string{"AGENT", "KIND", "ASKED"}, [][]string{{"payroll", "salaryBand", "7"}}
		}
		c.StatsPrincipals = []string{"alice"}
	})
	for _, who := range []struct {
		token string
		sees  bool
	}{{aliceToken, true}, {bobToken, false}} {
		s := serverPageSite(origin)
		s.token = who.token
		jar, _ := cookiejar.New(nil)
		code, page := get(t, s.loginWith(t, jar), origin+"/inbox/stats")
		if sees := code == http.StatusOK && strings.Contains(page, "salaryBand"); sees != who.sees {
			t.Errorf("%s: /inbox/stats: %d, shows the figures: %v; want %v:\n%s", who.token[:5], code, sees, who.sees, page)
		}
	}
}
