package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// Script is an agent for tests that does what the first word of its
// request says:
//
//	complete        complete with a text artifact "done"
//	ask             ask for {"name": string}; complete with "hello NAME"
//	ask-twice       ask for a name, then for a colour; complete with both
//	progress        stream two progress messages and an artifact, then complete
//	block KEY       wait until Release(KEY) (or the run is canceled), then complete
//	ask-block KEY   ask for a name; once answered, wait until Release(KEY), then complete with "hello NAME"
//	auth            pause in auth-required; complete when authorized
//	fail            fail with "asked to fail"
//	reject          reject with "asked to reject"
//	panic           panic
//	bad-schema      ask a question whose schema does not compile
//	ext-ref         ask a question whose schema refers to a local file
//	choose          ask for a size from options S (Small) and L (Large)
func Script() askpoint.Agent {
	return askpoint.Steps[scriptCP, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			words := strings.Fields(text(call.Request))
			if len(words) == 0 {
				return askpoint.Reject("empty request"), nil
			}
			switch words[0] {
			case "complete":
				return askpoint.Complete(textArtifact("result", "done")), nil
			case "ask", "ask-twice":
				return askpoint.Ask(nameQuestion(), scriptCP{Step: words[0]}), nil
			case "ask-block":
				if len(words) < 2 {
					return askpoint.Reject("ask-block needs a gate key"), nil
				}
				return askpoint.Ask(nameQuestion(), scriptCP{Step: words[0], Name: words[1]}), nil
			case "progress":
				if err := call.Progress(ctx, "working on it"); err != nil {
					return askpoint.Outcome{}, err
				}
				if err := call.AddArtifact(ctx, textArtifact("partial", "half")); err != nil {
					return askpoint.Outcome{}, err
				}
				if err := call.Progress(ctx, "almost there"); err != nil {
					return askpoint.Outcome{}, err
				}
				return askpoint.Complete(textArtifact("result", "done")), nil
			case "block":
				key := ""
				if len(words) > 1 {
					key = words[1]
				}
				select {
				case <-gate(key):
				case <-ctx.Done():
					return askpoint.Outcome{}, ctx.Err()
				}
				return askpoint.Complete(textArtifact("result", "unblocked")), nil
			case "auth":
				return askpoint.RequireAuth("Sign in to the calendar service at https://calendar.example/authorize, then tell me.", scriptCP{Step: "auth"}), nil
			case "fail":
				return askpoint.Fail("asked to fail"), nil
			case "reject":
				return askpoint.Reject("asked to reject"), nil
			case "panic":
				panic("asked to panic")
			case "bad-schema":
				return askpoint.Ask(question.Question{Text: "Unanswerable?", Schema: json.RawMessage(`{"type": 12}`)}, nil), nil
			case "ext-ref":
				return askpoint.Ask(question.Question{Text: "Whose password?", Schema: json.RawMessage(`{"type":"object","properties":{"p":{"$ref":"file:///etc/passwd"}}}`)}, nil), nil
			case "choose":
				return askpoint.Ask(question.Question{
					Text:    "Which size?",
					Schema:  json.RawMessage(`{"type":"object","required":["size"],"properties":{"size":{"type":"string"}}}`),
					Options: []question.Option{{Value: "S", Label: "Small"}, {Value: "L", Label: "Large"}},
				}, scriptCP{Step: "choose"}), nil
			}
			return askpoint.Reject("unknown command " + words[0]), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp scriptCP, a map[string]any) (askpoint.Outcome, error) {
			switch cp.Step {
			case "ask":
				return askpoint.Complete(textArtifact("result", fmt.Sprintf("hello %v", a["name"]))), nil
			case "ask-block":
				select {
				case <-gate(cp.Name):
				case <-ctx.Done():
					return askpoint.Outcome{}, ctx.Err()
				}
				return askpoint.Complete(textArtifact("result", fmt.Sprintf("hello %v", a["name"]))), nil
			case "ask-twice":
				return askpoint.Ask(question.Question{
					Text:   "Which colour?",
					Schema: json.RawMessage(`{"type":"object","required":["colour"],"properties":{"colour":{"type":"string"}}}`),
				}, scriptCP{Step: "colour", Name: fmt.Sprint(a["name"])}), nil
			case "choose":
				return askpoint.Complete(textArtifact("result", fmt.Sprintf("size %v", a["size"]))), nil
			case "colour":
				return askpoint.Complete(textArtifact("result", fmt.Sprintf("%s likes %v", cp.Name, a["colour"]))), nil
			}
			return askpoint.Fail("unexpected step " + cp.Step), nil
		},
		OnAuth: func(ctx context.Context, call *askpoint.Call, cp scriptCP, arr *askpoint.AuthArrival) (askpoint.Outcome, error) {
			how := "go call"
			if arr.Message != nil {
				how = "message"
			}
			return askpoint.Complete(textArtifact("result", "authorized by "+how)), nil
		},
	}
}

type scriptCP struct {
	Step string `json:"step"`
	Name string `json:"name,omitempty"`
}

func nameQuestion() question.Question {
	return question.Question{
		Text:   "What is your name?",
		Schema: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string","minLength":1}}}`),
	}
}

func textArtifact(name, text string) *a2a.Artifact {
	return &a2a.Artifact{Name: name, Parts: a2a.ContentParts{a2a.NewTextPart(text)}}
}

func text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(t))
		}
	}
	return b.String()
}

var (
	gatesMu sync.Mutex
	gates   = map[string]chan struct{}{}
)

func gate(key string) chan struct{} {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	g, ok := gates[key]
	if !ok {
		g = make(chan struct{})
		gates[key] = g
	}
	return g
}

// Release lets every "block KEY" run finish.
func Release(key string) {
	g := gate(key)
	gatesMu.Lock()
	defer gatesMu.Unlock()
	select {
	case <-g:
	default:
		close(g)
	}
}

// UniqueKey returns a gate key no other test uses.
func UniqueKey(t interface{ Name() string }) string {
	return strings.ReplaceAll(t.Name(), "/", "_") + "-" + fmt.Sprint(time.Now().UnixNano())
}

// Replier is an agent for tests that answers every message with a message
// of its own (no task): "hello <you> & MESSAGE_ID", ID reply-MESSAGE_ID,
// context ctx-MESSAGE_ID. Register it as "replier" with ReplierSpec.
func Replier() askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnReply: func(_ context.Context, m *a2a.Message) (*a2a.Message, bool) {
			reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello <you> & "+m.ID))
			reply.ID, reply.ContextID = "reply-"+m.ID, "ctx-"+m.ID
			return reply, true
		},
	}
}

// ReplierSpec is Replier as the agent "replier".
func ReplierSpec() askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "replier", Agent: Replier(), Card: a2a.AgentCard{Name: "Replier", Description: "Answers with a message."}}
}
