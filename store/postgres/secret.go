package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/askpoint/askpoint/store"
)

// Secret returns the secret called name, creating it on the first call. The
// insert does nothing when a row is there (or lands first: a racing insert
// waits for the other's commit, then does nothing), and the read that
// follows is a statement of its own, which sees the committed row.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("postgres: Secret: empty name")
	}
	fresh := make([]byte, store.SecretSize)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("postgres: Secret(%q): %w", name, err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
		return nil, fmt.Errorf("postgres: Secret(%q): %w", name, err)
	}
	var got []byte
	if err := s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&got); err != nil {
		return nil, fmt.Errorf("postgres: Secret(%q): %w", name, err)
	}
	return got, nil
}
