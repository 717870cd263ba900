package front

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/askpoint/askpoint/internal/auth"
	"github.com/askpoint/askpoint/question"
)

// Paths under an agent's prefix /NAME.
const (
	PathJSONRPC = "/jsonrpc"
	PathREST    = "/rest"
)

// Handler returns the HTTP handler that serves every registered agent:
//
//	/NAME/.well-known/agent-card.json   the agent card
//	/NAME/jsonrpc                       JSON-RPC 2.0 binding
//	/NAME/rest/...                      HTTP+JSON binding
//	POST /NAME/wake/TASK_ID             an event for a waiting task (see [Server.Wake]):
//	                                    the wake token in A2A-Notification-Token, a JSON
//	                                    body (a push notification); 204 resumed or dropped,
//	                                    202 late (the task ended), 503 busy (a step runs:
//	                                    send again), 404 no such task or a wrong token
//	/.well-known/agent-card.json        the first registered agent's card
//
// The A2A bindings are the a2a-go SDK's transports over this server's
// request handler, except the JSON-RPC and HTTP+JSON replies of
// SendMessage, GetTask and CancelTask, which the front writes itself in
// the SDK transport's bytes (reply.go, restreply.go). In front of them the server refuses, before anything is
// stored: bodies over Config.MaxRequestBytes or not declared as JSON,
// requests without A2A-Version 1.0, malformed messages, and subscriptions
// to finished tasks. Proto field names (history_length) are read as their
// JSON names (historyLength), as ProtoJSON readers do.
func (f *Front) Handler() http.Handler {
	mux := http.NewServeMux()
	cardModified := f.now().Truncate(time.Second) // cards change only when the server is built anew
	names := f.names()
	for i, name := range names {
		e := f.agent(name)
		prefix := "/" + name
		card := f.cardHandler(e, cardModified)
		mux.Handle("GET "+prefix+a2asrv.WellKnownAgentCardPath, card)
		if i == 0 {
			mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, card)
		}
		jsonrpc := f.jsonrpcFront(e.Handler, a2asrv.NewJSONRPCHandler(e.Handler))
		// Events for waiting tasks (a sub-agent's push notifications):
		// authenticated by each task's wake token, not by caller tokens.
		mux.HandleFunc("POST "+prefix+"/wake/{task}", func(w http.ResponseWriter, r *http.Request) { f.serveWake(w, r, name) })
		mux.Handle(prefix+PathJSONRPC, jsonrpc)
		// Clients that join a base URL and "/" (Python's httpx, the
		// conformance suite's client) post to the endpoint with a
		// trailing slash.
		mux.Handle(prefix+PathJSONRPC+"/{$}", jsonrpc)
		mux.Handle(prefix+PathREST+"/", http.StripPrefix(prefix+PathREST, f.restFront(e.Handler, a2asrv.NewRESTHandler(e.Handler))))
	}
	return f.guard(mux)
}

// Card returns the agent card of the named agent as served from baseURL
// (scheme and host, e.g. "http://127.0.0.1:8420").
func (f *Front) Card(name, baseURL string) (*a2a.AgentCard, error) {
	e := f.agent(name)
	if e == nil {
		return nil, fmt.Errorf("askpoint: no agent named %q", name)
	}
	return f.card(e, baseURL), nil
}

func (f *Front) card(e *Agent, baseURL string) *a2a.AgentCard {
	c := e.Card
	base := strings.TrimSuffix(baseURL, "/") + "/" + e.Name
	c.SupportedInterfaces = []*a2a.AgentInterface{
		a2a.NewAgentInterface(base+PathJSONRPC, a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface(base+PathREST, a2a.TransportProtocolHTTPJSON),
	}
	c.SupportedInterfaces = append(c.SupportedInterfaces, f.extraInterfaces(baseURL, e.Name)...)
	if c.Version == "" {
		c.Version = "1.0.0"
	}
	if len(c.DefaultInputModes) == 0 {
		c.DefaultInputModes = []string{"text/plain", "application/json"}
	}
	if len(c.DefaultOutputModes) == 0 {
		c.DefaultOutputModes = []string{"text/plain", "application/json"}
	}
	if c.Skills == nil {
		c.Skills = []a2a.AgentSkill{}
	}
	if f.tokens.Required() {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{BearerScheme: a2a.HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "An API key issued by the server's operator, sent as Authorization: Bearer <token>.",
		}}
		c.SecurityRequirements = a2a.SecurityRequirementsOptions{{BearerScheme: {}}}
	}
	c.Capabilities.Streaming = true
	c.Capabilities.PushNotifications = true
	c.Capabilities.Extensions = append(append([]a2a.AgentExtension(nil), c.Capabilities.Extensions...), a2a.AgentExtension{
		URI:         question.ExtensionURI,
		Description: "Questions carry a data part with questionId, expires, answerSchema and options; answers are validated and re-asked with errors.",
		Required:    false,
		Params: map[string]any{
			"maxAttempts":   f.cfg.MaxAttempts,
			"defaultExpiry": f.cfg.QuestionExpiry.String(),
		},
	})
	return &c
}

