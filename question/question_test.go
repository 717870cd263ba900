package question

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/jsonwrite"
)

const expenseSchema = `{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`

var expenseExpiry = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)

// expenseQuestion is the worked example's first question.
func expenseQuestion() *Question {
	return &Question{
		ID:      "q-1",
		Text:    "Which cost centre should this expense be charged to?",
		Expires: expenseExpiry,
		Schema:  json.RawMessage(expenseSchema),
		Options: []Option{
			{Value: "CC-4410", Label: "Cost centre CC-4410"},
			{Value: "CC-4420", Label: "Cost centre CC-4420"},
		},
		Attempt:     1,
		MaxAttempts: DefaultMaxAttempts,
	}
}

// cityQuestion has one required string field and no options.
func cityQuestion() *Question {
	return &Question{
		ID:      "q-city",
		Text:    "Which city did the trip start in?",
		Expires: expenseExpiry,
		Schema:  json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string","minLength":2}}}`),
		Attempt: 1,
	}
}

func userData(v any) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(v))
}

func userText(s string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s))
}

// jsonMap decodes a JSON object as the wire would.
func jsonMap(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func mustCheck(t testing.TB, q *Question) {
	t.Helper()
	if err := q.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func assertJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("fields %s are not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("fields = %s, want %s", got, want)
	}
}

func assertValid(t *testing.T, a *Answer, errs []FieldError, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("err = %v, want none", err)
	}
	if errs != nil {
		t.Fatalf("field errors = %+v, want none", errs)
	}
	if a == nil {
		t.Fatal("answer is nil")
	}
}

func TestParseDataPartAnswer(t *testing.T) {
	q := expenseQuestion()
	mustCheck(t, q)
	a, errs, err := Parse(userData(jsonMap(t, `{"costCentre":"CC-4410"}`)), q, 0)
	assertValid(t, a, errs, err)
	assertJSON(t, a.Fields, `{"costCentre":"CC-4410"}`)
	if a.FromText || a.Action != "" {
		t.Fatalf("answer = %+v, want a data answer", a)
	}
}

func TestParseDataPartWithQuestionID(t *testing.T) {
	q := expenseQuestion()
	a, errs, err := Parse(userData(jsonMap(t, `{"questionId":"q-1","costCentre":"CC-4420"}`)), q, 0)
	assertValid(t, a, errs, err)
	if a.QuestionID != "q-1" {
		t.Fatalf("QuestionID = %q, want q-1", a.QuestionID)
	}
	assertJSON(t, a.Fields, `{"costCentre":"CC-4420"}`)
}

func TestParseDataPartGoValue(t *testing.T) {
	// In process, a data part may hold any Go value that encodes as an object.
	type reply struct {
		QuestionID string `json:"questionId"`
		CostCentre string `json:"costCentre"`
	}
	a, errs, err := Parse(userData(reply{"q-1", "CC-4410"}), expenseQuestion(), 0)
	assertValid(t, a, errs, err)
	assertJSON(t, a.Fields, `{"costCentre":"CC-4410"}`)
}

func TestParseMissingQuestionIDBindsToOpenQuestion(t *testing.T) {
	q := expenseQuestion()
	for _, body := range []string{`{"costCentre":"CC-4410"}`, `{"questionId":null,"costCentre":"CC-4410"}`} {
		a, errs, err := Parse(userData(jsonMap(t, body)), q, 0)
		assertValid(t, a, errs, err)
		if a.QuestionID != "" {
			t.Fatalf("%s: QuestionID = %q, want empty (none sent)", body, a.QuestionID)
		}
		assertJSON(t, a.Fields, `{"costCentre":"CC-4410"}`)
	}
}

func TestParseTextEqualToOptionValue(t *testing.T) {
	for _, text := range []string{"CC-4420", "  cc-4420\n"} {
		a, errs, err := Parse(userText(text), expenseQuestion(), 0)
		assertValid(t, a, errs, err)
		if !a.FromText {
			t.Fatalf("%q: FromText = false", text)
		}
		assertJSON(t, a.Fields, `{"costCentre":"CC-4420"}`)
	}
}

