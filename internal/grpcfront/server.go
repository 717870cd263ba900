package grpcfront

import (
	"fmt"
	"log/slog"

	"github.com/askpoint/askpoint"
)

// ConfigFor is the Config that serves every agent of srv with srv's own
// edge rules: its tokens, its stream slots (shared with the HTTP
// bindings) and its limits. The first registered agent takes calls that
// name no tenant.
func ConfigFor(srv *askpoint.Server, log *slog.Logger) (Config, error) {
	maxBytes, maxParts := srv.Limits()
	cfg := Config{
		Authenticate:    srv.Authenticate,
		WithPrincipal:   askpoint.WithPrincipal,
		AcquireStream:   srv.AcquireStream,
		MaxRequestBytes: maxBytes,
		MaxParts:        maxParts,
		Logger:          log,
	}
	for _, name := range srv.Agents() {
		h, ok := srv.RequestHandler(name)
		if !ok {
			return Config{}, fmt.Errorf("grpcfront: agent %q has no request handler", name)
		}
		cfg.Agents = append(cfg.Agents, Agent{Name: name, Handler: h})
	}
	return cfg, nil
}

// ForServer builds the front for srv (ConfigFor) and declares its gRPC
// interface on every agent card srv serves.
func ForServer(srv *askpoint.Server, log *slog.Logger) (*Front, error) {
	cfg, err := ConfigFor(srv, log)
	if err != nil {
		return nil, err
	}
	f, err := New(cfg)
	if err != nil {
		return nil, err
	}
	srv.AddInterface(Interface)
	return f, nil
}
