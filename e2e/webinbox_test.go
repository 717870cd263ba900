//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/browsertest"
	"github.com/askpoint/askpoint/question"
)

const frankToken = "frank-token-0123456789"

// browser starts a headless Chromium with a fresh profile; it is stopped
// when the test ends.
func browser(t *testing.T) context.Context { return browsertest.New(t, 1200, 760) }

// run does browser actions, bounded in time.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Do(t, ctx, what, steps...)
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	return browsertest.Val(t, ctx, what, a)
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// webInbox is `askpoint inbox --web` running.
type webInbox struct {
	url   string
	inbox string
	log   *apitest.SyncBuffer
}

func startWebInbox(t *testing.T, bin, inboxPath string, extra ...string) *webInbox {
	t.Helper()
	people := filepath.Join(t.TempDir(), "people.json")
	if err := os.WriteFile(people, []byte(`{"frank": {"token": "`+frankToken+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"inbox", "--inbox", inboxPath, "--web", "127.0.0.1:0", "--people", people, "--watch", "100ms", "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	w := &webInbox{inbox: inboxPath, log: &apitest.SyncBuffer{}}
	cmd.Stderr = w.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(w.log, line)
			if rest, ok := strings.CutPrefix(line, "askpoint inbox: web inbox on "); ok {
				ready <- strings.TrimSuffix(strings.Fields(rest)[0], "/")
			}
		}
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("askpoint inbox --web did not stop on SIGTERM within 10s:\n%s", w.log)
		}
	})
	select {
	case w.url = <-ready:
	case <-done:
		t.Fatalf("askpoint inbox --web exited: %s", w.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("askpoint inbox --web printed no address in 30s: %s", w.log)
	}
	return w
}

// askVia runs `askpoint ask` and returns its inbox item (it must wait on a
// person: exit status 3).
func askVia(t *testing.T, bin, inboxPath, agent, text string, extra ...string) string {
	t.Helper()
	args := append([]string{"ask", "--inbox", inboxPath, "--timeout", "30s"}, extra...)
	args = append(args, agent, text)
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("askpoint ask %q: %v\n%s%s; want exit 3 (waiting on a person)", text, err, out.String(), errb.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "waiting: inbox item "); ok {
			return strings.SplitN(rest, ":", 2)[0]
		}
	}
	t.Fatalf("askpoint ask printed no inbox item:\n%s", out.String())
	return ""
}

