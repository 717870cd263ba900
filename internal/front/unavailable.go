package front

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/askpoint/askpoint/internal/engine"
)

// unavailableWriter turns the HTTP+JSON answer to a request the store could
// not serve for a moment (engine.IsUnavailable: the SDK's transport writes
// it as 500 INTERNAL) into 503 UNAVAILABLE with Retry-After, so that
// clients and proxies know to send it again. The error's ErrorInfo carries
// retryAfterSeconds, which is how its body is told from other 500s. Any
// other response passes through untouched.
type unavailableWriter struct {
	http.ResponseWriter
	held bool // a 500 whose body decides its status
	done bool
}

var (
	unavailableMark = []byte(`"retryAfterSeconds"`)
	retryAfter      = strconv.Itoa(engine.RetryAfter)
)

func (w *unavailableWriter) WriteHeader(code int) {
	if w.done || w.held {
		return
	}
	if code == http.StatusInternalServerError {
		w.held = true
		return
	}
	w.done = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *unavailableWriter) Write(b []byte) (int, error) {
	if w.held && !w.done {
		w.done = true
		if bytes.Contains(b, unavailableMark) {
			w.Header().Set("Retry-After", retryAfter)
			w.Header().Del("Content-Length")
			w.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
			n := len(b)
			b = bytes.Replace(b, []byte(`"code":500`), []byte(`"code":503`), 1)
			b = bytes.Replace(b, []byte(`"status":"INTERNAL"`), []byte(`"status":"UNAVAILABLE"`), 1)
			_, err := w.ResponseWriter.Write(b)
			return n, err
		}
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
	}
	w.done = true
	return w.ResponseWriter.Write(b)
}

// Flush lets event streams through.
func (w *unavailableWriter) Flush() {
	if w.held && !w.done {
		w.done = true
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (w *unavailableWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held status that no body followed.
func (w *unavailableWriter) finish() {
	if w.held && !w.done {
		w.done = true
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
	}
}
