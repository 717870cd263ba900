package servertest_test

import (
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

func TestAuthenticateNamesThePrincipalOfAKnownTokenAndRefusesOthers(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{"alice-token-0123456789": "alice"}
	}})
	if p, err := env.Server.Authenticate("Bearer alice-token-0123456789"); err != nil || p != "alice" {
		t.Errorf("Authenticate(alice's token) = %q, %v; want alice, nil", p, err)
	}
	for _, h := range []string{"", "Basic abc", "Bearer ", "Bearer not-a-known-token-at-all"} {
		if _, err := env.Server.Authenticate(h); !errors.Is(err, a2a.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %v, want Unauthenticated", h, err)
		}
	}
	open := apitest.Start(t, apitest.Options{Quiet: true})
	if p, err := open.Server.Authenticate(""); err != nil || p != "" {
		t.Errorf("Authenticate without configured tokens = %q, %v; want anonymous", p, err)
	}
}

func TestAcquireStreamCountsAgainstThePrincipalsLimit(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.MaxStreamsPerPrincipal = 1 }})
	ctx := askpoint.WithPrincipal(t.Context(), "bob")
	release, err := env.Server.AcquireStream(ctx)
	if err != nil {
		t.Fatalf("first AcquireStream = %v", err)
	}
	if _, err := env.Server.AcquireStream(ctx); err == nil {
		t.Fatalf("second AcquireStream over a limit of 1 = nil, want a refusal")
	}
	if r, err := env.Server.AcquireStream(askpoint.WithPrincipal(t.Context(), "carol")); err != nil {
		t.Errorf("another principal's AcquireStream = %v, want a slot", err)
	} else {
		r()
	}
	release()
	r, err := env.Server.AcquireStream(ctx)
	if err != nil {
		t.Fatalf("AcquireStream after release = %v", err)
	}
	r()
}

func TestAddInterfaceAppearsOnEveryCardAfterTheHTTPOnes(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	env.Server.AddInterface(func(base, agent string) *a2a.AgentInterface {
		iface := a2a.NewAgentInterface("example.test:1", a2a.TransportProtocolGRPC)
		iface.Tenant = agent
		return iface
	})
	if mp, parts := env.Server.Limits(); mp <= 0 || parts <= 0 {
		t.Errorf("Limits() = %d, %d; want the defaults in force", mp, parts)
	}
	card, err := env.Server.Card("expense", "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	ifs := card.SupportedInterfaces
	// apitest's gRPC front added the first gRPC interface; this test's comes last.
	if n := len(ifs); n != 4 || ifs[0].ProtocolBinding != a2a.TransportProtocolJSONRPC || ifs[n-1].URL != "example.test:1" || ifs[n-1].Tenant != "expense" {
		for _, i := range ifs {
			t.Logf("interface %s %s tenant %q", i.ProtocolBinding, i.URL, i.Tenant)
		}
		t.Fatalf("want JSON-RPC, HTTP+JSON, apitest's gRPC, then the added one for tenant expense")
	}
}