func openItem(t *testing.T, path, id string) *inbox.Item {
	t.Helper()
	ib, err := inbox.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ib.Close()
	var n int64
	fmt.Sscan(id, &n)
	it, err := ib.Get(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func login(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	run(t, ctx, "log in",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), frankToken),
		chromedp.Submit(css("#login")),
		chromedp.WaitVisible(css("#items")),
	)
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("ASKPOINT_SCREENSHOTS")
	if dir == "" {
		return
	}
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The web inbox end to end, in a real browser against the real binaries:
// askpoint serve runs the worked example, askpoint ask escalates its
// question to the inbox, askpoint inbox --web serves it to frank.
func TestWebInboxInABrowser(t *testing.T) {
	ctx := browser(t)
	bin := buildAskpoint(t)
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	agent := srv.url + "/expense"
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	worked := askVia(t, bin, inboxPath, agent, "File my taxi receipt from Tuesday, 42 euros", "--caller", "alice")
	web := startWebInbox(t, bin, inboxPath)
	workedItem := openItem(t, inboxPath, worked)

	// Nothing without the login: the browser is sent to the login page.
	run(t, ctx, "the form without a login", chromedp.Navigate(web.url+"/q/"+worked), chromedp.WaitVisible(css("#token")))
	if loc := value(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "/login?next=") {
		t.Errorf("the form without a login shows %s; want the login page", loc)
	}

	login(t, ctx, web.url)
	row := "#task-" + workedItem.TaskID
	run(t, ctx, "the worked example in the list", chromedp.WaitVisible(css(row)))
	rowText := value(t, ctx, "the row", chromedp.Text(css(row)))
	for _, want := range []string{"Which cost centre should this expense be charged to? CC-4410 or CC-4420.", agent, "attempt 1 of 3", "for alice", "CC-4410", "CC-4420"} {
		if !strings.Contains(rowText, want) {
			t.Errorf("the list's row %q lacks %q", rowText, want)
		}
	}

	// A new question appears without a reload.
	run(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.__same = 1`))
	multi := askVia(t, bin, inboxPath, agent, "File my taxi receipt")
	multiItem := openItem(t, inboxPath, multi)
	run(t, ctx, "the new question appears", chromedp.WaitVisible(css("#task-"+multiItem.TaskID)))
	if !value(t, ctx, "the mark", chromedp.Evaluate[bool](`window.__same === 1`)) {
		t.Error("the page was reloaded to show the new question; want it to appear in place")
	}
	if left := value(t, ctx, "time left", chromedp.Text(css(row+" time"))); !strings.HasPrefix(left, "23h") {
		t.Errorf("time left %q; want 23h…", left)
	}
	screenshot(t, ctx, "inbox-list.png")

	// The worked example's form: "engineering" is refused in the page,
	// before anything is sent.
	run(t, ctx, "open the worked example", chromedp.Click(css(row+" a.open")), chromedp.WaitVisible(css("#answer")))
	labels := value(t, ctx, "choices", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#field-costCentre .choice")).map(e => e.textContent.trim())`))
	if strings.Join(labels, ",") != "CC-4410,CC-4420" {
		t.Errorf("choices %q; want CC-4410 and CC-4420", labels)
	}
	screenshot(t, ctx, "inbox-form.png")
	run(t, ctx, "type engineering",
		chromedp.SendKeys(css(`input[name="typed.costCentre"]`), "engineering"),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css("#field-costCentre ul.errors li")),
	)
	errText := value(t, ctx, "the error", chromedp.Text(css("#field-costCentre ul.errors")))
	loc := value(t, ctx, "location", chromedp.Location())
	refused := value(t, ctx, "refusals", chromedp.AttributeValue(css("#answer"), "data-refused"))
	if errText != "Choose one of: CC-4410, CC-4420" || !strings.HasSuffix(loc, "/q/"+worked) || refused.Value != "1" {
		t.Errorf("after typing engineering: error %q at %s (refused %q); want the agent's words next to the field, in the page", errText, loc, refused.Value)
	}
	if it := openItem(t, inboxPath, worked); it.State != inbox.StateOpen {
		t.Errorf("after the refusal in the page the item is %s; want it open (nothing sent)", it.State)
	}

	// Picking CC-4410 completes the task; GetTask shows who answered.
	run(t, ctx, "pick CC-4410",
		chromedp.Click(css(`#field-costCentre input[value="CC-4410"]`)),
		chromedp.SendKeys(css("#justification"), "Taxi to the client visit"),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css("#state")),
	)
	if state := value(t, ctx, "state", chromedp.TextContent(css("#state"))); state != "completed" {
		t.Errorf("the task page says %q; want completed", state)
	}
	history := value(t, ctx, "history", chromedp.Text(css("#history")))
	for _, want := range []string{"frank", "answered", "Taxi to the client visit", "matches the question asked"} {
		if !strings.Contains(history, want) {
			t.Errorf("the task's history view lacks %q:\n%s", want, history)
		}
	}
	c := crashClient(t.Context(), t, srv.url)
	task := crashGet(t.Context(), t, c, workedItem.TaskID)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask: %s, want completed", task.Status.State)
	}
	d := lastDecision(t, task)
	if d.By.Kind != question.DeciderPerson || d.By.Name != "frank" || d.By.Via != "web inbox" || d.Decision != question.DecisionAnswered ||
		d.Justification != "Taxi to the client visit" || d.QuestionID != workedItem.Key {
		t.Errorf("GetTask's decision record %+v; want frank answered %s via the web inbox, justified", d, workedItem.Key)
	}

	// A multi-field question renders all its fields; decline works.
	run(t, ctx, "the multi-field form", chromedp.Navigate(web.url+"/q/"+multi), chromedp.WaitVisible(css("#answer")))
	names := value(t, ctx, "fields", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#answer .field[data-kind]")).map(e => e.dataset.name + ":" + e.dataset.kind)`))
	if strings.Join(names, ",") != "amount:number,date:text,costCentre:choice,currency:choice" {
		t.Errorf("fields %v; want amount, date, costCentre and currency", names)
	}
	// Refused in the page, in words (question.Field.Explain; the
	// terminal's TestAnswerPromptsFieldsOneByOneAndChecksThemLocally types
	// the same).
	run(t, ctx, "refusals in the page",
		chromedp.SendKeys(css("#field-amount input"), "-5"),
		chromedp.SendKeys(css("#field-date input"), "yesterday"),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css("#field-date ul.errors li")),
	)
	got := value(t, ctx, "the errors", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#answer .field[data-kind]")).map(e => e.dataset.name + ": " + e.querySelector("ul.errors").textContent)`))
	if want := `amount: must be greater than 0,date: "yesterday" is not in the expected format (the receipt's date, YYYY-MM-DD),costCentre: This is required.,currency: `; strings.Join(got, ",") != want {
		t.Errorf("errors in the page:\n%s\nwant\n%s", strings.Join(got, ","), want)
	}
	run(t, ctx, "decline",
		chromedp.Click(css("#refuse summary")),
		chromedp.SendKeys(css("#reason"), "Not my receipt"),
		chromedp.Click(css("#decline")),
		chromedp.WaitVisible(css("#state")),
	)
	if state := value(t, ctx, "state", chromedp.TextContent(css("#state"))); state != "rejected" {
		t.Errorf("after declining the task page says %q; want rejected", state)
	}
	task = crashGet(t.Context(), t, c, multiItem.TaskID)
	if d := lastDecision(t, task); task.Status.State != a2a.TaskStateRejected || d.Decision != question.DecisionDeclined || d.Justification != "Not my receipt" || d.By.Name != "frank" {
		t.Errorf("after declining: %s, decision %+v; want rejected, declined by frank with the reason", task.Status.State, d)
	}

	// Cancel works too.
	third := askVia(t, bin, inboxPath, agent, "File my hotel bill, 180 euros, 2026-11-20")
	thirdItem := openItem(t, inboxPath, third)
	run(t, ctx, "cancel",
		chromedp.Navigate(web.url+"/q/"+third),
		chromedp.WaitVisible(css("#answer")),
		chromedp.Click(css("#refuse summary")),
		chromedp.Click(css("#cancel")),
		chromedp.WaitVisible(css("#state")),
	)
	state := value(t, ctx, "state", chromedp.TextContent(css("#state")))
	task = crashGet(t.Context(), t, c, thirdItem.TaskID)
	if state != "canceled" || task.Status.State != a2a.TaskStateCanceled || lastDecision(t, task).Decision != question.DecisionCanceled {
		t.Errorf("after canceling: page %q, task %s; want canceled", state, task.Status.State)
	}
}

