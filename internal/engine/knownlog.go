package engine

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/store"
)

// The history a node knows without reading it: what it wrote of a task's
// log (knownLog), so that a reply is built from the write that made it.

// knownLog is the newest entries of a task's log, as written by this node
// up to version (nothing else wrote the task in between: every write was a
// compare-and-set on the one before). fromStart: they are the whole log.
type knownLog struct {
	// The entries, in the writes that made them: each write's list as the
	// write had it (shared, never changed), so that a write is recorded
	// without copying its entries. The first writes' lists sit in inline,
	// any further ones in more.
	inline    [4][]store.LogEntry
	more      [][]store.LogEntry
	writes    int
	fromStart bool
	version   int64
	// noPriorArtifacts: the task had no artifacts before entries, so
	// theirs are all it has.
	noPriorArtifacts bool
	// raw is the JSON this node wrote for messages of entries that carry
	// no body (freshHistory's), so that a reply writes it as it is.
	raw [2]knownMessage
}

// knownMessage is a message and the JSON this node wrote for it.
type knownMessage struct {
	m   *a2a.Message
	raw json.RawMessage
}

// messageBytes is the JSON of history entry e's message as this node wrote
// it (historyBytes, or what freshHistory was given), nil when not known.
func (k *knownLog) messageBytes(e store.LogEntry, t *store.Task) json.RawMessage {
	if b := historyBytes(e, t); b != nil || k == nil || e.Message == nil {
		return b
	}
	for _, r := range k.raw {
		if r.m == e.Message {
			return r.raw
		}
	}
	return nil
}

// write is the entries of the i-th write known, 0 <= i < k.writes.
func (k *knownLog) write(i int) []store.LogEntry {
	if i < len(k.inline) {
		return k.inline[i]
	}
	return k.more[i-len(k.inline)]
}

