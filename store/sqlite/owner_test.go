package sqlite

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// holderEnv names the database a re-run of this test binary opens and
// holds (TestHelperHoldsTheFile), as a second process would.
const holderEnv = "ASKPOINT_SQLITE_TEST_HOLD"

// TestHelperHoldsTheFile is not a test of its own: run by startHolder in
// a process of its own, it opens the file, claims every push delivery due
// with an hour's lease, says "held" and waits to be killed.
func TestHelperHoldsTheFile(t *testing.T) {
	path := os.Getenv(holderEnv)
	if path == "" {
		return // run by go test: nothing to hold
	}
	s, err := Open(t.Context(), path)
	if err != nil {
		os.Stdout.WriteString("open failed: " + err.Error() + "\n")
		os.Exit(1)
	}
	got, err := s.ClaimPushDeliveries(t.Context(), store.ClaimParams{Owner: "holder", Now: time.Now(), LeaseFor: time.Hour, Limit: 10})
	if err != nil || len(got) != 1 {
		os.Stdout.WriteString("claim failed\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("held\n")
	select {} // until SIGKILL
}

// startHolder runs TestHelperHoldsTheFile on path in a new process and
// returns once it holds the file and a claim; the process is SIGKILLed
// when the test ends, if the test has not killed it.
func startHolder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldsTheFile$", "-test.count=1")
	cmd.Env = append(os.Environ(), holderEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("holder process said %q (%v), want \"held\"", line, err)
	}
	return cmd
}

// duePush makes task t1 with a notify entry and a push configuration p1
// due for it, and task t2 with a configuration whose failed delivery waits
// out a backoff of an hour.
func duePush(t *testing.T, path string) {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.CreateTask(t.Context(), sampleTask(id), []store.LogEntry{{Kind: store.KindStatus, Notify: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PutPushConfig(t.Context(), &store.PushConfig{TaskID: "t2", ID: "p2", Config: json.RawMessage(`{"url":"https://x"}`)}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimPushDeliveries(t.Context(), store.ClaimParams{Now: time.Now(), LeaseFor: time.Minute, Limit: 10})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim p2 = %v, %v, want it", claimed, err)
	}
	backoff := *claimed[0]
	backoff.Attempts, backoff.DueAt = 1, time.Now().Add(time.Hour)
	if _, err := s.SettlePush(t.Context(), &backoff); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPushConfig(t.Context(), &store.PushConfig{TaskID: "t1", ID: "p1", Config: json.RawMessage(`{"url":"https://x"}`)}); err != nil {
		t.Fatal(err)
	}
}

// A second process cannot open a file a process has open: the error names
// the file and its lock; once that process is killed, the file opens.
func TestASecondProcessCannotOpenTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	duePush(t, path)
	holder := startHolder(t, path)

	s, err := Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%q) while another process has it open = nil error, want it refused", path)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, path+".lock") || !strings.Contains(msg, "another process") {
		t.Errorf("Open(%q) while another process has it open = %q, want an error naming the file, its lock and another process", path, msg)
	}
	// Read-only opens (askpoint stats) take no lock.
	ro, err := OpenWith(t.Context(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenWith(%q, ReadOnly) while another process has it open = %v, want nil", path, err)
	}
	ro.Close()

	holder.Process.Kill()
	holder.Wait()
	open(t, path)
}

// The claim of a process killed in the middle of a delivery does not hold
// the delivery until its lease lapses (here an hour): the next owner's
// Open frees it, and only it: a backoff waits on.
func TestClaimsOfAKilledProcessAreFreedAtOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	duePush(t, path)
	holder := startHolder(t, path)
	holder.Process.Kill()
	holder.Wait()

	s := open(t, path)
	p2, err := s.GetPushConfig(t.Context(), "t2", "p2")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimPushDeliveries(t.Context(), store.ClaimParams{Now: time.Now(), LeaseFor: time.Minute, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "p1" {
		t.Fatalf("ClaimPushDeliveries(now) after the holder was killed = %v, want p1 (its claim freed), not p2 (in backoff)", pushIDs(got))
	}
	if p2.DueAt.Before(time.Now().Add(50*time.Minute)) || p2.Attempts != 1 {
		t.Errorf("p2 after the reopen: due %v, attempts %d; want its backoff (an hour) and attempt kept", p2.DueAt, p2.Attempts)
	}
}

// Handles one process opens on a file share its lock: a second handle
// opens while the first is open, frees no claim of the first, and the
// last Close gives the lock back.
func TestHandlesOfOneProcessShareTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	duePush(t, path)
	a := open(t, path)
	claimed, err := a.ClaimPushDeliveries(t.Context(), store.ClaimParams{Now: time.Now(), LeaseFor: time.Hour, Limit: 10})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim on the first handle = %v, %v, want p1", pushIDs(claimed), err)
	}
	b := open(t, path)
	if got, err := b.ClaimPushDeliveries(t.Context(), store.ClaimParams{Now: time.Now(), LeaseFor: time.Hour, Limit: 10}); err != nil || len(got) != 0 {
		t.Errorf("claim on a second handle of the same process = %v, %v; want nothing: the first handle's claim is live", pushIDs(got), err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Both closed: another process can take the file.
	startHolder(t, path) // fails the test unless it opens and claims p1 again
}

func pushIDs(cs []*store.PushConfig) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.TaskID+"/"+c.ID)
	}
	return ids
}
