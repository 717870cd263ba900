package sqlite

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/askpoint/askpoint/store"
)

// Secret returns the secret called name, creating it on the first call.
// The insert and the read back are one write transaction, and SQLite lets
// one writer at a time at the file, so of two processes racing to create it
// the second reads what the first wrote.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("sqlite: Secret: empty name")
	}
	fresh := make([]byte, store.SecretSize)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("sqlite: Secret(%q): %w", name, err)
	}
	var got []byte
	err := s.write(ctx, func(b *batch) error {
		if _, err := b.exec(`INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			name, fresh, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("sqlite: Secret(%q): %w", name, err)
		}
		if err := b.queryRow(`SELECT value FROM secrets WHERE name = ?`, name).Scan(&got); err != nil {
			return fmt.Errorf("sqlite: Secret(%q): %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}