func (f *Front) cardHandler(e *Agent, modified time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base, cache := f.cfg.PublicURL, "public, max-age=300"
		if base == "" {
			// No configured URL: the host the request named, which the
			// guard checked; a shared cache must not keep it for others.
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			base, cache = scheme+"://"+r.Host, "private, max-age=300"
			w.Header().Add("Vary", "Host")
		}
		body, err := json.Marshal(f.card(e, base))
		if err != nil {
			http.Error(w, "agent card cannot be encoded", http.StatusInternalServerError)
			return
		}
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", cache)
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if inm := r.Header.Get("If-None-Match"); inm == etag || (inm == "" && notModifiedSince(r, modified)) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(body)
	})
}

// notModifiedSince says whether r's If-Modified-Since is at or after
// modified.
func notModifiedSince(r *http.Request, modified time.Time) bool {
	since, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	return err == nil && !modified.Truncate(time.Second).After(since)
}

// readBody reads at most limit bytes of the request body; a longer body is
// refused without being kept (see drainRefused).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		drainRefused(w, r)
		return nil, errTooLarge(r.ContentLength, limit)
	}
	var body []byte
	var err error
	if n := r.ContentLength; n >= 0 {
		// The length is declared (and no more than the limit): read it
		// into a buffer of that size instead of one grown by doubling
		// (the server's body reader stops at the declared length). Up to
		// 64 KB ahead of what arrived: a declared length costs nothing
		// until the bytes come.
		body = make([]byte, 0, min(n+1, 64<<10)) // +1: room to see the end
		body, err = readAllInto(body, io.LimitReader(r.Body, limit+1))
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	if err != nil {
		return nil, a2a.NewError(a2a.ErrInvalidRequest, "reading the request body failed: "+err.Error())
	}
	if int64(len(body)) > limit {
		drainRefused(w, r)
		return nil, errTooLarge(-1, limit)
	}
	return body, nil
}

// maxDrain is how much of a refused body the server reads and drops.
const maxDrain = 16 << 20

// drainRefused reads and drops what is left of a body that is refused for
// its size, up to maxDrain bytes (within the body deadline), so that the
// refusal reaches a client that sends its whole body before it reads the
// reply: a server that closes a connection with unread bytes resets it,
// and such a client (Python's urllib, for one) sees only the reset. A
// longer body is not read on; the connection closes after the reply.
// Reading the bytes costs the server no more than sending them cost the
// client.
func drainRefused(w http.ResponseWriter, r *http.Request) {
	if n, _ := io.CopyN(io.Discard, r.Body, maxDrain); n == maxDrain {
		w.Header().Set("Connection", "close")
	}
}

// readAllInto is io.ReadAll appending to b.
func readAllInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as append does
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func errTooLarge(n, limit int64) error {
	if n < 0 {
		return &tooLargeError{msg: fmt.Sprintf("request body is larger than the server's limit of %d bytes", limit)}
	}
	return &tooLargeError{msg: fmt.Sprintf("request body is %d bytes; the server's limit is %d bytes", n, limit)}
}

// tooLargeError is a request body over the server's limit: invalid request
// on JSON-RPC, 413 on HTTP+JSON.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string { return e.msg }
func (e *tooLargeError) Unwrap() error { return a2a.ErrInvalidRequest }

