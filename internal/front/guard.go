package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/text"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// The edge: what every request meets before the bindings. A browser page
// must not be able to drive the server (Host, Origin and Sec-Fetch-Site
// checks; a JSON content type on every POST), a slow client must not hold
// a connection (a body read deadline), and hostile input is refused with
// an error that names the field (IDs, roles, UTF-8, JSON-RPC envelopes).
// See docs/decisions/0060-the-edge.md.

// guard wraps the bindings with the browser and slow-client checks.
func (f *Front) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.hostAllowed(r.Host) {
			f.refuse(w, r, http.StatusMisdirectedRequest, a2a.ErrInvalidRequest,
				fmt.Sprintf("this server does not answer for host %q: use the address it listens on or its public URL (askpoint serve --public-url, --allow-host)", r.Host))
			return
		}
		card := r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, a2asrv.WellKnownAgentCardPath)
		if !card { // cards are public documents, readable from any page
			origin, ok := f.originAllowed(r)
			if !ok {
				f.refuse(w, r, http.StatusForbidden, a2a.ErrUnauthorized,
					"cross-origin requests from browsers are refused: the server's operator may allow an origin (askpoint serve --allow-origin)")
				return
			}
			if origin != "" {
				w.Header().Set("Access-Control-Allow-Origin", origin)
				w.Header().Add("Vary", "Origin")
				if r.Method == http.MethodOptions {
					w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
					w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, A2A-Version, A2A-Extensions, Accept")
					w.Header().Set("Access-Control-Max-Age", "600")
					w.WriteHeader(http.StatusNoContent)
					return
				}
			}
		}
		defer bodyDeadline(w, r, f.cfg.BodyTimeout)()
		if strings.Contains(r.URL.Path, PathREST+"/") {
			w = &restNotFoundWriter{ResponseWriter: w, path: r.URL.Path, method: r.Method}
		}
		next.ServeHTTP(w, r)
	})
}

// BodyDeadline wraps h so that a request's body must arrive within d of
// its headers (api.DefaultBodyTimeout when d is 0); streams are not bounded,
// since the deadline ends when the body has been read.
func BodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer bodyDeadline(w, r, d)()
		h.ServeHTTP(w, r)
	})
}

// bodyDeadline bounds the time r's body takes to arrive; the function it
// returns gives r its own body back, for when the handler is done: the
// server reads what a handler left of its own body type to close the
// connection gently (a half-close and a pause before the close, so that
// the client reads the reply), and a body it does not know it closes
// at once, which resets the connection under a client still sending.
func bodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) func() {
	if d <= 0 {
		d = api.DefaultBodyTimeout
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}
	}
	if _, already := r.Body.(*deadlineBody); already {
		return func() {}
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return func() {} // not a server connection (a test recorder): nothing to bound
	}
	own := r.Body
	r.Body = &deadlineBody{ReadCloser: own, rc: rc}
	return func() { r.Body = own }
}

// deadlineBody lifts the read deadline once the body has been read, so
// that a stream's connection is not cut while it is open.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// hostAllowed says whether a request's Host names this server: an IP
// address (a browser that reaches it by address is not being rebound),
// localhost, the public URL's host or a host configured as allowed. Any
// other name may be a DNS rebinding of this address to a web page's.
func (f *Front) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil || host == "localhost" {
		return true
	}
	for _, a := range f.allowedHosts {
		if a == host || a == strings.ToLower(hostport) {
			return true
		}
	}
	return false
}

// originAllowed refuses a browser request from another origin (its Origin
// header, or Sec-Fetch-Site when it sends none) unless that origin is
// configured; it returns the origin to name in CORS headers when one was
// allowed by configuration.
func (f *Front) originAllowed(r *http.Request) (string, bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		switch r.Header.Get("Sec-Fetch-Site") {
		case "cross-site", "same-site":
			return "", false
		}
		return "", true
	}
	for _, o := range f.allowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return origin, true
		}
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) && r.Header.Get("Sec-Fetch-Site") != "cross-site" {
		return "", true // the server's own pages
	}
	return "", false
}

// refuse answers a request the edge does not let through, in the shape of
// the binding it was sent to.
func (f *Front) refuse(w http.ResponseWriter, r *http.Request, status int, kind error, msg string) {
	err := a2a.NewError(kind, msg)
	switch {
	case strings.Contains(r.URL.Path, PathJSONRPC):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(jsonrpcError(nil, err))
	case strings.Contains(r.URL.Path, PathREST+"/"):
		writeRESTStatus(w, status, grpcStatusName(status), err.Error(), lookupProtocolError(err))
	default:
		http.Error(w, msg, status)
	}
}

func grpcStatusName(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	default:
		return "INVALID_ARGUMENT"
	}
}

func writeRESTStatus(w http.ResponseWriter, status int, grpcStatus, msg string, pe protocolError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("X-Content-Type-Options")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{
			"code":    status,
			"status":  grpcStatus,
			"message": msg,
			"details": []any{errorInfo(pe)},
		},
	})
}

