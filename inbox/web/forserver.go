package web

import (
	"cmp"
	"slices"

	"github.com/askpoint/askpoint"
)

// ServerPageOptions tune ServerPageFor.
type ServerPageOptions struct {
	// Base is the path the page is served under. Defaults to "/inbox".
	Base string
	// ExtraHosts are more host:port forms the page answers for (besides
	// the public URL's): localhost and 127.0.0.1 on the same port, say.
	ExtraHosts []string
	// Stats, when set, gives how questions fare, shown at BASE/stats
	// (telemetry.Metrics.Table).
	Stats func() (header []string, rows [][]string)
	// StatsPrincipals may see Stats: the figures are the whole server's.
	// On a server without tokens its one anonymous caller may.
	StatsPrincipals []string
}

// ServerPageFor is srv's own page of paused tasks, answered in the
// browser, as `askpoint serve` serves it at /inbox/: mount its Handler with
// srv.Handle("/inbox/", page.Handler()). publicURL (http://HOST:PORT) is
// where people reach the server, the one origin whose forms are taken. The
// logins are the bearer tokens of srv's callers (Config.Tokens), each
// seeing its own principal's tasks; the principals of orchestrators
// (Config.OnBehalfOfPrincipals) have none. Without tokens everyone is the
// anonymous caller, so serve it on loopback only. Its live pages take
// stream slots of their principal's (srv.AcquireStream), counted with the
// A2A streams against Config.MaxStreamsPerPrincipal.
func ServerPageFor(srv *askpoint.Server, publicURL string, opts ServerPageOptions) (*ServerPage, error) {
	cfg := srv.Config()
	tokens := map[string]string{}
	for tok, p := range cfg.Tokens {
		if !slices.Contains(cfg.OnBehalfOfPrincipals, p) {
			tokens[p] = tok
		}
	}
	return NewServerPage(ServerPageConfig{
		Base: cmp.Or(opts.Base, "/inbox"), PublicURL: publicURL, ExtraHosts: opts.ExtraHosts, Tokens: tokens,
		Agents: srv.Agents, Handler: srv.RequestHandler, WithPrincipal: askpoint.WithPrincipal,
		MaxAttempts: cfg.MaxAttempts, Stats: opts.Stats, StatsPrincipals: opts.StatsPrincipals,
		AcquireStream: srv.AcquireStream, Logger: cfg.Logger, Now: cfg.Now,
	})
}
