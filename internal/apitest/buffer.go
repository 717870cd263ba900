package apitest

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// SyncBuffer is a log destination a test reads while the server's
// goroutines write to it.
type SyncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next write, made by WaitFor
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// WaitFor reports whether what is written holds text within d, looking
// again at each write.
func (s *SyncBuffer) WaitFor(text string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), text) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-deadline:
			return false
		}
	}
}

// String is what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
