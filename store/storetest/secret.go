package storetest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/askpoint/askpoint/store"
)

// secretCases cover Secret on one handle.
var secretCases = []testCase{
	{"Secret/CreatedOnceThenTheSame", testSecretOnce},
	{"Secret/EmptyNameIsAnError", testSecretEmptyName},
}

func testSecretOnce(t *testing.T, s store.Store) {
	first := mustSecret(t, s, "wake")
	if len(first) != store.SecretSize {
		t.Fatalf(`Secret("wake") is %d bytes, want %d`, len(first), store.SecretSize)
	}
	if bytes.Equal(first, make([]byte, store.SecretSize)) {
		t.Fatalf(`Secret("wake") is all zero bytes, want random ones`)
	}
	if again := mustSecret(t, s, "wake"); !bytes.Equal(again, first) {
		t.Errorf(`Secret("wake") the second time = %x, want the first one, %x`, again, first)
	}
	other := mustSecret(t, s, "other")
	if len(other) != store.SecretSize || bytes.Equal(other, first) {
		t.Errorf(`Secret("other") = %x, want %d bytes of its own, not Secret("wake")'s`, other, store.SecretSize)
	}
	if again := mustSecret(t, s, "wake"); !bytes.Equal(again, first) {
		t.Errorf(`Secret("wake") after Secret("other") = %x, want %x`, again, first)
	}
}

func testSecretEmptyName(t *testing.T, s store.Store) {
	if got, err := s.Secret(ctx(t), ""); err == nil {
		t.Errorf(`Secret("") = %x, nil, want an error`, got)
	}
}

// testNodesSecretRace has several handles create the same secret at once:
// every one gets the same bytes, and so does a handle opened afterwards.
func testNodesSecretRace(t *testing.T, open Open) {
	const n = 4
	handles := make([]store.Store, n)
	for i := range handles {
		handles[i] = open(t)
	}
	got := make([][]byte, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = s.Secret(ctx(t), "wake")
		}()
	}
	close(start)
	wg.Wait()
	for i := range handles {
		if errs[i] != nil {
			t.Fatalf(`Secret("wake") on handle %d = %v, want nil`, i, errs[i])
		}
		if len(got[i]) != store.SecretSize || !bytes.Equal(got[i], got[0]) {
			t.Errorf(`Secret("wake") on handle %d = %x, want handle 0's %x`, i, got[i], got[0])
		}
	}
	if later := mustSecret(t, open(t), "wake"); !bytes.Equal(later, got[0]) {
		t.Errorf(`Secret("wake") on a handle opened afterwards = %x, want %x`, later, got[0])
	}
}

func mustSecret(t *testing.T, s store.Store, name string) []byte {
	t.Helper()
	got, err := s.Secret(ctx(t), name)
	if err != nil {
		t.Fatalf("Secret(%q) = %v, want nil", name, err)
	}
	return got
}