// historyEntries calls f with each known entry in the history, oldest
// first, skipping the first skip of them; it stops at f's first error.
func (k *knownLog) historyEntries(skip int, f func(store.LogEntry) error) error {
	for i := range k.writes {
		for _, e := range k.write(i) {
			if !e.InHistory {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if err := f(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// newKnownLog is a known log with nothing in it yet: fromStart when what
// is added will be the task's whole log, noPriorArtifacts when the task
// has no artifacts before it.
func newKnownLog(fromStart, noPriorArtifacts bool) *knownLog {
	return &knownLog{fromStart: fromStart, noPriorArtifacts: noPriorArtifacts}
}

// historyLen is how many of the known entries are in the task's history;
// whole is false when they are not the whole log (then n is 0).
func (k *knownLog) historyLen() (n int, whole bool) {
	if k == nil || !k.fromStart {
		return 0, false
	}
	_ = k.historyEntries(0, func(store.LogEntry) error { n++; return nil })
	return n, true
}

// status is t's status from the newest status entry known, ok false when
// none is known.
func (k *knownLog) status(t *store.Task) (a2a.TaskStatus, bool) {
	e, ok := k.statusEntry(t)
	if !ok {
		return a2a.TaskStatus{}, false
	}
	ts := e.At
	return a2a.TaskStatus{State: t.State, Message: e.Message, Timestamp: &ts}, true
}

// statusEntry is the newest status entry known of t.
func (k *knownLog) statusEntry(t *store.Task) (store.LogEntry, bool) {
	if k == nil || k.version != t.Version {
		return store.LogEntry{}, false
	}
	for w := k.writes - 1; w >= 0; w-- {
		entries := k.write(w)
		for i := len(entries) - 1; i >= 0; i-- {
			if e := entries[i]; e.Kind == store.KindStatus {
				return e, true
			}
		}
	}
	return store.LogEntry{}, false
}

// artifacts are t's artifacts when every one of them is known (whole, not
// chunked).
func (k *knownLog) artifacts(t *store.Task) ([]*a2a.Artifact, bool) {
	if k == nil || k.version != t.Version || !(k.fromStart || k.noPriorArtifacts) {
		return nil, false
	}
	var out []*a2a.Artifact
	for w := range k.writes {
		for _, e := range k.write(w) {
			if e.Kind != store.KindArtifact {
				continue
			}
			if e.Artifact == nil {
				return nil, false // a chunk: what the task holds is read
			}
			out = append(out, e.Artifact)
		}
	}
	return out, len(out) > 0
}

// freshHistory is what a task's log is known to hold before an answer to
// its open question: its request and the question (see pauseState.Fresh),
// nil when that is not known.
// open is the task's open question's ID (openQuestionID); asked, when not
// nil, is the message of t's status as this node wrote it (rowCache).
// paused, when not nil, is t's pause state already decoded. requestRaw and
// askedRaw, when not nil, are the JSON this node wrote for request and
// asked (the bytes they were decoded from, or encoded to).
func freshHistory(t *store.Task, open string, request *a2a.Message, requestRaw json.RawMessage, asked *a2a.Message, askedRaw json.RawMessage, paused *pauseState) *knownLog {
	if request == nil || len(t.Pause) == 0 || open == "" {
		return nil
	}
	fresh := ""
	if paused != nil {
		fresh = paused.Fresh
	} else {
		var p struct {
			Fresh string `json:"fresh"`
		}
		if json.Unmarshal(t.Pause, &p) != nil {
			return nil
		}
		fresh = p.Fresh
	}
	if fresh == "" || fresh != open {
		return nil
	}
	if asked == nil {
		var st a2a.TaskStatus
		if json.Unmarshal(t.Status, &st) != nil || st.Message == nil {
			return nil
		}
		asked, askedRaw = st.Message, nil
	}
	k := &knownLog{fromStart: true, noPriorArtifacts: len(t.Artifacts) == 0, writes: 1}
	k.inline[0] = []store.LogEntry{
		{Kind: store.KindMessage, InHistory: true, Message: request},
		{Kind: store.KindStatus, InHistory: true, Message: asked},
	}
	if requestRaw != nil {
		k.raw[0] = knownMessage{m: request, raw: requestRaw}
	}
	if askedRaw != nil {
		k.raw[1] = knownMessage{m: asked, raw: askedRaw}
	}
	return k
}

// clone is a copy of k the caller may extend on its own.
func (k *knownLog) clone() *knownLog {
	if k == nil {
		return nil
	}
	c := *k
	c.more = slices.Clone(k.more)
	return &c
}

// add records a write of entries that made version.
func (k *knownLog) add(entries []store.LogEntry, version int64) *knownLog {
	if k == nil {
		k = &knownLog{}
	}
	if len(entries) > 0 {
		entries = slices.Clip(entries) // shared: an append copies
		if k.writes < len(k.inline) {
			k.inline[k.writes] = entries
		} else {
			k.more = append(k.more, entries)
		}
		k.writes++
	}
	k.version = version
	return k
}

// history says which of the known entries are the task's history (its
// last last entries, all when last is negative): the first skip of those
// historyEntries gives are not, and n are; ok false when that needs a read.
func (k *knownLog) history(t *store.Task, last int) (skip, n int, ok bool) {
	if k == nil || k.version != t.Version {
		return 0, 0, false
	}
	all := 0
	_ = k.historyEntries(0, func(store.LogEntry) error { all++; return nil })
	switch {
	case last >= 0 && all >= last:
		return all - last, last, true
	case k.fromStart:
		return 0, all, true
	}
	return 0, 0, false
}

// artifactsBytes are the artifacts known holds (as known.artifacts returns
// them), nil unless every one has its body.
func (k *knownLog) artifactsBytes() []json.RawMessage {
	var out []json.RawMessage
	for w := range k.writes {
		for _, e := range k.write(w) {
			if e.Kind != store.KindArtifact {
				continue
			}
			end := bytes.LastIndex(e.Body, []byte(`,"contextId":`))
			if e.Artifact == nil || !bytes.HasPrefix(e.Body, []byte(artifactMark)) || end < len(artifactMark) {
				return nil
			}
			out = append(out, json.RawMessage(e.Body[len(artifactMark):end:end]))
		}
	}
	return out
}
