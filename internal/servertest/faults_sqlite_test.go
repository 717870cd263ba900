package servertest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

// driverText is what no response may carry: SQL, driver and file names.
var driverText = []string{"SQLSTATE", "sqlite", "SQLITE", "postgres", "pgx", "FATAL", "database is locked", "dial tcp", "askpoint.db", "disk I/O"}

func carriesDriverText(s string) string {
	for _, w := range driverText {
		if strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// immutable sets (on) or clears the immutable attribute of paths with
// chattr. Root ignores file modes, so a read-only chmod does not stop the
// tests' writes; an immutable file stops root too. ok is false when chattr
// is missing or the file system does not support the attribute.
func immutable(t *testing.T, on bool, paths ...string) bool {
	t.Helper()
	flag := "-i"
	if on {
		flag = "+i"
	}
	var have []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			have = append(have, p)
		}
	}
	out, err := exec.Command("chattr", append([]string{flag}, have...)...).CombinedOutput()
	if err != nil {
		if on {
			t.Logf("chattr %s: %v: %s", flag, err, out)
		} else {
			t.Errorf("chattr %s: %v: %s", flag, err, out)
		}
		return false
	}
	return true
}

// TestSQLiteUnwritableFile: while the database's files cannot be written
// (made immutable with chattr +i: a read-only chmod does not stop root,
// and no small file system can be mounted here), a request is refused with
// a retryable error (HTTP+JSON 503 with Retry-After; JSON-RPC -32603 saying
// to send it again) that names no driver or file; nothing is corrupted;
// and once the files can be written the same request succeeds.
func TestSQLiteUnwritableFile(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	before := send(t, ctx, c, userText("complete"))
	if before.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("before: state %s, want completed", before.Status.State)
	}
	// Not the -shm: SQLite maps it into memory, and an -shm that cannot
	// be written crashed the process (SIGSEGV in modernc.org/sqlite) in
	// 2 of 3 runs under -race; a disk that fails does not take the WAL
	// index away from a running process that way.
	files := []string{env.DBPath, env.DBPath + "-wal", filepath.Dir(env.DBPath)}
	if !immutable(t, true, files...) {
		if os.Getenv("CI") != "" {
			t.Fatal("chattr +i does not work here; the unwritable-file case cannot run")
		}
		t.Skip("chattr +i does not work here (needs root and a file system with the immutable attribute)")
	}
	cleared := false
	t.Cleanup(func() {
		if !cleared {
			immutable(t, false, files...)
		}
	})

	msg := `{"message":{"messageId":"unwritable-1","role":"ROLE_USER","parts":[{"text":"complete"}]}}`
	r := tckDo(t, http.MethodPost, env.AgentURL("script")+askpoint.PathREST+"/message:send", []byte(msg), jsonHeaders...)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP+JSON while unwritable: status %d Retry-After %q, want 503 with Retry-After; body %s", r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
	if w := carriesDriverText(string(r.Raw)); w != "" {
		t.Fatalf("HTTP+JSON answer carries %q: %s", w, r.Raw)
	}
	rpc := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"unwritable-2","role":"ROLE_USER","parts":[{"text":"complete"}]}}}`
	rr := tckDo(t, http.MethodPost, env.AgentURL("script")+askpoint.PathJSONRPC, []byte(rpc), jsonHeaders...)
	var reply struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rr.Raw, &reply); err != nil || reply.Error == nil {
		t.Fatalf("JSON-RPC while unwritable: %s, want an error", rr.Raw)
	}
	if reply.Error.Code != -32603 || !strings.Contains(reply.Error.Message, "send the request again") {
		t.Fatalf("JSON-RPC error %d %q, want -32603 saying to send it again", reply.Error.Code, reply.Error.Message)
	}
	if w := carriesDriverText(string(rr.Raw)); w != "" {
		t.Fatalf("JSON-RPC answer carries %q: %s", w, rr.Raw)
	}
	// A read needs the WAL index (-shm) written too: it gets the same
	// retryable answer, or the task.
	if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: before.ID}); err != nil {
		if !strings.Contains(err.Error(), "send the request again") || carriesDriverText(err.Error()) != "" {
			t.Fatalf("GetTask while unwritable: %v, want the retryable error", err)
		}
	} else if got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask while unwritable: state %s, want completed", got.Status.State)
	}

	cleared = immutable(t, false, files...)
	again := tckDo(t, http.MethodPost, env.AgentURL("script")+askpoint.PathREST+"/message:send", []byte(msg), jsonHeaders...)
	if again.Status != http.StatusOK {
		t.Fatalf("the same request once writable: status %d %s, want 200", again.Status, again.Raw)
	}
	if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: before.ID}); err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask once writable = %v, %v; want the completed task", got, err)
	}
	if !strings.Contains(string(again.Raw), "TASK_STATE_COMPLETED") {
		t.Fatalf("the same request once writable: %s, want a completed task", again.Raw)
	}
	// Nothing was corrupted: SQLite's own check passes on the file.
	db, err := sql.Open("sqlite", "file:"+env.DBPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(context.Background(), "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v; want ok", check, err)
	}
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM tasks").Scan(&n); err != nil || n != 2 {
		t.Fatalf("tasks in the file = %d, %v; want 2 (the one before, the retried one; nothing of the refused ones)", n, err)
	}
}

// keyRecorder completes at once, recording the key of every first step.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (a *keyRecorder) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	a.mu.Lock()
	a.keys = append(a.keys, call.Key)
	a.mu.Unlock()
	return askpoint.Complete(), nil
}

func (a *keyRecorder) Resume(ctx context.Context, call *askpoint.Call, _ *askpoint.Resumption) (askpoint.Outcome, error) {
	return askpoint.Complete(), nil
}

func (a *keyRecorder) snapshot() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...)
}

// TestQuickStepRedeliveredAfterItsWriteFailedKeepsItsKey: on SQLite a first
// message's step runs before its task is written (a quick step). When that
// write fails, nothing was acknowledged and the caller sends the message
// again; the task it then gets has another ID, but its first step runs
// under the same idempotency key, so a side effect the first run made is
// not made twice.
func TestQuickStepRedeliveredAfterItsWriteFailedKeepsItsKey(t *testing.T) {
	agent := &keyRecorder{}
	env := apitest.Start(t, apitest.Options{Quiet: true,
		Agents: []askpoint.AgentSpec{{Name: "keys", Agent: agent, Card: a2a.AgentCard{Name: "Keys", Description: "records its keys"}}}})
	c := env.Client(t, "keys", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	if first := send(t, ctx, c, userText("warm")); first.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("before: state %s, want completed", first.Status.State)
	}
	files := []string{env.DBPath, env.DBPath + "-wal", filepath.Dir(env.DBPath)}
	if !immutable(t, true, files...) {
		if os.Getenv("CI") != "" {
			t.Fatal("chattr +i does not work here; the failed-write case cannot run")
		}
		t.Skip("chattr +i does not work here (needs root and a file system with the immutable attribute)")
	}
	cleared := false
	t.Cleanup(func() {
		if !cleared {
			immutable(t, false, files...)
		}
	})
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("file it"))
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg}); err == nil {
		t.Fatal("SendMessage while the file cannot be written succeeded, want a retryable error")
	}
	tried := agent.snapshot()
	if len(tried) < 2 {
		t.Fatalf("first steps run = %v, want the warm-up's and the failed write's", tried)
	}
	cleared = immutable(t, false, files...)
	task := send(t, ctx, c, msg)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the redelivery: state %s, want completed", task.Status.State)
	}
	keys := agent.snapshot()
	failed, redelivered := keys[1], keys[len(keys)-1]
	if failed != redelivered || !strings.HasSuffix(redelivered, "/start") {
		t.Fatalf("first step keys: %q while the write failed, %q on the redelivery; want one key ending in /start", failed, redelivered)
	}
	for _, k := range keys[1 : len(keys)-1] {
		if k != failed {
			t.Fatalf("first step keys %v: a retry ran under another key", keys)
		}
	}
}
