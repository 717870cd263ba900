package askpoint

import "github.com/askpoint/askpoint/internal/engine"

// The engine's observer (metrics, traces) is set by this module's own
// command through engine.WithObserver, so that neither Prometheus nor
// OpenTelemetry is part of the agent API.
func init() {
	engine.WithObserver = func(c any, o engine.Observer) any {
		cfg := c.(Config)
		cfg.observer = o
		return cfg
	}
}
