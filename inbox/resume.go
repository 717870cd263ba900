package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
)

// Person is the last resolver of a client loop's chain: it hands the
// question to a person through the inbox. It records the agent's URL, the
// task, its context, the question and the loop's bookkeeping as an open
// item and returns a *DeferredError (errors.Is client.ErrDeferred): the
// loop returns at once, holding no goroutine, loop or connection for the
// person. The person answers later (askpoint answer, or Resume), from this
// process or another.
type Person struct {
	Inbox *Inbox
}

// Resolve implements client.Resolver.
func (p Person) Resolve(ctx context.Context, q *client.Query) (*client.Answer, error) {
	if p.Inbox == nil {
		return nil, errors.New("inbox: the Person resolver has no inbox")
	}
	if q.Agent == "" {
		return nil, errors.New("inbox: the Person resolver needs the agent's URL to send the answer later; pass client.WithAgentURL")
	}
	it := FromStatus(q.Agent, string(q.TaskID), q.ContextID, q.Status)
	if it.Key == "" {
		it.Key = questionKeyFallback(q)
	}
	it.Request, it.Caller = q.Request, q.Caller
	it.Round, it.MaxRounds = q.Round, q.MaxRounds
	it.Source = SourceClient
	stored, _, err := p.Inbox.Add(ctx, it)
	if err != nil {
		return nil, fmt.Errorf("inbox: record the question: %w", err)
	}
	return nil, &DeferredError{Item: stored}
}

func questionKeyFallback(q *client.Query) string {
	if q.Question != nil {
		return q.Question.ID
	}
	if q.Status != nil && q.Status.ID != "" {
		return q.Status.ID
	}
	return fmt.Sprintf("round-%d", q.Round)
}

// DeferredError says in which item a question waits for a person. It is
// what Person returns, and so what client.Run and Resume return when the
// question was deferred.
type DeferredError struct {
	Item *Item
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("inbox: question %s of task %s waits on a person in inbox item %d", e.Item.Key, e.Item.TaskID, e.Item.ID)
}

// Is makes errors.Is(err, client.ErrDeferred) true.
func (e *DeferredError) Is(target error) bool { return target == client.ErrDeferred }

// Query describes the item's question the way a resolver sees it (for
// showing it to a person before Resume).
func (it *Item) Query() *client.Query {
	return &client.Query{
		Agent: it.AgentURL, Caller: it.Caller,
		TaskID: a2a.TaskID(it.TaskID), ContextID: it.ContextID,
		Request: it.Request, Status: it.Status, Question: it.Question, Text: it.Text,
		Round: it.Round, MaxRounds: it.MaxRounds,
	}
}

// Resume answers the open question of item itemID with ans and drives the
// task on with client.Continue: later questions go through the resolver
// chain (client.WithResolvers), and may be deferred to the inbox again
// (Person). It connects to the item's agent (or, for an item that does not
// name one, the agent of client.WithAgentURL) with the dialer
// (client.WithDialer, default client.Dial, which speaks JSON-RPC and
// HTTP+JSON; give grpcdial.Dial for an agent reached over gRPC).
//
// The answer is checked against the question before anything is sent: an
// invalid one returns a *client.InvalidAnswerError and leaves the item
// open. When the item is no longer open, or the task no longer asks its
// question, the error wraps client.ErrStale (and the item is closed). Once
// the agent has taken the answer, the item is marked answered with ans.By
// (default client.ByPerson).
func Resume(ctx context.Context, ib *Inbox, itemID int64, ans client.Answer, opts ...client.Option) (*client.Result, error) {
	if ib == nil {
		return nil, errors.New("inbox: Resume needs the inbox")
	}
	it, err := ib.Get(ctx, itemID)
	if err != nil {
		return nil, err
	}
	if it.State != StateOpen {
		return nil, fmt.Errorf("%w: inbox item %d is %s", client.ErrStale, it.ID, it.StateText())
	}
	return client.Continue(ctx, &client.Paused{
		Query: it.Query(), Key: it.Key,
		Name:   fmt.Sprintf("inbox item %d", it.ID),
		Record: itemRecord{ib: ib, id: it.ID},
	}, ans, opts...)
}

// itemRecord records in the inbox what became of a resumed item.
type itemRecord struct {
	ib *Inbox
	id int64
}

func (r itemRecord) Answered(ctx context.Context, by string, answer json.RawMessage) error {
	return r.ib.MarkAnswered(ctx, r.id, by, answer)
}

func (r itemRecord) Closed(ctx context.Context, note string) error {
	if err := r.ib.Dismiss(ctx, r.id, note); err != nil && !errors.Is(err, ErrNotOpen) {
		return err
	}
	return nil
}
