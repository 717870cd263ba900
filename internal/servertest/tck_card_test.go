package servertest_test

// The agent card as the conformance suite fetches it: at the host root,
// without any A2A-Version header, with every required field, and with
// caching headers (Cache-Control max-age, ETag, Last-Modified) that a
// conditional request honours.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/store/sqlite"
)

// startConformanceFirst serves the conformance agent as the first (and
// only) agent, as `askpoint serve --conformance` puts it first.
func startConformanceFirst(t *testing.T) *httptest.Server {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := askpoint.NewServer(askpoint.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(askpoint.AgentSpec{Name: conformance.Name, Agent: conformance.Agent(), Card: conformance.Card()}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		_ = st.Close()
	})
	return hs
}

func TestTCKCardAtTheHostRootNeedsNoVersionHeaderAndCarriesCachingHeaders(t *testing.T) {
	t.Parallel()
	// The conformance agent registered first, as `askpoint serve
	// --conformance` does, so its card is the host root's.
	srv := startConformanceFirst(t)
	r := tckDo(t, http.MethodGet, srv.URL+"/.well-known/agent-card.json", nil) // no A2A-Version
	if r.Status != http.StatusOK || r.JSON == nil {
		t.Fatalf("GET /.well-known/agent-card.json without A2A-Version: status %d %s", r.Status, r.Raw)
	}
	if r.JSON["name"] != conformance.Card().Name {
		t.Errorf("root card is %v, want the conformance agent's", r.JSON["name"])
	}
	for _, f := range []string{"name", "description", "version", "supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
		if _, ok := r.JSON[f]; !ok {
			t.Errorf("card has no %s", f)
		}
	}
	ifaces, _ := r.JSON["supportedInterfaces"].([]any)
	bindings := map[string]bool{}
	for _, i := range ifaces {
		m := i.(map[string]any)
		if m["protocolVersion"] != "1.0" || !strings.HasPrefix(m["url"].(string), srv.URL+"/conformance/") {
			t.Errorf("interface %v: want protocolVersion 1.0 under %s/conformance/", m, srv.URL)
		}
		bindings[m["protocolBinding"].(string)] = true
	}
	if !bindings["JSONRPC"] || !bindings["HTTP+JSON"] || len(bindings) != 2 {
		t.Errorf("card bindings %v, want JSONRPC and HTTP+JSON", bindings)
	}
	caps, _ := r.JSON["capabilities"].(map[string]any)
	if caps["streaming"] != true {
		t.Errorf("capabilities %v, want streaming", caps)
	}
	exts, _ := caps["extensions"].([]any)
	for _, e := range exts {
		if e.(map[string]any)["required"] == true {
			t.Errorf("card requires extension %v; the conformance card requires none", e)
		}
	}

	etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
		t.Errorf("Cache-Control %q, want a max-age", cc)
	}
	if etag == "" {
		t.Errorf("no ETag")
	}
	modified, err := http.ParseTime(lm)
	if err != nil || modified.After(time.Now().Add(time.Second)) {
		t.Errorf("Last-Modified %q: %v; want an HTTP date not in the future", lm, err)
	}
	if got := tckDo(t, http.MethodGet, srv.URL+"/.well-known/agent-card.json", nil, "If-None-Match", etag); got.Status != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", got.Status)
	}
	if got := tckDo(t, http.MethodGet, srv.URL+"/.well-known/agent-card.json", nil, "If-Modified-Since", lm); got.Status != http.StatusNotModified {
		t.Errorf("If-Modified-Since the Last-Modified date: status %d, want 304", got.Status)
	}
	earlier := modified.Add(-time.Hour).UTC().Format(http.TimeFormat)
	if got := tckDo(t, http.MethodGet, srv.URL+"/.well-known/agent-card.json", nil, "If-Modified-Since", earlier); got.Status != http.StatusOK {
		t.Errorf("If-Modified-Since an hour earlier: status %d, want 200", got.Status)
	}
}
