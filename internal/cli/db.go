package cli

import (
	"context"
	"flag"
	"os"
	"path/filepath"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
	"github.com/askpoint/askpoint/store/sqlite"
)

// EnvDB names the environment variable that gives --db when the flag is
// not: the place for a postgres:// URL that holds a password, which the
// process list would show.
const EnvDB = "ASKPOINT_DB"

// dbFlag defines --db on fs, for every command that opens the store, and
// returns what to call after fs.Parse: the flag's value when it was given
// (flagged), else $ASKPOINT_DB when set, else def.
func dbFlag(fs *flag.FlagSet, def, usage string) func() (db string, flagged bool) {
	db := fs.String("db", def, usage+" (default $"+EnvDB+" when set; keep a password out of the process list with $"+EnvDB+", $PGPASSWORD or ~/.pgpass)")
	return func() (string, bool) {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "db" })
		if env := os.Getenv(EnvDB); !given && env != "" {
			return env, false
		}
		return *db, given
	}
}

// openReadOnly opens the store at db (an SQLite file or a postgres:// URL)
// for reading only: nothing is created, migrated or written, so it is safe
// beside running servers. where says what was opened, never a password.
func openReadOnly(ctx context.Context, db string) (st store.Store, where string, err error) {
	if postgres.IsURL(db) {
		pg, err := postgres.OpenWith(ctx, db, postgres.Options{ReadOnly: true, MaxConns: 2})
		if err != nil {
			return nil, "", err
		}
		return pg, "PostgreSQL " + postgres.Redact(db), nil
	}
	path, err := filepath.Abs(db)
	if err != nil {
		return nil, "", err
	}
	lite, err := sqlite.OpenWith(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, "", err
	}
	return lite, path, nil
}
