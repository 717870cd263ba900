package auth

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

func TestTokensNameTheCallerOrSayWhatToSend(t *testing.T) {
	if _, err := NewTokens(map[string]string{"short": "alice"}); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a 5-character token: %v, want refused asking for 16", err)
	}
	if _, err := NewTokens(map[string]string{"0123456789abcdef": ""}); err == nil {
		t.Error("a token of no principal was taken")
	}
	tok, err := NewTokens(map[string]string{"alice-token-0123456789": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ authorization, principal, says string }{
		{"Bearer alice-token-0123456789", "alice", ""},
		{"bearer  alice-token-0123456789 ", "alice", ""},
		{"", "", "requires a bearer token"},
		{"Basic YWxpY2U6eA==", "", `"Bearer <token>"`},
		{"Bearer someone-elses-token-0123", "", "not one this server knows"},
	} {
		p, err := tok.Authenticate(c.authorization)
		if c.says == "" {
			if err != nil || p != c.principal {
				t.Errorf("Authenticate(%q) = %q, %v; want %q", c.authorization, p, err, c.principal)
			}
			continue
		}
		if !errors.Is(err, a2a.ErrUnauthenticated) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Authenticate(%q) = %q, %v; want Unauthenticated saying %q", c.authorization, p, err, c.says)
		}
	}
	if p, err := (Tokens{}).Authenticate(""); err != nil || p != "" {
		t.Errorf("without tokens: %q, %v; want the anonymous caller", p, err)
	}
}

func TestAContextNamesItsCallerOnlyOnceNamed(t *testing.T) {
	ctx := context.Background()
	if Named(ctx) || Principal(ctx) != "" {
		t.Error("a bare context names a caller")
	}
	if anon := WithPrincipal(ctx, ""); !Named(anon) || Principal(anon) != "" {
		t.Error("a context named anonymous is not named, or names someone")
	}
	if Principal(WithPrincipal(ctx, "alice")) != "alice" {
		t.Error("alice's context does not name alice")
	}
}