func TestParseTextEqualToOptionLabelIgnoringCase(t *testing.T) {
	a, errs, err := Parse(userText("cost CENTRE cc-4410"), expenseQuestion(), 0)
	assertValid(t, a, errs, err)
	assertJSON(t, a.Fields, `{"costCentre":"CC-4410"}`)
}

func TestParseTextForOneRequiredStringField(t *testing.T) {
	q := cityQuestion()
	mustCheck(t, q)
	a, errs, err := Parse(userText(" Berlin "), q, 0)
	assertValid(t, a, errs, err)
	if !a.FromText {
		t.Fatal("FromText = false")
	}
	assertJSON(t, a.Fields, `{"city":"Berlin"}`)

	// The text is still validated against the field's schema.
	a, errs, err = Parse(userText("B"), q, 0)
	if err != nil || a == nil {
		t.Fatalf("Parse = %v, %v", a, err)
	}
	want := []FieldError{{Pointer: "/city", Message: "must be at least 2 characters long"}}
	if !reflect.DeepEqual(errs, want) {
		t.Fatalf("errs = %+v, want %+v", errs, want)
	}
}

func TestParseAmbiguousTextIsExpectedOneOfWorkedExample(t *testing.T) {
	a, errs, err := Parse(userText("engineering"), expenseQuestion(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if a != nil {
		t.Fatalf("answer = %+v, want nil", a)
	}
	want := []FieldError{{Pointer: "/costCentre", Message: "expected one of CC-4410, CC-4420"}}
	if !reflect.DeepEqual(errs, want) {
		t.Fatalf("errs = %+v, want %+v", errs, want)
	}
}

func TestParseTextWithoutOptionsOrSingleStringField(t *testing.T) {
	q := &Question{ID: "q-2", Text: "Dates?", Schema: json.RawMessage(`{"type":"object","required":["from","to"],"properties":{"from":{"type":"string"},"to":{"type":"string"}}}`)}
	mustCheck(t, q)
	a, errs, err := Parse(userText("last week"), q, 0)
	if err != nil || a != nil || len(errs) != 1 {
		t.Fatalf("Parse = %v, %+v, %v; want one field error", a, errs, err)
	}
	if errs[0].Pointer != "" || !strings.Contains(errs[0].Message, "data part") || !strings.Contains(errs[0].Message, "from, to") {
		t.Fatalf("error = %+v, want one that asks for a data part with from, to", errs[0])
	}
}

func TestParseNoUsablePart(t *testing.T) {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewFileURLPart("https://example.com/receipt.png", "image/png"))
	for name, msg := range map[string]*a2a.Message{
		"url part":        m,
		"nil message":     nil,
		"blank text":      userText("   "),
		"non-object data": userData("CC-4410"),
	} {
		a, errs, err := Parse(msg, expenseQuestion(), 0)
		if err != nil || a != nil || len(errs) != 1 {
			t.Fatalf("%s: Parse = %v, %+v, %v; want one field error", name, a, errs, err)
		}
		if !strings.Contains(errs[0].Message, "data part") || !strings.Contains(errs[0].Message, "costCentre") {
			t.Fatalf("%s: error %q does not say what is expected", name, errs[0].Message)
		}
	}
}

func TestParseDecline(t *testing.T) {
	a, errs, err := Parse(userData(jsonMap(t, `{"questionId":"q-1","action":"decline","reason":"not my expense"}`)), expenseQuestion(), 0)
	assertValid(t, a, errs, err)
	if a.Action != ActionDecline || a.Reason != "not my expense" {
		t.Fatalf("answer = %+v, want decline with reason", a)
	}
	assertJSON(t, a.Fields, `{}`)
}

func TestParseCancel(t *testing.T) {
	// An action answer is not validated against the schema (costCentre is missing).
	a, errs, err := Parse(userData(jsonMap(t, `{"action":"cancel"}`)), expenseQuestion(), 0)
	assertValid(t, a, errs, err)
	if a.Action != ActionCancel || a.Reason != "" {
		t.Fatalf("answer = %+v, want cancel without reason", a)
	}
}

func TestParseUnknownAction(t *testing.T) {
	for body, msg := range map[string]string{
		`{"action":"approve","costCentre":"CC-4410"}`: `unknown action "approve"; expected decline or cancel`,
		`{"action":3}`: "expected decline or cancel, got a number",
	} {
		a, errs, err := Parse(userData(jsonMap(t, body)), expenseQuestion(), 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []FieldError{{Pointer: "/action", Message: msg}}
		if !reflect.DeepEqual(errs, want) {
			t.Fatalf("%s: errs = %+v, want %+v", body, errs, want)
		}
		if a == nil || a.Action != "" {
			t.Fatalf("%s: answer = %+v, want one without an action", body, a)
		}
	}
}

func TestParseWrongQuestionID(t *testing.T) {
	a, errs, err := Parse(userData(jsonMap(t, `{"questionId":"q-old","costCentre":"CC-4410"}`)), expenseQuestion(), 0)
	if !errors.Is(err, ErrWrongQuestion) {
		t.Fatalf("err = %v, want ErrWrongQuestion", err)
	}
	if a != nil || errs != nil {
		t.Fatalf("answer, errs = %+v, %+v; want nil, nil", a, errs)
	}
	if !strings.Contains(err.Error(), `"q-old"`) || !strings.Contains(err.Error(), `"q-1"`) {
		t.Fatalf("error %q does not name both question IDs", err)
	}
	// A questionId that is not even a string is also a wrong question.
	_, _, err = Parse(userData(jsonMap(t, `{"questionId":7,"costCentre":"CC-4410"}`)), expenseQuestion(), 0)
	if !errors.Is(err, ErrWrongQuestion) || !strings.Contains(err.Error(), "7") {
		t.Fatalf("err = %v, want ErrWrongQuestion naming 7", err)
	}
}

func TestParseAnswerOverSizeLimit(t *testing.T) {
	q := expenseQuestion()
	body := map[string]any{"costCentre": "CC-4410", "note": strings.Repeat("x", 100)}
	raw, _ := json.Marshal(body)
	a, errs, err := Parse(userData(body), q, 64)
	if err != nil || a != nil {
		t.Fatalf("Parse = %v, %v", a, err)
	}
	want := []FieldError{{Message: fmt.Sprintf("answer is %d bytes; the limit is 64 bytes", len(raw))}}
	if !reflect.DeepEqual(errs, want) {
		t.Fatalf("errs = %+v, want %+v", errs, want)
	}

	// Text answers are bounded too; 0 means the default limit.
	big := strings.Repeat("y", DefaultMaxAnswerBytes+1)
	_, errs, _ = Parse(userText(big), cityQuestion(), 0)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, fmt.Sprintf("the limit is %d bytes", DefaultMaxAnswerBytes)) {
		t.Fatalf("errs = %+v, want the size error", errs)
	}
}

func TestCheckAcceptsWorkedExample(t *testing.T) {
	mustCheck(t, expenseQuestion())
	if f := expenseQuestion().OptionField(); f != "costCentre" {
		t.Fatalf("OptionField = %q, want costCentre", f)
	}
	if f := cityQuestion().OptionField(); f != "" {
		t.Fatalf("OptionField without options = %q, want empty", f)
	}
}

func TestCheckInvalidSchema(t *testing.T) {
	cases := map[string]struct {
		schema string
		opts   []Option
		want   string
	}{
		"bad keyword value": {`{"type":"object","required":"costCentre"}`, nil, "/required"},
		"bad regex":         {`{"properties":{"a":{"type":"string","pattern":"("}}}`, nil, "regex"},
		"not JSON":          {`{"type":`, nil, "not valid JSON"},
		"not an object":     {`true`, nil, "JSON object"},
		"not object type":   {`{"type":"string"}`, nil, `"string"`},
		"missing":           {``, nil, "missing"},
		"reserved field":    {`{"properties":{"action":{"type":"string"}}}`, nil, `"action"`},
		"unknown pointer":   {`{"properties":{"a":{"$ref":"#/$defs/nope"}}}`, nil, "nope"},
		"options without a field": {`{"required":["a","b"],"properties":{"a":{},"b":{}}}`,
			[]Option{{Value: "x"}}, "exactly one required property"},
		"option outside schema": {expenseSchema, []Option{{Value: "CC-1"}}, `"CC-1"`},
		"duplicate option":      {expenseSchema, []Option{{Value: "CC-4410"}, {Value: "CC-4410"}}, "more than once"},
	}
	for name, c := range cases {
		q := &Question{ID: "q", Text: "Which?", Schema: json.RawMessage(c.schema), Options: c.opts}
		err := q.Check()
		if err == nil {
			t.Errorf("%s: Check accepted %s", name, c.schema)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check error %q does not mention %q", name, err, c.want)
		}
	}
	q := expenseQuestion()
	q.Text = " "
	if err := q.Check(); err == nil || !strings.Contains(err.Error(), "text") {
		t.Errorf("empty text: Check = %v, want an error about the text", err)
	}
}

func TestCheckOptionFieldFallsBackToSingleProperty(t *testing.T) {
	q := &Question{ID: "q", Text: "Colour?", Schema: json.RawMessage(`{"properties":{"colour":{"type":"string"}}}`),
		Options: []Option{{Value: "red"}, {Value: "blue"}}}
	mustCheck(t, q)
	if f := q.OptionField(); f != "colour" {
		t.Fatalf("OptionField = %q, want colour", f)
	}
}

func TestCheckRefusesExternalRef(t *testing.T) {
	for _, ref := range []string{"file:///etc/passwd", "https://example.com/x.json", "other.json"} {
		schema := fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":%q}}}`, ref)
		q := &Question{ID: "q", Text: "A?", Schema: json.RawMessage(schema)}
		err := q.Check()
		if err == nil {
			t.Fatalf("Check accepted a reference to %s", ref)
		}
		if !strings.Contains(err.Error(), ref) {
			t.Fatalf("Check error %q does not name %s", err, ref)
		}
	}
	// A custom meta-schema is a reference outside the schema too.
	q := &Question{ID: "q", Text: "A?", Schema: json.RawMessage(`{"$schema":"https://example.com/meta","type":"object"}`)}
	if err := q.Check(); err == nil || !strings.Contains(err.Error(), "https://example.com/meta") {
		t.Fatalf("Check = %v, want a refusal naming the meta-schema", err)
	}
	// References inside the schema work.
	q = &Question{ID: "q", Text: "A?", Schema: json.RawMessage(`{"$defs":{"cc":{"type":"string"}},"required":["a"],"properties":{"a":{"$ref":"#/$defs/cc"}}}`)}
	mustCheck(t, q)
}

func TestCheckRefusesDeepSchema(t *testing.T) {
	schema := `{"type":"object"}`
	for range 40 {
		schema = `{"properties":{"a":` + schema + `}}`
	}
	q := &Question{ID: "q", Text: "A?", Schema: json.RawMessage(schema)}
	if err := q.Check(); err == nil || !strings.Contains(err.Error(), "32") {
		t.Fatalf("Check = %v, want a depth error", err)
	}
}

func TestMessageFromMessageRoundTrip(t *testing.T) {
	q := expenseQuestion()
	q.Expires = time.Date(2026, 12, 2, 10, 30, 0, 0, time.FixedZone("CET", 3600))
	m := q.Message()

	if m.Role != a2a.MessageRoleAgent || m.ID == "" {
		t.Fatalf("role/id = %q/%q", m.Role, m.ID)
	}
	if !slices.Equal(m.Extensions, []string{ExtensionURI}) {
		t.Fatalf("extensions = %v", m.Extensions)
	}
	if len(m.Parts) != 2 {
		t.Fatalf("parts = %d, want 2", len(m.Parts))
	}
	if got := m.Parts[0].Text(); got != q.Text {
		t.Fatalf("text part = %q, want the question text on its own", got)
	}
	if m.Parts[1].MediaType != "application/json" {
		t.Fatalf("data part media type = %q", m.Parts[1].MediaType)
	}

	// Over the wire.
	wire, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back a2a.Message
	if err := json.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	data, ok := back.Parts[1].Data().(map[string]any)
	if !ok {
		t.Fatalf("data part value = %T", back.Parts[1].Data())
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range data {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"answerSchema", "expires", "options", "questionId"}; !slices.Equal(keys, want) {
		t.Fatalf("data part keys = %v, want %v", keys, want)
	}
	exp, _ := data["expires"].(string)
	if exp != "2026-12-02T09:30:00Z" || !strings.HasSuffix(exp, "Z") {
		t.Fatalf("expires = %q, want 2026-12-02T09:30:00Z", exp)
	}

	got, ok, err := FromMessage(&back)
	if err != nil || !ok {
		t.Fatalf("FromMessage = %v, %v", ok, err)
	}
	want := expenseQuestion()
	if !got.Expires.Equal(q.Expires) {
		t.Fatalf("expires = %v, want %v", got.Expires, q.Expires)
	}
	want.Expires = got.Expires
	want.MaxAttempts = 0 // not on the wire for a first ask; Attempt decodes as 1
	assertJSON(t, got.Schema, expenseSchema)
	want.Schema = got.Schema
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FromMessage = %+v, want %+v", got, want)
	}

	// In process, without the wire.
	got2, ok, err := FromMessage(m)
	if err != nil || !ok || got2.ID != q.ID || got2.Text != q.Text {
		t.Fatalf("FromMessage in process = %+v, %v, %v", got2, ok, err)
	}

	// A message without a question.
	if _, ok, err := FromMessage(userText("hello")); ok || err != nil {
		t.Fatalf("FromMessage(text) = %v, %v; want no question", ok, err)
	}
}

func TestReAskNumbering(t *testing.T) {
	q := expenseQuestion()
	_, errs, _ := Parse(userText("engineering"), q, 0)
	q2 := q.ReAsk("q-2", errs)
	if q2.ID != "q-2" || q2.Attempt != 2 || q2.MaxAttempts != 3 {
		t.Fatalf("re-ask = %+v", q2)
	}
	if q2.Text != q.Text || !q2.Expires.Equal(q.Expires) || string(q2.Schema) != string(q.Schema) || !reflect.DeepEqual(q2.Options, q.Options) {
		t.Fatalf("re-ask changed the question: %+v", q2)
	}
	if !reflect.DeepEqual(q2.Errors, errs) {
		t.Fatalf("re-ask errors = %+v, want %+v", q2.Errors, errs)
	}
	q3 := q2.ReAsk("q-3", nil)
	if q3.Attempt != 3 || q3.ID != "q-3" || q3.Errors != nil {
		t.Fatalf("second re-ask = %+v", q3)
	}
	// An unset Attempt counts as the first.
	if a := (&Question{}).ReAsk("x", nil).Attempt; a != 2 {
		t.Fatalf("re-ask of an unnumbered question is attempt %d, want 2", a)
	}

	m := q2.Message()
	wantText := q.Text + "\n\nThat answer was not accepted: expected one of CC-4410, CC-4420. (attempt 2 of 3)"
	if got := m.Parts[0].Text(); got != wantText {
		t.Fatalf("re-ask text = %q, want %q", got, wantText)
	}
	data := m.Parts[1].Data().(map[string]any)
	if data["attempt"] != float64(2) || data["maxAttempts"] != float64(3) || data["questionId"] != "q-2" {
		t.Fatalf("re-ask data = %v", data)
	}
	if _, has := data["text"]; has {
		t.Fatal("data part holds text")
	}
	wantErrs := []any{map[string]any{"pointer": "/costCentre", "message": "expected one of CC-4410, CC-4420"}}
	if !reflect.DeepEqual(data["errors"], wantErrs) {
		t.Fatalf("re-ask errors = %v, want %v", data["errors"], wantErrs)
	}
	back, ok, err := FromMessage(m)
	if err != nil || !ok || back.Text != q.Text || back.Attempt != 2 || !reflect.DeepEqual(back.Errors, errs) {
		t.Fatalf("FromMessage(re-ask) = %+v, %v, %v", back, ok, err)
	}
}

func TestWorkedExample(t *testing.T) {
	q := expenseQuestion()
	mustCheck(t, q)
	_, errs, err := Parse(userText("engineering"), q, 0)
	if err != nil || len(errs) == 0 {
		t.Fatalf("engineering: errs=%v err=%v, want field errors", errs, err)
	}
	q2 := q.ReAsk("q-2", errs)
	// The old question ID is no longer open.
	if _, _, err := Parse(userData(jsonMap(t, `{"questionId":"q-1","costCentre":"CC-4410"}`)), q2, 0); !errors.Is(err, ErrWrongQuestion) {
		t.Fatalf("answer to q-1 after re-ask: err = %v", err)
	}
	a, errs, err := Parse(userData(jsonMap(t, `{"questionId":"q-2","costCentre":"CC-4410"}`)), q2, 0)
	assertValid(t, a, errs, err)
	type choice struct {
		CostCentre string `json:"costCentre"`
	}
	c, err := Decode[choice](a)
	if err != nil || c.CostCentre != "CC-4410" {
		t.Fatalf("Decode = %+v, %v", c, err)
	}
}

func TestValidateMessages(t *testing.T) {
	q := &Question{ID: "q", Text: "Which?", Schema: json.RawMessage(expenseSchema)}
	mustCheck(t, q)
	cases := map[string][]FieldError{
		`{"costCentre":"engineering"}`: {{Pointer: "/costCentre", Message: `"engineering" does not match ^CC-[0-9]{4}$`}},
		`{}`:                           {{Pointer: "/costCentre", Message: "missing required field costCentre"}},
		`{"costCentre":4410}`:          {{Pointer: "/costCentre", Message: "expected a string, got a number"}},
		`[]`:                           {{Pointer: "", Message: "the answer must be a JSON object"}},
		`{"costCentre":"CC-4410"}`:     nil,
	}
	for in, want := range cases {
		if got := q.Validate(json.RawMessage(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("Validate(%s) = %+v, want %+v", in, got, want)
		}
	}
}

func TestValidateClosedOptionSet(t *testing.T) {
	q := expenseQuestion()
	want := []FieldError{{Pointer: "/costCentre", Message: "expected one of CC-4410, CC-4420"}}
	for _, in := range []string{`{"costCentre":"CC-9999"}`, `{"costCentre":"engineering"}`, `{"costCentre":"cc-4410"}`} {
		if got := q.Validate(json.RawMessage(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("Validate(%s) = %+v, want %+v", in, got, want)
		}
	}
}

func TestValidateNestedPointers(t *testing.T) {
	q := &Question{ID: "q", Text: "Trip details?", Schema: json.RawMessage(`{
		"type":"object",
		"required":["trip"],
		"properties":{
			"trip":{
				"type":"object",
				"required":["date","legs"],
				"properties":{
					"date":{"type":"string","format":"date"},
					"legs":{"type":"array","items":{
						"type":"object","required":["from","to"],
						"additionalProperties":false,
						"properties":{"from":{"type":"string"},"to":{"type":"string"},"km":{"type":"number","minimum":0}}
					}},
					"a/b":{"type":"integer"}
				}
			}
		}
	}`)}
	mustCheck(t, q)
	got := q.Validate(json.RawMessage(`{"trip":{"date":"2026-13-40","legs":[{"from":"A","to":"B"},{"from":"B","km":-3,"via":"C"}],"a/b":"x"}}`))
	want := []FieldError{
		{Pointer: "/trip/a~1b", Message: "expected an integer, got a string"},
		{Pointer: "/trip/date", Message: `"2026-13-40" is not a valid date`},
		{Pointer: "/trip/legs/1/km", Message: "must be at least 0"},
		{Pointer: "/trip/legs/1/to", Message: "missing required field to"},
		{Pointer: "/trip/legs/1/via", Message: "unexpected field via"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Validate =\n%+v\nwant\n%+v", got, want)
	}
	// Deterministic: the same answer gives the same list every time.
	for range 20 {
		if again := q.Validate(json.RawMessage(`{"trip":{"date":"2026-13-40","legs":[{"from":"A","to":"B"},{"from":"B","km":-3,"via":"C"}],"a/b":"x"}}`)); !reflect.DeepEqual(again, want) {
			t.Fatalf("Validate is not deterministic: %+v", again)
		}
	}
}

func TestDecodeIntoStruct(t *testing.T) {
	q := &Question{ID: "q", Text: "Amount and date?", Schema: json.RawMessage(`{"type":"object","required":["amount","date"],"properties":{"amount":{"type":"number"},"date":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}}`)}
	mustCheck(t, q)
	a, errs, err := Parse(userData(jsonMap(t, `{"questionId":"q","amount":42.5,"date":"2026-11-24","tags":["taxi"]}`)), q, 0)
	assertValid(t, a, errs, err)
	type expense struct {
		Amount float64  `json:"amount"`
		Date   string   `json:"date"`
		Tags   []string `json:"tags"`
	}
	e, err := Decode[expense](a)
	if err != nil {
		t.Fatal(err)
	}
	if want := (expense{42.5, "2026-11-24", []string{"taxi"}}); !reflect.DeepEqual(e, want) {
		t.Fatalf("Decode = %+v, want %+v", e, want)
	}
	if _, err := Decode[expense](nil); err == nil {
		t.Fatal("Decode(nil) succeeded")
	}
}

func TestErrorsText(t *testing.T) {
	if got := ErrorsText(nil); got != "" {
		t.Fatalf("ErrorsText(nil) = %q", got)
	}
	got := ErrorsText([]FieldError{
		{Pointer: "/trip/date", Message: `"x" is not a valid date`},
		{Pointer: "/trip/to", Message: "missing required field to"},
	})
	want := `trip.date: "x" is not a valid date; missing required field to`
	if got != want {
		t.Fatalf("ErrorsText = %q, want %q", got, want)
	}
}

func TestSchemaCacheConcurrentAndBounded(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				schema := fmt.Sprintf(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","maximum":%d}}}`, i%300)
				q := &Question{ID: "q", Text: "N?", Schema: json.RawMessage(schema)}
				if err := q.Check(); err != nil {
					t.Error(err)
					return
				}
				if errs := q.Validate(json.RawMessage(fmt.Sprintf(`{"n":%d}`, i%300+g%2))); (len(errs) == 0) != (g%2 == 0) {
					t.Errorf("schema %d, goroutine %d: errs = %+v", i, g, errs)
					return
				}
			}
		}()
	}
	wg.Wait()
	schemas.mu.Lock()
	n := schemas.ll.Len()
	schemas.mu.Unlock()
	if n > cacheSize {
		t.Fatalf("cache holds %d schemas, more than %d", n, cacheSize)
	}
}

func BenchmarkValidate(b *testing.B) {
	q := expenseQuestion()
	if err := q.Check(); err != nil {
		b.Fatal(err)
	}
	fields := json.RawMessage(`{"costCentre":"CC-4410"}`)
	b.ReportAllocs()
	for b.Loop() {
		if errs := q.Validate(fields); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	q := expenseQuestion()
	m := userData(jsonMap(b, `{"questionId":"q-1","costCentre":"CC-4410"}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, errs, err := Parse(m, q, 0); errs != nil || err != nil {
			b.Fatal(errs, err)
		}
	}
}

// TestWireDataIsTheDataPartsEncoding: what messageAndWire gives beside the
// message encodes as the very bytes json.Marshal writes for the message's
// data part, for questions with and without every optional member, with a
// schema the cache holds and one it does not.
func TestWireDataIsTheDataPartsEncoding(t *testing.T) {
	expires := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600))
	schema := json.RawMessage(`{"type":"object","properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$","description":"<b> & \u2028"},"n":{"type":"number","maximum":1e21}},"required":["costCentre"]}`)
	if _, err := compileSchema(schema); err != nil {
		t.Fatal(err)
	}
	uncached := json.RawMessage(`{"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"string"}}}`)
	broken := json.RawMessage(`{"type":`)
	cases := map[string]Question{
		"plain":   {ID: "q-1", Text: "Which?", Expires: expires, Schema: schema},
		"no time": {ID: "q <&> \"1\"", Schema: schema},
		"options": {ID: "q-2", Expires: expires, Schema: schema, OptionsFor: "costCentre", Options: []Option{
			{Value: "CC-4410", Label: "Engineering <1>"}, {Value: "CC-4420"}, {Value: 12.5}, {Value: nil}, {Value: true},
			{Value: map[string]any{"b": 1, "a": []any{"x"}}, Label: "an object"}, {Value: []string{"go", "value"}}}},
		"options without field": {ID: "q-3", Schema: schema, Options: []Option{{Value: "a"}}},
		"subject and about": {ID: "q-4", Schema: schema, Subject: map[string]any{"amount": 42, "vendor": "Taxi & Co", "nested": map[string]any{"y": nil}},
			About: map[string]string{"task": "t-1", "agent": "<expense>"}},
		"holds": {ID: "q-5", Schema: schema, Holds: []Held{{Name: "seat 14C", Until: expires}, {Name: "", Until: time.Unix(0, 1)}}},
		"re-ask": {ID: "q-6", Schema: schema, Attempt: 2, MaxAttempts: 3, Errors: []FieldError{
			{Pointer: "/costCentre", Message: "expected one of CC-4410, CC-4420"}, {Message: "<whole>"}}},
		"re-ask without errors or cap": {ID: "q-7", Schema: schema, Attempt: 3},
		"first attempt with errors":    {ID: "q-8", Schema: schema, Attempt: 1, MaxAttempts: 3, Errors: []FieldError{{Message: "not shown"}}},
		"schema not cached":            {ID: "q-9", Schema: uncached},
		"schema broken":                {ID: "q-10", Schema: broken},
		"no schema":                    {ID: "q-11"},
		"empty maps":                   {ID: "q-12", Schema: schema, Subject: map[string]any{}, About: map[string]string{}, Holds: []Held{}, Options: []Option{}},
	}
	for name, q := range cases {
		m, data := q.messageAndWire()
		var value any
		for _, p := range m.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				value = d.Value
			}
		}
		want, err := json.Marshal(value)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := json.Marshal(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wire data\n%s\nwant\n%s", name, got, want)
		}
		if got, err := jsonwrite.Value(nil, data); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: wire data appended (error %v)\n%s\nwant\n%s", name, err, got, want)
		}
		if again, _ := json.Marshal(q.Message()); len(again) == 0 {
			t.Errorf("%s: Message encodes as nothing", name)
		}
	}
}

// BenchmarkAnswerCheck is the engine's check of an answer (judgeAnswer):
// Parse and then Asked, for the worked example's answer with and without
// its questionId.
func BenchmarkAnswerCheck(b *testing.B) {
	q := expenseQuestion()
	for name, data := range map[string]string{"bare": `{"costCentre":"CC-4410"}`, "questionId": `{"questionId":"q-1","costCentre":"CC-4410"}`} {
		b.Run(name, func(b *testing.B) {
			m := userData(jsonMap(b, data))
			b.ReportAllocs()
			for b.Loop() {
				a, errs, err := Parse(m, q, 0)
				if errs != nil || err != nil {
					b.Fatal(errs, err)
				}
				if q.Asked(a.Fields) == nil {
					b.Fatal("nothing asked")
				}
			}
		})
	}
}
