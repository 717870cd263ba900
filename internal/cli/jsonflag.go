package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// jsonObject reads a flag's value as a JSON object. Its error names the
// flag and what is wrong in words ("--data is not a JSON object: it is an
// array"), never a Go type.
func jsonObject(flag, s string) (map[string]any, error) {
	// Into any, the decoder's errors are about the syntax only: a type
	// error would name Go's types.
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", flag, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object: it is %s", flag, text.JSONKind(v))
	}
	return obj, nil
}

// requestParts are a request's parts from a command's TEXT and --data: a
// text part, a JSON data part, or both.
func requestParts(words, data string) (a2a.ContentParts, error) {
	if words == "" && data == "" {
		return nil, errors.New("nothing to send: give TEXT, --data, or both")
	}
	var parts a2a.ContentParts
	if words != "" {
		parts = append(parts, a2a.NewTextPart(words))
	}
	if data != "" {
		v, err := jsonObject("--data", data)
		if err != nil {
			return nil, err
		}
		p := a2a.NewDataPart(v)
		p.MediaType = question.MediaTypeJSON
		parts = append(parts, p)
	}
	return parts, nil
}
