package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/store"
)

// Seeding puts many tasks into input-required quickly, in the server's own
// process, so that its memory can be read with them paused.

const receipt = "File my taxi receipt from Tuesday, 42 euros"

func receiptMessage() *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(receipt))
}

// seedSDKHandler pauses n tasks through the SDK handler itself (the same
// path as a request, minus HTTP), from several goroutines. It takes 1.5 to 6
// minutes per 100,000 tasks on a 2-core machine (gob deep copies), so the
// default is seedSDK.
func seedSDKHandler(ctx context.Context, h a2asrv.RequestHandler, n int) error {
	workers := 4 * runtime.GOMAXPROCS(0)
	var (
		next  = make(chan struct{})
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for range next {
				cctx, _ := a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(nil))
				res, err := h.SendMessage(cctx, &a2a.SendMessageRequest{Message: receiptMessage()})
				if err == nil {
					if t, ok := res.(*a2a.Task); !ok || t.Status.State != a2a.TaskStateInputRequired {
						err = fmt.Errorf("seed: got %T, want a task in input-required", res)
					}
				}
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
				}
			}
		})
	}
	for range n {
		errMu.Lock()
		failed := first != nil
		errMu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// seedSDK pauses n tasks in the SDK server quickly: one task is paused
// through the handler, then copied n times with new task, context and
// message IDs into the handler's own in-memory task store with Create (one
// gob deep copy each), from several goroutines. The tasks are the same;
// the heap they take comes out ~10% lower than with seedSDKHandler, whose
// garbage leaves the retained objects spread over more spans.
func seedSDK(ctx context.Context, h a2asrv.RequestHandler, ts *taskstore.InMemory, n int) error {
	cctx, _ := a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(nil))
	res, err := h.SendMessage(cctx, &a2a.SendMessageRequest{Message: receiptMessage()})
	if err != nil {
		return fmt.Errorf("pause a template task: %w", err)
	}
	t, ok := res.(*a2a.Task)
	if !ok || t.Status.State != a2a.TaskStateInputRequired {
		return fmt.Errorf("template task: got %T, want a task in input-required", res)
	}
	workers := runtime.GOMAXPROCS(0)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for w := range workers {
		count := n / workers
		if w < n%workers {
			count++
		}
		wg.Go(func() {
			stored, err := ts.Get(cctx, t.ID) // a deep copy of its own
			if err == nil {
				tmpl := stored.Task
				for range count {
					if ctx.Err() != nil {
						err = ctx.Err()
						break
					}
					id, cid := a2a.NewTaskID(), a2a.NewContextID()
					tmpl.ID, tmpl.ContextID = id, cid
					for _, m := range append(slices.Clone(tmpl.History), tmpl.Status.Message) {
						if m != nil {
							m.ID, m.TaskID, m.ContextID = a2a.NewMessageID(), id, cid
						}
					}
					if _, err = ts.Create(cctx, tmpl); err != nil {
						break
					}
				}
			}
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// bulkCreator is a store that can insert many tasks in one transaction
// (store/sqlite's CreateTasks).
type bulkCreator interface {
	CreateTasks(ctx context.Context, tasks []*store.Task, logs [][]store.LogEntry) error
}

// seedAskpoint pauses one real task through the engine, then copies its row
// and log n times (new task, context, question and message IDs) straight
// into the store: the rows are exactly what the engine writes for a paused
// expense task.
func seedAskpoint(ctx context.Context, srv *askpoint.Server, st store.Store, n int) error {
	h, ok := srv.RequestHandler("expense")
	if !ok {
		return errors.New("no expense agent")
	}
	res, err := h.SendMessage(ctx, &a2a.SendMessageRequest{Message: receiptMessage()})
	if err != nil {
		return fmt.Errorf("pause a template task: %w", err)
	}
	t, ok := res.(*a2a.Task)
	if !ok || t.Status.State != a2a.TaskStateInputRequired {
		return fmt.Errorf("template task: got %T, want a task in input-required", res)
	}
	tmpl, err := st.GetTask(ctx, string(t.ID))
	if err != nil {
		return err
	}
	log, err := st.ReadLog(ctx, tmpl.ID, 0, 0)
	if err != nil {
		return err
	}
	var q struct {
		ID string `json:"questionId"`
	}
	if err := json.Unmarshal(tmpl.Question, &q); err != nil || q.ID == "" {
		return fmt.Errorf("template task's question: %v", err)
	}
	var msgID string
	for _, e := range log {
		if e.Kind == store.KindMessage {
			msgID = e.MessageID
			break
		}
	}

	const batch = 2000
	type chunk struct {
		tasks []*store.Task
		logs  [][]store.LogEntry
	}
	chunks := make(chan chunk, 2)
	go func() { // build the copies while the previous batch is inserted
		defer close(chunks)
		for done := 0; done < n; {
			size := min(batch, n-done)
			c := chunk{make([]*store.Task, size), make([][]store.LogEntry, size)}
			for i := range size {
				c.tasks[i], c.logs[i] = clonePaused(tmpl, log, q.ID, msgID)
			}
			select {
			case chunks <- c:
			case <-ctx.Done():
				return
			}
			done += size
		}
	}()
	bulk, _ := st.(bulkCreator)
	var ferr error
	for c := range chunks {
		if ferr != nil {
			continue // drain
		}
		if bulk != nil {
			ferr = bulk.CreateTasks(ctx, c.tasks, c.logs)
		} else {
			ferr = createEach(ctx, st, c.tasks, c.logs)
		}
	}
	if ferr != nil {
		return ferr
	}
	return ctx.Err()
}

// clonePaused copies a paused task and its log with new task, context,
// question and request message IDs.
func clonePaused(tmpl *store.Task, log []store.LogEntry, questionID, msgID string) (*store.Task, []store.LogEntry) {
	r := replacer{
		{[]byte(tmpl.ID), []byte(a2a.NewTaskID())},
		{[]byte(tmpl.ContextID), []byte(a2a.NewContextID())},
		{[]byte(questionID), []byte("q-" + randomID())},
	}
	if msgID != "" {
		r = append(r, pair{[]byte(msgID), []byte(a2a.NewMessageID())})
	}
	return r.clone(tmpl, log)
}

// clone copies a task and its log with r applied to its IDs and to every
// JSON value.
func (r replacer) clone(tmpl *store.Task, log []store.LogEntry) (*store.Task, []store.LogEntry) {
	c := *tmpl
	c.ID, c.ContextID = string(r.apply([]byte(c.ID))), string(r.apply([]byte(c.ContextID)))
	c.Status, c.Checkpoint, c.Question = r.apply(c.Status), r.apply(c.Checkpoint), r.apply(c.Question)
	c.Artifacts, c.Metadata, c.Input, c.Pause = r.apply(c.Artifacts), r.apply(c.Metadata), r.apply(c.Input), r.apply(c.Pause)
	es := make([]store.LogEntry, len(log))
	for j, e := range log {
		e.Seq = 0
		e.MessageID = string(r.apply([]byte(e.MessageID)))
		e.Body = r.apply(e.Body)
		es[j] = e
	}
	return &c, es
}

// createEach inserts tasks one CreateTask at a time from several goroutines.
func createEach(ctx context.Context, st store.Store, tasks []*store.Task, logs [][]store.LogEntry) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if _, err := st.CreateTask(ctx, tasks[i], logs[i]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

type pair struct{ from, to []byte }

type replacer []pair

func (r replacer) apply(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	for _, p := range r {
		b = bytes.ReplaceAll(b, p.from, p.to)
	}
	return b
}
