package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// The writer's statements run on its connection at the driver level, not
// through database/sql: a batch takes the connection from the pool
// (sql.Conn.Raw) for as long as it runs, begins, runs its ops and commits
// there, and hands it back. database/sql costs each statement a
// []driver.NamedValue of its own, a Rows or a Result wrapper, a dependency
// entry and a lock round; here the arguments go into one slice the writer
// keeps, and the prepared statements are the driver's own, prepared once on
// the connection. What the batch's ops see is what they saw through
// database/sql: Exec, QueryRow(...).Scan (sql.ErrNoRows when there is no
// row), Query with Next/Scan/Err/Close, and the same argument conversions
// (driver.DefaultParameterConverter). See
// docs/decisions/0175-the-writer-below-database-sql.md.

// wstmt is a prepared write statement of a batch (batch.stmt).
type wstmt struct {
	b  *batch
	st driver.Stmt
}

// Exec runs the statement with args.
func (st wstmt) Exec(args ...any) (driver.Result, error) {
	nv, err := st.b.bind(args)
	if err != nil {
		return nil, err
	}
	return st.st.(driver.StmtExecContext).ExecContext(context.Background(), nv)
}

// Query runs the statement with args and returns its rows.
func (st wstmt) Query(args ...any) (*wrows, error) {
	nv, err := st.b.bind(args)
	if err != nil {
		return nil, err
	}
	rows, err := st.st.(driver.StmtQueryContext).QueryContext(context.Background(), nv)
	if err != nil {
		return nil, err
	}
	return st.b.rowsOf(rows), nil
}

// QueryRow runs the statement with args; Scan reads its first row.
func (st wstmt) QueryRow(args ...any) wrow {
	rows, err := st.Query(args...)
	return wrow{rows: rows, err: err}
}

// exec runs one statement that is not prepared (a rare write).
func (b *batch) exec(query string, args ...any) (driver.Result, error) {
	nv, err := b.bind(args)
	if err != nil {
		return nil, err
	}
	return b.dc.(driver.ExecerContext).ExecContext(context.Background(), query, nv)
}

// queryRow runs one query that is not prepared; Scan reads its first row.
func (b *batch) queryRow(query string, args ...any) wrow {
	nv, err := b.bind(args)
	if err != nil {
		return wrow{err: err}
	}
	rows, err := b.dc.(driver.QueryerContext).QueryContext(context.Background(), query, nv)
	if err != nil {
		return wrow{err: err}
	}
	return wrow{rows: b.rowsOf(rows)}
}

// bind converts args as database/sql does into the writer's argument
// slice, which the driver has done with when the statement returns.
func (b *batch) bind(args []any) ([]driver.NamedValue, error) {
	nv := b.s.wargs[:0]
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	b.s.wargs = nv
	return nv, nil
}

func (b *batch) rowsOf(rows driver.Rows) *wrows {
	r := &wrows{rows: rows}
	if n := len(rows.Columns()); n <= len(r.buf) {
		r.vals = r.buf[:n]
	} else {
		r.vals = make([]driver.Value, n)
	}
	return r
}

// wrows are a query's rows, read as sql.Rows reads them.
type wrows struct {
	rows   driver.Rows
	vals   []driver.Value
	buf    [8]driver.Value // vals, for up to 8 columns
	err    error
	closed bool
}

// Next reads the next row; false at the end or on an error (Err).
func (r *wrows) Next() bool {
	if r.closed {
		return false
	}
	if err := r.rows.Next(r.vals); err != nil {
		if err != io.EOF {
			r.err = err
		}
		r.Close()
		return false
	}
	return true
}

// Scan copies the row's columns into dest.
func (r *wrows) Scan(dest ...any) error {
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sqlite: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, v := range r.vals {
		if err := assign(dest[i], v); err != nil {
			return fmt.Errorf("sqlite: column %d: %w", i, err)
		}
	}
	return nil
}

func (r *wrows) Err() error { return r.err }

func (r *wrows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.rows.Close()
}

// wrow is QueryRow's row.
type wrow struct {
	rows *wrows
	err  error
}

// Scan reads the first row into dest and closes the rows; sql.ErrNoRows
// when there is none.
func (r wrow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// assign stores a column value in dest, for the destinations the writer's
// ops scan into, as database/sql's Scan would.
func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case sql.Scanner:
		return d.Scan(v)
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
			return nil
		case []byte:
			*d = string(x)
			return nil
		}
	case *[]byte:
		switch x := v.(type) {
		case []byte: // the driver's own copy
			*d = x
			return nil
		case string:
			*d = []byte(x)
			return nil
		case nil:
			*d = nil
			return nil
		}
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
	case *int:
		if x, ok := v.(int64); ok {
			*d = int(x)
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}

// prepareWriter prepares the write statements on the driver connection dc.
// Those prepared on an earlier connection, one database/sql has replaced
// (and closed), are left as they are: the driver has let go of that
// connection's state, so they can be neither run nor finalized, and SQLite
// keeps the closed handle's memory for them. The writer's connection has no
// lifetime, so that happens only after a driver error has made database/sql
// drop it (TestWriterPreparesAgainOnANewConnection).
func (s *Store) prepareWriter(dc any) error {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return errors.New("sqlite: the driver cannot prepare statements")
	}
	var stmts [numWriteStmts]driver.Stmt
	for i, q := range writeSQL {
		st, err := pc.PrepareContext(context.Background(), q)
		if err != nil {
			for _, st := range stmts[:i] {
				st.Close()
			}
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		stmts[i] = st
	}
	s.wstmts, s.wdc = stmts, dc
	return nil
}

// closeWriterStmts closes the prepared write statements on their
// connection, once the writer has stopped.
func (s *Store) closeWriterStmts() {
	if s.w == nil || s.wdc == nil {
		return
	}
	c, err := s.w.Conn(context.Background())
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.Raw(func(dc any) error {
		if dc != s.wdc {
			return nil // prepared on a connection that is gone, with it
		}
		for _, st := range s.wstmts {
			st.Close()
		}
		return nil
	})
}
