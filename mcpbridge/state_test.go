package mcpbridge_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/mcpbridge"
)

// pending starts an expense task that waits on its cost centre question,
// as alice, and returns the session, the result and the task's snapshot.
func pending(t *testing.T, r *rig) (*mcp.ClientSession, *mcp.CallToolResult, string) {
	t.Helper()
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "expense_agent", "File my taxi receipt from Tuesday, 42 euros")
	form(t, res)
	return cs, res, snapshot(r.task(t, "expense", res.Meta["dev.askpoint/taskId"]))
}

// unchanged fails the test when the task of res changed since before.
func (r *rig) unchanged(t *testing.T, res *mcp.CallToolResult, before string) {
	t.Helper()
	if after := snapshot(r.task(t, "expense", res.Meta["dev.askpoint/taskId"])); after != before {
		t.Errorf("the task changed: %s, was %s", after, before)
	}
}

func accept(key string, content map[string]any) mcp.InputResponseMap {
	return mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: content}}
}

func TestAForgedRequestStateIsRefused(t *testing.T) {
	r := newRig(t, nil)
	cs, res, before := pending(t, r)
	key, _ := form(t, res)
	body, sig, _ := strings.Cut(res.RequestState, ".")
	flipped := []byte(body)
	flipped[len(flipped)/2] ^= 1
	for name, st := range map[string]string{
		"changed body":  string(flipped) + "." + sig,
		"no signature":  body,
		"not a state":   "request_state",
		"another key's": forge(t, res.RequestState),
	} {
		_, err := retry(t, cs, "expense_agent", accept(key, map[string]any{"costCentre": "CC-4410"}), st)
		t.Run(name, func(t *testing.T) { rpcError(t, err, "requestState was not issued by this server") })
	}
	r.unchanged(t, res, before)
}

// forge is st re-signed with another key: a state of the right form that
// this bridge did not issue.
func forge(t *testing.T, st string) string {
	body, _, _ := strings.Cut(st, ".")
	other := strings.Repeat("A", 43)
	return body + "." + other
}

func TestAReplayedRequestStateIsRefused(t *testing.T) {
	r := newRig(t, nil)
	cs, res, _ := pending(t, r)
	key, _ := form(t, res)
	done, err := retry(t, cs, "expense_agent", accept(key, map[string]any{"costCentre": "CC-4410"}), res.RequestState)
	if err != nil || done.IsError || done.NeedsInput() {
		t.Fatalf("first use: %v %s", err, dump(done))
	}
	before := snapshot(r.task(t, "expense", done.Meta["dev.askpoint/taskId"]))
	_, err = retry(t, cs, "expense_agent", accept(key, map[string]any{"costCentre": "CC-4420"}), res.RequestState)
	rpcError(t, err, "no longer open", key, "the task is now completed", "nothing was sent")
	r.unchanged(t, res, before)
}

func TestAnExpiredRequestStateIsRefused(t *testing.T) {
	var skew atomic.Int64
	r := newRig(t, func(c *mcpbridge.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	cs, res, before := pending(t, r)
	key, _ := form(t, res)
	skew.Store(int64(30 * 24 * time.Hour)) // past the question's expiry
	_, err := retry(t, cs, "expense_agent", accept(key, map[string]any{"costCentre": "CC-4410"}), res.RequestState)
	rpcError(t, err, "requestState has expired", key, "expired at")
	r.unchanged(t, res, before)
}

func TestAnotherCallersRequestStateIsRefused(t *testing.T) {
	r := newRig(t, nil)
	_, res, before := pending(t, r)
	key, _ := form(t, res)
	bob := r.connect(t, "bob", "", nil)
	_, err := retry(t, bob, "expense_agent", accept(key, map[string]any{"costCentre": "CC-4410"}), res.RequestState)
	rpcError(t, err, "belongs to another caller", key)
	r.unchanged(t, res, before)
}

func TestMalformedInputResponsesAreRefused(t *testing.T) {
	r := newRig(t, nil)
	cs, res, before := pending(t, r)
	key, _ := form(t, res)
	cases := []struct {
		name      string
		responses mcp.InputResponseMap
		state     string
		words     []string
	}{
		{"unknown key", accept("other", map[string]any{"costCentre": "CC-4410"}), res.RequestState, []string{`"other"`, "did not ask"}},
		{"no response", mcp.InputResponseMap{}, res.RequestState, []string{"no response for", key}},
		{"no state", accept(key, map[string]any{"costCentre": "CC-4410"}), "", []string{"without the requestState"}},
		{"unknown action", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "maybe"}}, res.RequestState, []string{`"maybe"`, "accept, decline or cancel"}},
		{"accept without content", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}, res.RequestState, []string{"accepts with no content"}},
		{"not an elicitation", mcp.InputResponseMap{key: &mcp.ListRootsResult{}}, res.RequestState, []string{"not an elicitation result"}},
	}
	for _, c := range cases {
		_, err := retry(t, cs, "expense_agent", c.responses, c.state)
		t.Run(c.name, func(t *testing.T) { rpcError(t, err, c.words...) })
	}
	// A field the form does not have is the form's refusal, as a new round.
	again := answer(t, cs, "expense_agent", res, map[string]any{"costCentre": "CC-4410", "bonus": 1})
	if _, ep := form(t, again); !strings.Contains(ep.Message, "the form has no field bonus") {
		t.Errorf("message %q, want the unknown field named", ep.Message)
	}
	r.unchanged(t, res, before)
}