// checkVersion requires A2A-Version 1.0 (or 1.0.x).
func checkVersion(r *http.Request) error {
	v := strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))
	if v == "" {
		v = r.URL.Query().Get(a2a.SvcParamVersion)
	}
	switch {
	case v == "":
		return a2a.NewError(a2a.ErrVersionNotSupported, "the A2A-Version header is missing: send the header A2A-Version: 1.0")
	case v == "1.0" || strings.HasPrefix(v, "1.0."):
		return nil
	default:
		return a2a.NewError(a2a.ErrVersionNotSupported, fmt.Sprintf("A2A-Version %q is not supported: send the header A2A-Version: 1.0", v))
	}
}

// checkContentType refuses a request body that is declared as something
// other than JSON, before it is read, and one that declares no type
// (what a browser's no-cors fetch sends) unless allowMissing.
func checkContentType(r *http.Request, allowMissing bool) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if allowMissing {
			return nil
		}
		return a2a.NewError(a2a.ErrUnsupportedContentType,
			"the request declares no Content-Type: send it as Content-Type: application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil
	}
	return a2a.NewError(a2a.ErrUnsupportedContentType,
		fmt.Sprintf("Content-Type %q is not supported: send the request as Content-Type: application/json", ct))
}

// camelParams rewrites the proto field names (snake_case) in a ProtoJSON
// request to their JSON names (camelCase), since ProtoJSON readers accept
// both and the SDK's decoder only the latter. The contents of metadata and
// data are the caller's own JSON and are left alone. changed is false, and
// raw returned as it is, when there was nothing to rewrite. A field given
// in both spellings is refused.
func camelParams(raw json.RawMessage, where string) (json.RawMessage, bool, error) {
	if !maySnakeKey(raw) {
		return raw, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw, false, nil // the decoder behind will say what is wrong
	}
	changed, err := camelKeys(v, where)
	if err != nil || !changed {
		return raw, false, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw, false, errInvalidParams("%s cannot be re-encoded: %v", where, err)
	}
	return out, true, nil
}

// maySnakeKey is a quick look for a key with an underscore (`_length":`),
// so that requests without one (every request from a client that writes
// JSON names) are passed on without being decoded here. It may say yes for
// a string value that looks like such a key; the walk then changes nothing.
func maySnakeKey(raw []byte) bool {
	for i := bytes.IndexByte(raw, '_'); i >= 0; {
		j := i + 1
		for j < len(raw) && (raw[j] == '_' || raw[j] >= 'a' && raw[j] <= 'z' || raw[j] >= '0' && raw[j] <= '9') {
			j++
		}
		if j < len(raw) && raw[j] == '"' {
			k := j + 1
			for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
				k++
			}
			if k < len(raw) && raw[k] == ':' {
				return true
			}
		}
		next := bytes.IndexByte(raw[j:], '_')
		if next < 0 {
			return false
		}
		i = j + next
	}
	return false
}

func camelKeys(v any, where string) (bool, error) {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, val := range v {
			name := k
			if c := snakeToCamel(k); c != k {
				if _, both := v[c]; both {
					return false, errInvalidParams("%s has both %s and %s: send one (%s)", where, k, c, c)
				}
				delete(v, k)
				v[c] = val
				name, changed = c, true
			}
			if name == "metadata" || name == "data" {
				continue // the caller's own JSON
			}
			ch, err := camelKeys(val, where+"."+name)
			if err != nil {
				return false, err
			}
			changed = changed || ch
		}
	case []any:
		for i, val := range v {
			ch, err := camelKeys(val, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return false, err
			}
			changed = changed || ch
		}
	}
	return changed, nil
}

