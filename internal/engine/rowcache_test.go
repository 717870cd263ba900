package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

func keptTask(id string, statusBytes int) (*store.Task, []store.LogEntry) {
	status := json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), statusBytes)) + `"`)
	t := &store.Task{ID: id, Version: 1, State: a2a.TaskStateInputRequired, Status: status}
	return t, []store.LogEntry{{Kind: store.KindMessage, MessageID: "m-" + id, Body: json.RawMessage(`{"messageId":"m-` + id + `"}`)}}
}

// The kept rows stay within their bounds: a row too large is not kept,
// and many rows never hold more than rowCacheSize tasks or rowCacheBytes.
func TestRowCacheKeepsWithinItsBounds(t *testing.T) {
	var c rowCache
	big, entries := keptTask("big", rowCacheMaxRow+1)
	c.wrote(big, entries, true)
	if _, ok := c.load("big", store.LoadParams{}); ok || c.bytes != 0 {
		t.Errorf("a row of %d bytes: kept %v, %d bytes held; want not kept, 0", rowCacheMaxRow+1, ok, c.bytes)
	}

	for i := range 2 * rowCacheSize {
		task, entries := keptTask(fmt.Sprint("t", i), 16<<10)
		c.wrote(task, entries, true)
		if c.lru.Len() > rowCacheSize || c.bytes > rowCacheBytes || len(c.m) != c.lru.Len() {
			t.Fatalf("after %d rows: %d kept (%d in the map), %d bytes; want at most %d and %d", i+1, c.lru.Len(), len(c.m), c.bytes, rowCacheSize, rowCacheBytes)
		}
	}
	last := fmt.Sprint("t", 2*rowCacheSize-1)
	l, ok := c.load(last, store.LoadParams{MessageID: "m-" + last, Request: true})
	if !ok || l.Task.ID != last || l.Message == nil || l.Request == nil {
		t.Fatalf("the newest row: %+v, %v; want it kept with its message and request", l, ok)
	}
	if _, ok := c.load("t0", store.LoadParams{}); ok {
		t.Error("the oldest row is still kept, want it evicted")
	}
	want := 0
	for el := c.lru.Front(); el != nil; el = el.Next() {
		want += el.Value.(*cachedRow).size
	}
	if c.bytes != want {
		t.Errorf("bytes held = %d, the rows' sizes add up to %d", c.bytes, want)
	}
}
