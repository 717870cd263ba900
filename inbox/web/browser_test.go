package web_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/browsertest"
	"github.com/askpoint/askpoint/question"
)

// The two sizes every page is looked at in: a laptop and a phone.
var sizes = []struct {
	name string
	w, h int64
}{{"1280", 1280, 900}, {"390", 390, 844}}

// newBrowser starts a headless Chromium with a fresh profile; it is stopped
// when the test ends.
func newBrowser(t *testing.T) context.Context { return browsertest.New(t, 1280, 900) }

// do runs browser actions, bounded in time.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Do(t, ctx, what, steps...)
}

// val runs one browser action that returns a value.
func val[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	return browsertest.Val(t, ctx, what, a)
}

// js evaluates an expression in the page.
func js[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	return val(t, ctx, what, chromedp.Evaluate[T](expr))
}

func sel(s string) chromedp.CSS { return chromedp.CSS(s) }

var (
	shotsOnce sync.Once
	shotsDir  string
)

// shot keeps a screenshot of the whole page as a test artifact: in
// $ASKPOINT_SCREENSHOTS when set, else in a temporary directory the test
// log names.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shotsOnce.Do(func() {
		shotsDir = os.Getenv("ASKPOINT_SCREENSHOTS")
		if shotsDir == "" {
			d, err := os.MkdirTemp("", "askpoint-inbox-screens-")
			if err == nil {
				shotsDir = d
			}
		}
	})
	if shotsDir == "" {
		return
	}
	png := val(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	p := filepath.Join(shotsDir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// viewport sets the page's size.
func viewport(w, h int64) chromedp.Action[chromedp.Void] { return chromedp.EmulateViewport(w, h) }

// browserLogin logs in at loginURL with token and waits for the list.
func browserLogin(t *testing.T, ctx context.Context, loginURL, token string) {
	t.Helper()
	do(t, ctx, "log in",
		chromedp.Navigate(loginURL),
		chromedp.WaitVisible(sel("#token")),
		chromedp.SendKeys(sel("#token"), token),
		chromedp.Submit(sel("#login")),
		chromedp.WaitVisible(sel("#items")),
	)
}

// approvalEnv serves the expense and approval agents; with tokens, to
// alice and bob only (the server page's principals), else to anyone (the
// web inbox's agents).
func approvalEnv(t *testing.T, tokens bool) *apitest.Env {
	return apitest.Start(t, apitest.Options{Quiet: true,
		Agents: []askpoint.AgentSpec{{Name: "approval", Agent: approval.Agent(), Card: approval.Card()}},
		Config: func(c *askpoint.Config) {
			if tokens {
				c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
			}
		}})
}

// deferTo runs text against agent until its question waits in ib.
func deferTo(t *testing.T, env *apitest.Env, ib *inbox.Inbox, agent, text string) (*inbox.Item, *a2aclient.Client) {
	t.Helper()
	c := env.Client(t, agent, a2a.TransportProtocolJSONRPC)
	_, err := client.Run(t.Context(), c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		client.WithAgentURL(env.AgentURL(agent)), client.WithResolvers(inbox.Person{Inbox: ib}))
	var d *inbox.DeferredError
	if !errors.As(err, &d) {
		t.Fatalf("Run(%q) = %v; want the question deferred to the inbox", text, err)
	}
	return d.Item, c
}

// lastDecisionOf is the decision record last in the task's history.
func lastDecisionOf(t *testing.T, task *a2a.Task) *question.Decision {
	t.Helper()
	for i := len(task.History) - 1; i >= 0; i-- {
		if d, ok, err := question.DecisionOf(task.History[i]); ok && err == nil {
			return d
		}
	}
	t.Fatalf("no decision record in the task's history")
	return nil
}