// restNotFoundWriter turns the plain-text 404 and 405 of the SDK's HTTP+JSON
// mux into the binding's JSON error (google.rpc.Status).
type restNotFoundWriter struct {
	http.ResponseWriter
	path, method string
	swallow      bool
}

func (w *restNotFoundWriter) WriteHeader(code int) {
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) &&
		strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.swallow = true
		msg := fmt.Sprintf("the HTTP+JSON binding has no method at %s", w.path)
		if code == http.StatusMethodNotAllowed {
			msg = fmt.Sprintf("%s is not a method of %s in the HTTP+JSON binding (allowed: %s)", w.method, w.path, w.Header().Get("Allow"))
		}
		writeRESTStatus(w.ResponseWriter, code, grpcStatusName(code), msg,
			protocolError{a2a.ErrMethodNotFound, -32601, code, grpcStatusName(code)})
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *restNotFoundWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *restNotFoundWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *restNotFoundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkEnvelope reads a JSON-RPC request the way JSON-RPC 2.0 says: valid
// JSON that is not a request object is an invalid request (-32600), not a
// parse error. notification is true for a request without an id. env
// holds the members read: all of them when err is nil, the ID (when there
// was one to read) when it is not.
func checkEnvelope(body []byte) (env jsonrpcEnvelope, notification bool, err error) {
	if !utf8.Valid(body) {
		return jsonrpcEnvelope{}, false, errNotUTF8(body)
	}
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		var v any
		jerr := json.Unmarshal(trimmed, &v)
		return jsonrpcEnvelope{}, false, a2a.NewError(a2a.ErrParseError, fmt.Sprintf("request body is not valid JSON: %v", jerr))
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if bytes.Equal(bytes.Join(bytes.Fields(trimmed), nil), []byte("[]")) {
			return jsonrpcEnvelope{}, false, a2a.NewError(a2a.ErrInvalidRequest, "an empty batch is not a request: send one JSON-RPC request object")
		}
		return jsonrpcEnvelope{}, false, a2a.NewError(a2a.ErrInvalidRequest, "batch requests are not supported: send one JSON-RPC request object per HTTP request")
	}
	if trimmed[0] != '{' {
		return jsonrpcEnvelope{}, false, a2a.NewError(a2a.ErrInvalidRequest, "a JSON-RPC request must be a JSON object with jsonrpc, method, params and id")
	}
	// The members the envelope needs, as slices of the body, named in any
	// letter case as a decoder reads them (a member named twice, in any
	// letter cases, is refused below).
	var rawID, rawVersion, rawMethod, params []byte
	var hasID, hasVersion, hasMethod, has bool
	_ = eachMember(trimmed, func(k string, val []byte) error {
		switch {
		case strings.EqualFold(k, "id"):
			rawID, hasID = val, true
		case strings.EqualFold(k, "jsonrpc"):
			rawVersion, hasVersion = val, true
		case strings.EqualFold(k, "method"):
			rawMethod, hasMethod = val, true
		case strings.EqualFold(k, "params"):
			params, has = val, true
		}
		return nil
	})
	var id any
	if hasID {
		if kind(rawID) == '"' {
			id = unquote(rawID)
		} else if err := json.Unmarshal(rawID, &id); err != nil {
			id = nil
		}
		switch id.(type) {
		case string, float64, nil:
		default:
			return jsonrpcEnvelope{}, false, a2a.NewError(a2a.ErrInvalidRequest, "id must be a string, a number or null")
		}
	}
	if err := checkMembers(trimmed, "", a2a.ErrInvalidParams, a2a.ErrInvalidRequest); err != nil {
		// A repeated envelope member leaves the request without one
		// meaning: its id too.
		if errors.Is(err, a2a.ErrInvalidRequest) {
			id = nil
		}
		return jsonrpcEnvelope{ID: id}, false, err
	}
	var version, method string
	if !hasVersion || !stringValue(rawVersion, &version) || version != "2.0" {
		return jsonrpcEnvelope{ID: id}, false, a2a.NewError(a2a.ErrInvalidRequest, `jsonrpc must be the string "2.0"`)
	}
	if !hasMethod || !stringValue(rawMethod, &method) || method == "" {
		return jsonrpcEnvelope{ID: id}, false, a2a.NewError(a2a.ErrInvalidRequest, "method must be a string naming an A2A method (SendMessage, GetTask, ...)")
	}
	if has && string(params) != "null" {
		if t := bytes.TrimSpace(params); len(t) == 0 || t[0] != '{' {
			return jsonrpcEnvelope{ID: id}, !hasID, errInvalidParams("params must be an object")
		}
	} else if needsParams[method] {
		return jsonrpcEnvelope{ID: id}, !hasID, errInvalidParams("params is required: %s takes an object of parameters", method)
	}
	return jsonrpcEnvelope{JSONRPC: version, Method: method, Params: params, ID: id}, !hasID, nil
}

// stringValue sets *s to raw's string as json.Unmarshal into a string
// would, for raw a member's value (a slice of valid JSON, no space around
// it); false where the decoder would fail (a value that is not a string).
// null leaves *s empty, as the decoder does.
func stringValue(raw []byte, s *string) bool {
	switch kind(raw) {
	case '"':
		*s = unquote(raw)
		return true
	case 'n':
		return true
	}
	return false
}

