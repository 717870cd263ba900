// Package migration reads a driver's embedded schema migrations. Each
// driver applies them its own way (its own locking and bookkeeping); the
// files and their naming rule are shared.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema migration: the version it brings the schema to,
// its file name and its SQL.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the migrations matching glob in fsys, named NNNN_name.sql
// (NNNN is the version), in version order. Applied migrations are never
// edited: a change is a new file.
func Load(fsys fs.FS, glob string) ([]Migration, error) {
	names, err := fs.Glob(fsys, glob)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", base)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s have the same version", other, base)
		}
		seen[v] = base
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}
