package front

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/jsonscan"
)

// Params that do not decode into the protocol's types are refused by the
// front in the protocol's words. The decoder's own errors, which the SDK's
// transports pass on, name Go types ("json: cannot unmarshal array into
// Go struct field Message.message.role of type string").

// paramsOf makes the request type of each JSON-RPC method, the type the
// SDK's transport decodes its params into.
var paramsOf = map[string]func() any{
	"SendMessage":                      func() any { return new(a2a.SendMessageRequest) },
	"SendStreamingMessage":             func() any { return new(a2a.SendMessageRequest) },
	"GetTask":                          func() any { return new(a2a.GetTaskRequest) },
	"ListTasks":                        func() any { return new(a2a.ListTasksRequest) },
	"CancelTask":                       func() any { return new(a2a.CancelTaskRequest) },
	"SubscribeToTask":                  func() any { return new(a2a.SubscribeToTaskRequest) },
	"CreateTaskPushNotificationConfig": func() any { return new(a2a.PushConfig) },
	"GetTaskPushNotificationConfig":    func() any { return new(a2a.GetTaskPushConfigRequest) },
	"ListTaskPushNotificationConfigs":  func() any { return new(a2a.ListTaskPushConfigRequest) },
	"DeleteTaskPushNotificationConfig": func() any { return new(a2a.DeleteTaskPushConfigRequest) },
	"GetExtendedAgentCard":             func() any { return new(a2a.GetExtendedAgentCardRequest) },
}

// decodeParams decodes raw (where names it: "params", "body") into v, and
// says what is wrong, naming the field, when it does not decode.
func decodeParams(raw []byte, v any, where string) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return decodeError(err, where)
	}
	return nil
}

// decodeError says in the protocol's words why a request did not decode.
func decodeError(err error, where string) error {
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	var be base64.CorruptInputError
	switch {
	case errors.As(err, &te):
		field := where
		if te.Field != "" {
			field += "." + te.Field
		}
		return errInvalidParams("%s must be %s, not %s", field, jsonKind(te.Type), valueWords(te.Value))
	case errors.As(err, &pe):
		return errInvalidParams("%s holds the time %q, which is not an RFC 3339 time (2026-12-01T09:30:00Z)", where, pe.Value)
	case errors.As(err, &be):
		return errInvalidParams("%s holds a raw part that is not valid base64 (at byte %d)", where, int64(be))
	}
	// The protocol types' own checks ("expected exactly one of text, raw,
	// data, or url, got 2") speak the protocol already.
	return errInvalidParams("%s cannot be read: %v", where, err)
}

var timeType = reflect.TypeFor[time.Time]()

// jsonKind names the JSON a Go type is read from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value"
	}
	if t == timeType {
		return "an RFC 3339 time (a string)"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

// valueWords names what a decoder found (json.UnmarshalTypeError.Value:
// "array", "number 1.5").
func valueWords(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "string", "number":
		return "a " + v
	case "bool":
		return "true or false"
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	return v
}

// decodeSendMessage decodes the params of a SendMessage into req, as
// decodeParams does, in one pass: the SDK's parts decode each part with a
// json.Unmarshal of their own (a2a.ContentParts, a2a.Part), three scans of
// every part's bytes and the allocations of each. The message is read
// through the engine's mirror (engine.MessageIn). Params the mirror does
// not read as the SDK's types would (a part a2a.Part refuses, any decoding
// error) are decoded again by decodeParams into the SDK's types, so every
// refusal is the one decodeParams gives (FuzzDecodeSendMessage holds the
// two to the same values).
func decodeSendMessage(raw []byte, req *a2a.SendMessageRequest, where string) error {
	if len(raw) == 0 {
		return nil
	}
	var w sendMessageWire
	if w.readJSON(raw) || func() bool { w = sendMessageWire{}; return json.Unmarshal(raw, &w) == nil }() {
		*req = a2a.SendMessageRequest{Tenant: w.Tenant, Config: w.Config, Metadata: w.Metadata}
		ok := true
		if w.Message != nil {
			req.Message, ok = w.Message.Message()
		}
		if ok {
			return nil
		}
	}
	*req = a2a.SendMessageRequest{}
	return decodeParams(raw, req, where)
}

// sendMessageWire mirrors a2a.SendMessageRequest.
type sendMessageWire struct {
	Tenant   string                 `json:"tenant"`
	Config   *a2a.SendMessageConfig `json:"configuration"`
	Message  *engine.MessageIn      `json:"message"`
	Metadata map[string]any         `json:"metadata"`
}

// readJSON reads raw into w in one pass, as engine.MessageIn.ReadJSON
// reads a message (the configuration, when there is one, through
// json.Unmarshal), and reports false for anything it does not read as
// json.Unmarshal would.
func (w *sendMessageWire) readJSON(raw []byte) bool {
	r := jsonscan.NewReader(raw)
	ok := r.Members(sendMessageNames, func(i int) bool {
		if i != 3 && r.Null() {
			return true
		}
		switch i {
		case 0:
			var ok bool
			w.Tenant, ok = r.String()
			return ok
		case 1:
			cfg, ok := r.Raw()
			return ok && json.Unmarshal(cfg, &w.Config) == nil
		case 2:
			w.Message = &engine.MessageIn{}
			return w.Message.ReadJSON(&r)
		default:
			var ok bool
			w.Metadata, ok = r.Map()
			return ok
		}
	})
	return ok && r.End()
}

// sendMessageNames are sendMessageWire's members, in readJSON's order.
var sendMessageNames = []string{"tenant", "configuration", "message", "metadata"}