// needsParams are the methods whose params cannot be left out.
var needsParams = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "GetTask": true, "CancelTask": true,
	"SubscribeToTask": true, "CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
	"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true,
}

func errNotUTF8(body []byte) error {
	i := 0
	for i < len(body) {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return a2a.NewError(a2a.ErrParseError, fmt.Sprintf("request body is not valid UTF-8 (byte %d): JSON must be UTF-8", i))
}

// idFields are the members that hold identifiers, bounded in length and
// free of control characters.
var idFields = []string{"messageId", "contextId", "taskId", "id", "referenceTaskIds"}

// isIDField says whether member name k is one of idFields, in any letter
// case, as a decoder reads it.
func isIDField(k string) bool {
	for _, f := range idFields {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return false
}

// checkFields walks a request's parameters (as JSON) and refuses an
// identifier that is too long or holds a control character, and a message
// role the protocol does not define, naming the field. The caller's own
// JSON (metadata, data) and the parts' contents are not walked, and what
// is walked is read in place (rawjson.go): nothing is copied. raw is
// valid JSON: a body checkEnvelope or checkRESTBody took (UTF-8, JSON),
// or its params, or camelParams' encoding of them.
func checkFields(raw json.RawMessage, where string, maxID int) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	// Walked first without naming the fields, which costs a string for
	// each; only a refused request is walked again to name the field.
	if walkFields(raw, "", "", maxID, false) == nil {
		return nil
	}
	return walkFields(raw, where, "", maxID, true)
}

// walkFields checks raw, valid JSON found under key; named says whether
// where names it (else where is "" and an error names no field).
func walkFields(raw []byte, where, key string, maxID int, named bool) error {
	switch kind(raw) {
	case '{':
		return eachMember(raw, func(k string, val []byte) error {
			// Member names in any letter case, as a decoder reads them.
			switch {
			case strings.EqualFold(k, "metadata"), strings.EqualFold(k, "data"), strings.EqualFold(k, "parts"), strings.EqualFold(k, "extensions"):
				return nil
			case strings.EqualFold(k, "role"):
				if kind(val) != '"' {
					return nil
				}
				if s := unquote(val); s != string(a2a.MessageRoleUser) && s != string(a2a.MessageRoleAgent) {
					return errInvalidParams("%s.role %q is not a message role: use %s (or %s)", where, s, a2a.MessageRoleUser, a2a.MessageRoleAgent)
				}
				return nil
			}
			if named {
				return walkFields(val, where+"."+k, k, maxID, true)
			}
			return walkFields(val, "", k, maxID, false)
		})
	case '[':
		return eachElement(raw, func(i int, val []byte) error {
			if named {
				return walkFields(val, fmt.Sprintf("%s[%d]", where, i), key, maxID, true)
			}
			return walkFields(val, "", key, maxID, false)
		})
	case '"':
		if !isIDField(key) {
			return nil
		}
		return text.CheckID(where, unquote(raw), maxID)
	}
	return nil
}

// checkRESTPath refuses a path segment (a task or push configuration ID)
// that is not a valid identifier, and a contextId query parameter likewise.
func checkRESTPath(r *http.Request, maxID int) error {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	for i, s := range segs {
		if i > 0 && segs[i-1] == "tasks" {
			s, _, _ = strings.Cut(s, ":")
			if err := text.CheckID("the task ID in the path", s, maxID); err != nil {
				return err
			}
		}
		if i > 0 && segs[i-1] == "pushNotificationConfigs" {
			if err := text.CheckID("the push configuration ID in the path", s, maxID); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"contextId", "pageToken"} {
		for _, v := range r.URL.Query()[k] {
			if err := text.CheckID(k, v, max(maxID, 1024)); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamContexts holds the cancel functions of the open streams, so that a
// server that stops ends them (http.Server.Shutdown waits for handlers,
// and a stream's handler returns only when its context ends).
type streamContexts struct {
	mu     sync.Mutex
	ended  bool
	next   int
	cancel map[int]context.CancelFunc
}

// open derives a stream's context from ctx; done must be called when the
// stream ends.
func (s *streamContexts) open(ctx context.Context) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, nil, &limitError{msg: "the server is stopping: open the stream again on another node or after the restart"}
	}
	if s.cancel == nil {
		s.cancel = map[int]context.CancelFunc{}
	}
	ctx, cancel := context.WithCancel(ctx)
	id := s.next
	s.next++
	s.cancel[id] = cancel
	return ctx, func() {
		cancel()
		s.mu.Lock()
		delete(s.cancel, id)
		s.mu.Unlock()
	}, nil
}

// EndStreams ends every open stream and refuses new ones: for a server
// that stops (register it with http.Server.RegisterOnShutdown). Work a
// stream's caller sent is in the store already; the caller reads the task
// again with GetTask or a new subscription.
func (f *Front) EndStreams() {
	s := &f.streamCtx
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	for id, cancel := range s.cancel {
		cancel()
		delete(s.cancel, id)
	}
}
