package front

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// FuzzDecodeSendMessage: the front's one-pass decoding of SendMessage
// params gives what decoding them into the SDK's types gives, value for
// value, and the same refusal, for every input.
func FuzzDecodeSendMessage(f *testing.F) {
	for _, seed := range []string{
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}]}}`,
		`{"message":{"messageId":"m","taskId":"t","contextId":"c","role":"ROLE_USER","parts":[{"data":{"questionId":"q","costCentre":"CC-4410"},"mediaType":"application/json"}]},"configuration":{"historyLength":1,"returnImmediately":true}}`,
		`{"message":{"messageId":"m","role":"user","parts":[{"raw":"aGk=","filename":"a.txt","metadata":{"k":[1,"x"]}}],"extensions":["https://x/ext"],"referenceTaskIds":["a","b"],"metadata":{"m":true}},"metadata":{"x":null},"tenant":"t1"}`,
		`{"message":{"messageId":"m","parts":[{"url":"https://example.com/a"}]}}`,
		`{"message":{"messageId":"m","parts":[{"url":"","text":"x"}]}}`,
		`{"message":{"messageId":"m","parts":[{"url":""}]}}`,
		`{"message":{"messageId":"m","parts":[{}]}}`,
		`{"message":{"messageId":"m","parts":[{"text":"a","data":1}]}}`,
		`{"message":{"messageId":"m","parts":[{"text":null}]}}`,
		`{"message":{"messageId":"m","parts":[{"data":null}]}}`,
		`{"message":{"messageId":"m","parts":[null,{"text":"x"}]}}`,
		`{"message":{"messageId":"m","parts":[]}}`,
		`{"message":{"messageId":"m","parts":null}}`,
		`{"message":{"messageId":"m"}}`,
		`{"message":null}`,
		`{}`,
		`{"message":{"messageId":"m","parts":[{"raw":"not base64!"}]}}`,
		`{"message":{"messageId":"m","parts":[{"text":1}]}}`,
		`{"message":{"messageId":"m","parts":["x"]}}`,
		`{"message":{"messageId":"m","parts":{"text":"x"}}}`,
		`{"message":{"messageId":"m","role":7,"parts":[{"text":"x"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_NOBODY","parts":[{"text":"x"}]}}`,
		`{"message":{"MessageID":"m","PARTS":[{"TEXT":"x","MediaType":"text/plain"}]}}`,
		`{"message":{"messageId":"m","parts":[{"text":"x","unknown":{"a":1}}]},"other":1}`,
		`{"message":"x"}`, `[]`, `null`, `"x"`, `{"configuration":{"historyLength":"1"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// What the one-pass reader reads is what json.Unmarshal reads.
		var fast, slow sendMessageWire
		if fast.readJSON(raw) {
			if err := json.Unmarshal(raw, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s: read in one pass\n%#v\njson.Unmarshal (error %v)\n%#v", raw, fast, err, slow)
			}
			if fast.Message != nil && !reflect.DeepEqual(*fast.Message, *slow.Message) {
				t.Fatalf("%s: message read in one pass\n%#v\njson.Unmarshal\n%#v", raw, *fast.Message, *slow.Message)
			}
		}
		var got, want a2a.SendMessageRequest
		gotErr := decodeSendMessage(raw, &got, "params")
		wantErr := decodeParams(raw, &want, "params")
		if errWords(gotErr) != errWords(wantErr) {
			t.Fatalf("%s: error %v, decoded into the SDK's types %v", raw, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %#v\nwant %#v", raw, got, want)
		}
		if wantErr == nil && want.Message != nil && !reflect.DeepEqual(*got.Message, *want.Message) {
			t.Fatalf("%s: message\n got %#v\nwant %#v", raw, *got.Message, *want.Message)
		}
	})
}

// errWords is err's message, with the keys of the SDK's refusal of a part
// with no content, which it lists in a map's order, as a sorted multiset
// of their bytes.
func errWords(err error) string {
	s := fmt.Sprint(err)
	const mark = "unknown part content type: "
	head, keys, ok := strings.Cut(s, mark)
	if !ok {
		return s
	}
	b := []byte(keys)
	slices.Sort(b)
	return head + mark + string(b)
}

// TestTheUsualParamsAreReadInOnePass: the params an SDK client sends for
// a request and for an answer are read by readJSON, not left to
// json.Unmarshal.
func TestTheUsualParamsAreReadInOnePass(t *testing.T) {
	for _, raw := range []string{
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}]}}`,
		`{"message":{"messageId":"m","taskId":"t","contextId":"c","role":"ROLE_USER","parts":[{"data":{"questionId":"q","costCentre":"CC-4410"},"mediaType":"application/json"}]},"configuration":{"historyLength":1,"returnImmediately":true}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"\u003cé\u003e\n","metadata":{"k":[1.5e3,"x",null,true,{}]}}],"extensions":["https://x/ext"],"referenceTaskIds":["a","b"],"metadata":{"m":false}},"metadata":{"x":null},"tenant":"t1"}`,
	} {
		var w sendMessageWire
		if !w.readJSON([]byte(raw)) {
			t.Errorf("%s: not read in one pass", raw)
		}
	}
}