// The agent's re-ask replaces the question in place in the list, and its
// errors are shown next to the field they name; an answered question
// leaves the list; a form posted from another origin is refused.
func TestWebInboxReAskInPlaceAndCrossOriginRefused(t *testing.T) {
	ctx := browser(t)
	bin := buildAskpoint(t)
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	agent := srv.url + "/expense"
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	first := askVia(t, bin, inboxPath, agent, "File my taxi receipt from Tuesday, 42 euros")
	item := openItem(t, inboxPath, first)
	web := startWebInbox(t, bin, inboxPath)
	login(t, ctx, web.url)
	row := "#task-" + item.TaskID
	run(t, ctx, "the question in the list", chromedp.WaitVisible(css(row)))

	// Another origin's page posts a form to the inbox in frank's browser,
	// which holds frank's session.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form id="f" method="post" action="%s/q/%s"><input name="costCentre" value="CC-4420"></form><script>document.getElementById("f").submit()</script>`, web.url, first)
	}))
	defer evil.Close()
	run(t, ctx, "the other origin's post",
		chromedp.Navigate(evil.URL),
		chromedp.Poll[chromedp.Void](`location.href.includes("/q/") && document.body && document.body.innerText.length > 0`),
	)
	if body := value(t, ctx, "the answer to the post", chromedp.Text(css("body"))); !strings.Contains(body, "refused") {
		t.Errorf("the cross-origin post got %q; want it refused", body)
	}
	if it := openItem(t, inboxPath, first); it.State != inbox.StateOpen {
		t.Fatalf("after the cross-origin post the item is %s; want it open", it.State)
	}

	// A text answer from the terminal is re-asked by the agent: the
	// re-ask takes the first question's place in the list.
	run(t, ctx, "back to the list", chromedp.Navigate(web.url+"/"), chromedp.WaitVisible(css(row)), chromedp.Evaluate[chromedp.Void](`window.__same = 1`))
	out, _ := exec.Command(bin, "answer", first, "--inbox", inboxPath, "--text", "engineering").CombinedOutput()
	if !strings.Contains(string(out), "waiting: inbox item") {
		t.Fatalf("askpoint answer --text engineering:\n%s\nwant the re-ask waiting in the inbox", out)
	}
	run(t, ctx, "the re-ask in place", chromedp.WaitVisible(css(fmt.Sprintf(`tr[data-item="%d"]`, item.ID+1))))
	attempt := value(t, ctx, "attempt", chromedp.Text(css(row+" td.attempt")))
	same := value(t, ctx, "one row, same page", chromedp.Evaluate[bool](`window.__same === 1 && document.querySelectorAll("tbody tr").length === 1`))
	if attempt != "attempt 2 of 3" || !same {
		t.Errorf("the re-ask's row says %q (same page, one row: %v); want attempt 2 of 3 in the first one's place", attempt, same)
	}
	run(t, ctx, "the re-ask's form", chromedp.Click(css(row+" a.open")), chromedp.WaitVisible(css("#field-costCentre ul.errors li")))
	if errText := value(t, ctx, "the error", chromedp.Text(css("#field-costCentre ul.errors"))); errText != "Choose one of: CC-4410, CC-4420" {
		t.Errorf("next to costCentre: %q; want the agent's error", errText)
	}
	// Answered: it leaves the list.
	run(t, ctx, "answer, then the list",
		chromedp.Click(css(`#field-costCentre input[value="CC-4420"]`)),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css("#state")),
		chromedp.Navigate(web.url+"/"),
		chromedp.WaitVisible(css("#empty")),
	)
}

