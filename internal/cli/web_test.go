package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The web inbox's flags are checked before anything is served: loopback
// only unless TLS, a people file, web flags only with --web.
func TestInboxWebRefusesWhatItCannotServeSafely(t *testing.T) {
	dir := t.TempDir()
	ib := filepath.Join(dir, "inbox.db")
	people := filepath.Join(dir, "people.json")
	if err := os.WriteFile(people, []byte(`{"frank": "frank-token-0123456789"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.json")
	if err := os.WriteFile(short, []byte(`{"frank": "short"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--web", "0.0.0.0:0", "--people", people}, "is not a loopback address"},
		{[]string{"--web", "127.0.0.1:0"}, "--web needs --people FILE"},
		{[]string{"--web", "127.0.0.1:0", "--people", short}, "the token has 5 characters; at least 16 are needed"},
		{[]string{"--people", people}, "--people only applies with --web"},
		{[]string{"--web", "127.0.0.1:0", "--people", people, "--smtp", "127.0.0.1:25"}, "--smtp needs --smtp-from"},
		{[]string{"--web", "127.0.0.1:0", "--people", people, "--tls-cert", "c.pem"}, "give both --tls-cert and --tls-key"},
		{[]string{"--web", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--people", people}, "give --listen or --web, not both"},
	} {
		_, stderr, code := run(t, append([]string{"inbox", "--inbox", ib}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("askpoint inbox %v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