// snakeToCamel turns a proto field name (history_length) into its JSON name
// (historyLength); any other key comes back as it is.
func snakeToCamel(k string) string {
	if !strings.Contains(k, "_") {
		return k
	}
	words := strings.Split(k, "_")
	for _, w := range words {
		if w == "" || strings.ToLower(w) != w {
			return k // not a proto field name
		}
	}
	var b strings.Builder
	b.WriteString(words[0])
	for _, w := range words[1:] {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// replaceParams puts params into a JSON-RPC request body in place of its
// own, keeping every other member (the id, byte for byte).
func replaceParams(body []byte, params json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	m["params"] = params
	return json.Marshal(m)
}

// camelQuery renames snake_case query parameters (history_length) to the
// names the HTTP+JSON binding reads (historyLength).
func camelQuery(r *http.Request) {
	if !strings.Contains(r.URL.RawQuery, "_") {
		return
	}
	q := r.URL.Query()
	changed := false
	for k, vs := range q {
		if c := snakeToCamel(k); c != k {
			if _, both := q[c]; !both {
				q[c] = vs
			}
			delete(q, k)
			changed = true
		}
	}
	if changed {
		r.URL.RawQuery = q.Encode()
	}
}

// checkParts names the first part of a raw message with no content or more
// than one kind of content. The SDK's decoder reports those as a parse
// error; the protocol wants invalid params naming the field. A message of
// the usual shape is read in place; anything else is decoded to say what is
// wrong with it. msg is valid JSON (a member of a body checkEnvelope or
// checkRESTBody took).
func checkParts(field string, msg json.RawMessage, maxParts int) error {
	if len(msg) == 0 || string(msg) == "null" {
		return errInvalidParams("%s is required", field)
	}
	if ok, err := checkPartsInPlace(field, msg, maxParts); ok {
		return err
	}
	var m struct {
		MessageID *string           `json:"messageId"`
		Parts     []json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return decodeError(err, field)
	}
	if m.MessageID == nil || *m.MessageID == "" {
		return errInvalidParams("%s.messageId is required", field)
	}
	if len(m.Parts) == 0 {
		return errInvalidParams("%s.parts must hold at least one part", field)
	}
	if len(m.Parts) > maxParts {
		return errInvalidParams("%s.parts holds %d parts; the server takes at most %d", field, len(m.Parts), maxParts)
	}
	for i, raw := range m.Parts {
		if err := checkPart(field, i, raw); err != nil {
			return err
		}
	}
	return nil
}

// checkPartsInPlace is checkParts for valid JSON whose message is an object
// with a string messageId (or none) and an array of parts (or none): ok is
// false for anything else.
func checkPartsInPlace(field string, msg []byte, maxParts int) (bool, error) {
	if kind(msg) != '{' {
		return false, nil
	}
	var id, parts []byte
	_ = eachMember(msg, func(k string, val []byte) error {
		switch k {
		case "messageId":
			id = val
		case "parts":
			parts = val
		}
		return nil
	})
	if (id != nil && kind(id) != '"' && kind(id) != 'n') || (parts != nil && kind(parts) != '[' && kind(parts) != 'n') {
		return false, nil
	}
	if id == nil || kind(id) == 'n' || len(bytes.TrimSpace(id)) == 2 {
		return true, errInvalidParams("%s.messageId is required", field)
	}
	n := 0
	_ = eachElement(parts, func(int, []byte) error { n++; return nil })
	if n == 0 {
		return true, errInvalidParams("%s.parts must hold at least one part", field)
	}
	if n > maxParts {
		return true, errInvalidParams("%s.parts holds %d parts; the server takes at most %d", field, n, maxParts)
	}
	return true, eachElement(parts, func(i int, raw []byte) error { return checkPart(field, i, raw) })
}

// checkPart says whether part i of a message (valid JSON) holds exactly
// one kind of content.
func checkPart(field string, i int, raw []byte) error {
	if kind(raw) != '{' {
		return errInvalidParams("%s.parts[%d] is not an object", field, i)
	}
	var content [4][]byte // text, raw, data, url: the last of each
	_ = eachMember(raw, func(k string, val []byte) error {
		switch k {
		case "text":
			content[0] = val
		case "raw":
			content[1] = val
		case "data":
			content[2] = val
		case "url":
			content[3] = val
		}
		return nil
	})
	n := 0
	for k, v := range content {
		v = bytes.TrimSpace(v)
		if v == nil || string(v) == "null" || (k == 3 && string(v) == `""`) {
			continue
		}
		n++
	}
	switch {
	case n == 0:
		return errInvalidParams("%s.parts[%d] has no content: set exactly one of text, raw, data or url", field, i)
	case n > 1:
		return errInvalidParams("%s.parts[%d] has more than one content: set exactly one of text, raw, data or url", field, i)
	}
	return nil
}

type jsonrpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      any             `json:"id"`
}

func (f *Front) jsonrpcFront(h Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			writeJSONRPCError(w, nil, a2a.NewError(a2a.ErrInvalidRequest, "JSON-RPC requests must be sent with POST"))
			return
		}
		ar, err := f.authenticate(r)
		if err != nil {
			// JSON-RPC errors travel with status 200: clients read the
			// error object, not the status.
			w.Header().Set("WWW-Authenticate", `Bearer realm="askpoint"`)
			if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				writeJSONRPCStreamError(w, nil, err)
			} else {
				writeJSONRPCError(w, nil, err)
			}
			return
		}
		r = ar
		if err := checkContentType(r, f.cfg.AllowMissingContentType); err != nil {
			writeJSONRPCError(w, nil, err)
			return
		}
		body, err := readBody(w, r, f.cfg.MaxRequestBytes)
		if err != nil {
			writeJSONRPCError(w, nil, err)
			return
		}
		env, notification, err := checkEnvelope(body)
		if notification {
			// JSON-RPC 2.0: a notification gets no reply. Every A2A method
			// answers something, so none is run either.
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if err != nil {
			writeJSONRPCError(w, env.ID, err)
			return
		}
		// A client that asked a streaming method for an SSE stream reads
		// only the stream's data events: it gets its error as one.
		fail := writeJSONRPCError
		if (env.Method == "SendStreamingMessage" || env.Method == "SubscribeToTask") &&
			strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			fail = writeJSONRPCStreamError
		}
		if err := checkVersion(r); err != nil {
			fail(w, env.ID, err)
			return
		}
		if params, changed, err := camelParams(env.Params, "params"); err != nil {
			fail(w, env.ID, err)
			return
		} else if changed {
			// ProtoJSON readers take the proto field names too
			// (history_length); the SDK's decoder takes only the JSON
			// names, so the body it reads says historyLength.
			if body, err = replaceParams(body, params); err != nil {
				fail(w, env.ID, errInvalidParams("params cannot be re-encoded: %v", err))
				return
			}
			env.Params = params
		}
		if err := checkFields(env.Params, "params", f.cfg.MaxIDBytes); err != nil {
			fail(w, env.ID, err)
			return
		}
		switch env.Method {
		case "SendMessage", "SendStreamingMessage":
			msg, ok := memberOf(env.Params, "message")
			if !ok {
				fail(w, env.ID, errInvalidParams("params must be an object holding message"))
				return
			}
			if err := checkParts("params.message", msg, f.cfg.MaxParts); err != nil {
				fail(w, env.ID, err)
				return
			}
		case "DeleteTaskPushNotificationConfig":
			// Answered here: the SDK's transport drops the result member of
			// a call whose result is empty, and JSON-RPC 2.0 requires one on
			// every success.
			var p a2a.DeleteTaskPushConfigRequest
			if err := decodeParams(env.Params, &p, "params"); err != nil {
				fail(w, env.ID, err)
				return
			}
			if p.TaskID == "" {
				fail(w, env.ID, errInvalidParams("params must be an object holding taskId and id"))
				return
			}
			if err := h.DeleteTaskPushConfig(r.Context(), &p); err != nil {
				fail(w, env.ID, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": env.ID, "result": map[string]any{}})
			return
		case "SubscribeToTask":
			var p a2a.SubscribeToTaskRequest
			if err := decodeParams(env.Params, &p, "params"); err != nil {
				fail(w, env.ID, err)
				return
			}
			if err := h.CheckSubscribe(r.Context(), &p); err != nil {
				fail(w, env.ID, err)
				return
			}
		}
		if env.Method == "SendStreamingMessage" || env.Method == "SubscribeToTask" {
			release, err := f.streams.acquire(auth.Principal(r.Context()))
			if err != nil {
				fail(w, env.ID, err)
				return
			}
			defer release()
			ctx, done, err := f.streamCtx.open(r.Context())
			if err != nil {
				fail(w, env.ID, err)
				return
			}
			defer done()
			r = r.WithContext(ctx)
		}
		if answersHere[env.Method] {
			f.answerJSONRPC(w, r, h, next, body, &env)
			return
		}
		if mk := paramsOf[env.Method]; mk != nil && env.Method != "SubscribeToTask" {
			// Decoded here first, so that params of the wrong types are
			// refused naming the field instead of Go's types.
			if err := decodeParams(env.Params, mk(), "params"); err != nil {
				fail(w, env.ID, err)
				return
			}
		}
		serveBody(next, w, r, body)
	})
}