func lastDecision(t *testing.T, task *a2a.Task) *question.Decision {
	t.Helper()
	for i := len(task.History) - 1; i >= 0; i-- {
		if d, ok, err := question.DecisionOf(task.History[i]); ok && err == nil {
			return d
		}
	}
	t.Fatalf("no decision record in the task's history: %v", task.History)
	return nil
}

// askpoint serve's own page, in the browser: the principal logs in with
// their bearer token, sees their paused task, sees a new one appear
// without a reload, and answers it.
func TestServerPageInABrowser(t *testing.T) {
	ctx := browser(t)
	bin := buildAskpoint(t)
	const token = "alice-token-0123456789"
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"), "--token", "alice="+token)
	if err != nil {
		t.Fatal(err)
	}
	c := dialAs(t, srv.url+"/expense", token)
	send := func(text string) *a2a.Task {
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task)
	}
	first := send("File my taxi receipt from Tuesday, 42 euros")
	run(t, ctx, "log in",
		chromedp.Navigate(srv.url+"/inbox/"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), token),
		chromedp.Submit(css("#login")),
		chromedp.WaitVisible(css("#task-"+string(first.ID))),
		chromedp.Evaluate[chromedp.Void](`window.__same = 1`),
	)
	second := send("File my taxi receipt")
	run(t, ctx, "the new task appears", chromedp.WaitVisible(css("#task-"+string(second.ID))))
	if !value(t, ctx, "the mark", chromedp.Evaluate[bool](`window.__same === 1`)) {
		t.Error("the page was reloaded; want the new task to appear in place")
	}
	run(t, ctx, "answer",
		chromedp.Click(css("#task-"+string(first.ID)+" a.open")),
		chromedp.WaitVisible(css("#answer")),
		chromedp.Click(css(`#field-costCentre input[value="CC-4410"]`)),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css("#notice")),
	)
	if notice := value(t, ctx, "notice", chromedp.Text(css("#notice"))); !strings.Contains(notice, "completed") {
		t.Errorf("after answering: %q; want the task completed", notice)
	}
	done := crashGet(t.Context(), t, c, string(first.ID))
	if d := lastDecision(t, done); done.Status.State != a2a.TaskStateCompleted || d.By.Name != "alice" || d.By.Via != "server page" {
		t.Errorf("task %s, decision %+v; want completed, answered by alice on the server page", done.Status.State, d)
	}
}
