package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/auth"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/internal/engine"
)

// Package front is askpoint's HTTP front: what a request meets before the
// engine. It checks the protocol version and the content type, bounds
// bodies, parts and streams, authenticates bearer tokens into principals,
// serves agent cards, maps errors to each binding's shape, serves the wake
// endpoint, and mounts the a2a-go SDK's JSON-RPC and HTTP+JSON transports
// over each agent's engine handler.

// Handler is what the front needs of an agent's engine handler.
type Handler interface {
	a2asrv.RequestHandler
	// CheckSubscribe refuses a subscription before its stream opens.
	CheckSubscribe(ctx context.Context, req *a2a.SubscribeToTaskRequest) error
}

// Agent is one agent the front serves, under /Name.
type Agent struct {
	Name    string
	Card    a2a.AgentCard // the card as registered; the front fills in interfaces, capabilities, security
	Handler Handler
}

// WakeFunc resumes a waiting task with an event (engine.Engine.Wake).
type WakeFunc func(ctx context.Context, agent, taskID, token string, event json.RawMessage) error

// Front is the HTTP front of a set of agents.
type Front struct {
	mu         sync.Mutex
	interfaces []func(baseURL, agent string) *a2a.AgentInterface // AddInterface
	// cfg is the server's configuration (defaults applied): the front
	// reads the edge's fields (tokens, limits, hosts, origins, timeouts).
	cfg  api.Config
	wake WakeFunc
	// allowedHosts and allowedOrigins are the edge's configuration,
	// lower-cased.
	allowedHosts   []string
	allowedOrigins []string
	streamCtx      streamContexts
	tokens         auth.Tokens
	streams        streamSlots
	agents         []Agent
	byName         map[string]*Agent
}

// New returns the front for agents under cfg, whose defaults are applied
// (api.Defaults); wake serves the wake endpoint.
func New(cfg api.Config, wake WakeFunc, agents []Agent) (*Front, error) {
	tokens, err := auth.NewTokens(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	f := &Front{
		cfg: cfg, wake: wake, tokens: tokens, agents: agents, byName: map[string]*Agent{},
		streams: streamSlots{limit: cfg.MaxStreamsPerPrincipal, open: map[string]int{}},
	}
	for i := range f.agents {
		f.byName[f.agents[i].Name] = &f.agents[i]
	}
	if cfg.PublicURL != "" {
		u, err := parsePublicURL(cfg.PublicURL)
		if err != nil {
			return nil, err
		}
		f.cfg.PublicURL = u.Scheme + "://" + u.Host
		f.allowedHosts = append(f.allowedHosts, strings.ToLower(u.Hostname()))
	}
	for _, h := range cfg.AllowedHosts {
		f.allowedHosts = append(f.allowedHosts, strings.ToLower(strings.Trim(h, "[]")))
	}
	for _, o := range cfg.AllowedOrigins {
		f.allowedOrigins = append(f.allowedOrigins, strings.TrimSuffix(o, "/"))
	}
	return f, nil
}

// CheckConfig says what in cfg the front cannot serve: a token shorter
// than 16 characters, a token of no principal, a public URL that is not
// http(s)://HOST[:PORT].
func CheckConfig(cfg api.Config) error {
	if _, err := auth.NewTokens(cfg.Tokens); err != nil {
		return err
	}
	if cfg.PublicURL != "" {
		if _, err := parsePublicURL(cfg.PublicURL); err != nil {
			return err
		}
	}
	return nil
}

func parsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("askpoint: public URL %q: want http://HOST[:PORT] or https://HOST[:PORT]", raw)
	}
	return u, nil
}

func (f *Front) names() []string {
	out := make([]string, len(f.agents))
	for i, a := range f.agents {
		out[i] = a.Name
	}
	return out
}

func (f *Front) agent(name string) *Agent { return f.byName[name] }

func (f *Front) now() time.Time { return f.cfg.Now().UTC() }

func errInvalidParams(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

// protocolError describes how one sentinel travels on each binding.
type protocolError struct {
	err        error
	code       int // JSON-RPC
	httpStatus int // HTTP+JSON
	status     string
}

var protocolErrors = []protocolError{
	{a2a.ErrParseError, -32700, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrInvalidRequest, -32600, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrMethodNotFound, -32601, http.StatusNotImplemented, "UNIMPLEMENTED"},
	{a2a.ErrInvalidParams, -32602, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrTaskNotFound, -32001, http.StatusNotFound, "NOT_FOUND"},
	{a2a.ErrTaskNotCancelable, -32002, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrPushNotificationNotSupported, -32003, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrUnsupportedOperation, -32004, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrUnsupportedContentType, -32005, http.StatusUnsupportedMediaType, "INVALID_ARGUMENT"},
	{a2a.ErrVersionNotSupported, -32009, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrUnauthenticated, -31401, http.StatusUnauthorized, "UNAUTHENTICATED"},
	{a2a.ErrUnauthorized, -31403, http.StatusForbidden, "PERMISSION_DENIED"},
}

func lookupProtocolError(err error) protocolError {
	var le *limitError
	if errors.As(err, &le) {
		return protocolError{a2a.ErrInvalidRequest, -32600, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"}
	}
	var tl *tooLargeError
	if errors.As(err, &tl) {
		return protocolError{a2a.ErrInvalidRequest, -32600, http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT"}
	}
	for _, pe := range protocolErrors {
		if errors.Is(err, pe.err) {
			return pe
		}
	}
	return protocolError{a2a.ErrInternalError, -32603, http.StatusInternalServerError, "INTERNAL"}
}

// serveWake is POST /NAME/wake/{task}: a push notification (or any JSON
// event) for a waiting task, authenticated by its wake token.
func (f *Front) serveWake(w http.ResponseWriter, r *http.Request, agent string) {
	id := r.PathValue("task")
	token := r.Header.Get("A2A-Notification-Token")
	body, err := readBody(w, r, f.cfg.MaxRequestBytes)
	if err != nil {
		status := http.StatusBadRequest
		if errors.As(err, new(*tooLargeError)) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), status)
		return
	}
	if !json.Valid(body) {
		http.Error(w, "the event must be JSON (a push notification's StreamResponse)", http.StatusBadRequest)
		return
	}
	err = f.wake(r.Context(), agent, id, token, body)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, engine.ErrNotWaiting):
		w.WriteHeader(http.StatusAccepted) // late: nothing to do
	case errors.Is(err, engine.ErrBusy):
		w.Header().Set("Retry-After", "1")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, a2a.ErrTaskNotFound):
		http.Error(w, "no such waiting task, or a wrong token", http.StatusNotFound)
	default:
		f.cfg.Logger.Error("wake a task", slog.String("task", id), slog.Any("err", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// AddInterface adds an interface to every agent card, after JSON-RPC and
// HTTP+JSON: fn gets the base URL the card is served from and the agent's
// name and returns an interface, or nil for none (the gRPC binding).
func (f *Front) AddInterface(fn func(baseURL, agent string) *a2a.AgentInterface) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.interfaces = append(f.interfaces, fn)
}