// serveBody serves r with body as its body.
func serveBody(next http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	next.ServeHTTP(w, r)
}

// restPushConfigPath is an HTTP+JSON push configuration's path:
// [/TENANT]/tasks/TASK/pushNotificationConfigs/ID.
var restPushConfigPath = regexp.MustCompile(`^(?:/([^/]+))?/tasks/([^/]+)/pushNotificationConfigs/([^/]+)$`)

// restCreatePushConfigPath is where HTTP+JSON push configurations are
// created: [/TENANT]/tasks/TASK/pushNotificationConfigs.
var restCreatePushConfigPath = regexp.MustCompile(`^(?:/[^/]+)?/tasks/[^/]+/pushNotificationConfigs$`)

func (f *Front) restFront(h Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		uw := &unavailableWriter{ResponseWriter: rw}
		defer uw.finish()
		w := &a2aJSONWriter{ResponseWriter: uw, a2a: wantsA2AJSON(r)}
		ar, err := f.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="askpoint"`)
			writeRESTError(w, err)
			return
		}
		r = ar
		if r.ContentLength != 0 && r.Method != http.MethodGet && r.Method != http.MethodDelete {
			if err := checkContentType(r, f.cfg.AllowMissingContentType); err != nil {
				writeRESTError(w, err)
				return
			}
		}
		body, err := readBody(w, r, f.cfg.MaxRequestBytes)
		if err != nil {
			writeRESTError(w, err)
			return
		}
		if err := checkVersion(r); err != nil {
			writeRESTError(w, err)
			return
		}
		if len(body) > 0 {
			if err := checkRESTBody(body); err != nil {
				writeRESTError(w, err)
				return
			}
			b, changed, err := camelParams(body, "body")
			if err != nil {
				writeRESTError(w, err)
				return
			}
			if changed {
				body = b
			}
		}
		camelQuery(r)
		if err := checkRESTPath(r, f.cfg.MaxIDBytes); err != nil {
			writeRESTError(w, err)
			return
		}
		if err := checkFields(body, "body", f.cfg.MaxIDBytes); err != nil {
			writeRESTError(w, err)
			return
		}
		var sent *a2a.SendMessageRequest
		switch {
		case r.Method == http.MethodPost && (r.URL.Path == "/message:send" || r.URL.Path == "/message:stream"):
			msg, ok := memberOf(body, "message")
			if !ok {
				writeRESTError(w, errInvalidParams("the body must be an object holding message"))
				return
			}
			if err := checkParts("message", msg, f.cfg.MaxParts); err != nil {
				writeRESTError(w, err)
				return
			}
			sent = new(a2a.SendMessageRequest)
			if err := decodeParams(body, sent, "body"); err != nil {
				writeRESTError(w, err)
				return
			}
		case r.Method == http.MethodPost && restCreatePushConfigPath.MatchString(r.URL.Path):
			if err := decodeParams(body, new(a2a.PushConfig), "body"); err != nil {
				writeRESTError(w, err)
				return
			}
		case r.Method == http.MethodDelete && restPushConfigPath.MatchString(r.URL.Path):
			// Answered here with {}: the SDK's transport sends an empty
			// body under Content-Type application/json.
			m := restPushConfigPath.FindStringSubmatch(r.URL.Path)
			req := &a2a.DeleteTaskPushConfigRequest{Tenant: m[1], TaskID: a2a.TaskID(m[2]), ID: m[3]}
			if err := h.DeleteTaskPushConfig(r.Context(), req); err != nil {
				writeRESTError(w, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{}\n"))
			return
		case strings.HasPrefix(r.URL.Path, "/tasks/") && strings.HasSuffix(r.URL.Path, ":subscribe"):
			id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/tasks/"), ":subscribe")
			if err := h.CheckSubscribe(r.Context(), &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(id)}); err != nil {
				writeRESTError(w, err)
				return
			}
		}
		if r.URL.Path == "/message:stream" || strings.HasSuffix(r.URL.Path, ":subscribe") {
			release, err := f.streams.acquire(auth.Principal(r.Context()))
			if err != nil {
				writeRESTError(w, err)
				return
			}
			defer release()
			ctx, done, err := f.streamCtx.open(r.Context())
			if err != nil {
				writeRESTError(w, err)
				return
			}
			defer done()
			r = r.WithContext(ctx)
		} else if answerREST(w, r, h, body, sent) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// a2aJSONWriter types the JSON responses of the HTTP+JSON binding, errors
// included, application/a2a+json (A2A 1.0.1 §11.1: SHOULD) when the caller
// names that type: in Accept, or as the Content-Type of its request. Any
// other caller gets application/json, the type of A2A 1.0.0 §11.1: the
// a2a-go v2.4.0 client (Accept: application/json) reads an error of any
// other type as a bare server error, and the a2a-tck suite (Accept: */*)
// requires application/json on errors. Event streams keep
// text/event-stream. See docs/decisions/0030-a2a-json-responses.md.
type a2aJSONWriter struct {
	http.ResponseWriter
	a2a   bool // the caller named application/a2a+json
	typed bool
}

func (w *a2aJSONWriter) retype() {
	if w.typed {
		return
	}
	w.typed = true
	h := w.ResponseWriter.Header()
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && mt == "application/json" && w.a2a {
		h.Set("Content-Type", "application/a2a+json")
	}
}

// wantsA2AJSON says whether a request names application/a2a+json: in its
// Accept header with a q above 0, or as its own Content-Type.
func wantsA2AJSON(r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "application/a2a+json" {
		return true
	}
	for _, v := range r.Header.Values("Accept") {
		for _, item := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
			if err != nil || mt != "application/a2a+json" {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
				continue
			}
			return true
		}
	}
	return false
}

func (w *a2aJSONWriter) WriteHeader(code int) {
	w.retype()
	w.ResponseWriter.WriteHeader(code)
}

func (w *a2aJSONWriter) Write(b []byte) (int, error) {
	w.retype()
	return w.ResponseWriter.Write(b)
}

// Flush lets the SDK's event streams through the wrapper.
func (w *a2aJSONWriter) Flush() {
	w.retype()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (w *a2aJSONWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func errorInfo(pe protocolError) *errordetails.Typed {
	return errordetails.NewErrorInfo(a2a.ErrorReason(pe.err), a2a.ProtocolDomain, nil)
}

func writeJSONRPCError(w http.ResponseWriter, id any, err error) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jsonrpcError(id, err))
}

// writeJSONRPCStreamError refuses a streaming call before any stream
// starts: a plain JSON-RPC error response, as the binding says, sent with
// the HTTP status the error has on HTTP+JSON. The status matters for
// clients (the a2a-go SDK's among them) that read a streaming call's body
// only as events: they see a failed call instead of an empty stream. See
// docs/decisions/0012-conformance.md.
func writeJSONRPCStreamError(w http.ResponseWriter, id any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(lookupProtocolError(err).httpStatus)
	_ = json.NewEncoder(w).Encode(jsonrpcError(id, err))
}

func jsonrpcError(id any, err error) map[string]any {
	pe := lookupProtocolError(err)
	var ae *a2a.Error
	msg := err.Error()
	if !errors.As(err, &ae) {
		msg = pe.err.Error() + ": " + msg
	}
	return map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code":    pe.code,
			"message": msg,
			"data":    []*errordetails.Typed{errorInfo(pe)},
		},
	}
}

func writeRESTError(w http.ResponseWriter, err error) {
	pe := lookupProtocolError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(pe.httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{
			"code":    pe.httpStatus,
			"status":  pe.status,
			"message": err.Error(),
			"details": []*errordetails.Typed{errorInfo(pe)},
		},
	})
}

// extraInterfaces are the interfaces Options.Interfaces add to e's card.
func (f *Front) extraInterfaces(baseURL, agent string) []*a2a.AgentInterface {
	f.mu.Lock()
	fns := f.interfaces
	f.mu.Unlock()
	var out []*a2a.AgentInterface
	for _, fn := range fns {
		if iface := fn(baseURL, agent); iface != nil {
			out = append(out, iface)
		}
	}
	return out
}
