// Package pgcluster starts a PostgreSQL cluster of a test's own, so that a
// fault test can stop and restart its database without disturbing any
// other test: initdb into the test's temporary directory, the server run
// as the postgres user (runuser) on a free port of 127.0.0.1, trust auth.
//
// The binaries are PostgreSQL 15's (/usr/lib/postgresql/15/bin, or the
// directory PGBIN names). Without them the test skips; when they are there
// any failure to start fails the test, under CI or not.
package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running PostgreSQL cluster of one test.
type Cluster struct {
	t    testing.TB
	bin  string
	dir  string // data directory
	log  string
	Port int
}

// Bin is where the PostgreSQL binaries are looked for.
func Bin() string {
	if b := os.Getenv("PGBIN"); b != "" {
		return b
	}
	return "/usr/lib/postgresql/15/bin"
}

// Available reports whether the binaries and a postgres user are here.
func Available() bool {
	if _, err := os.Stat(filepath.Join(Bin(), "initdb")); err != nil {
		return false
	}
	if _, err := user.Lookup("postgres"); err != nil {
		return false
	}
	_, err := exec.LookPath("runuser")
	return err == nil && os.Geteuid() == 0
}

// Start creates and starts a cluster, stopped when the test ends. It skips
// the test when PostgreSQL's binaries, the postgres user or root (to run
// as that user) are missing, saying which; in CI (CI set) it fails then.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if !Available() {
		msg := fmt.Sprintf("the fault harness needs PostgreSQL's binaries in %s (or PGBIN), a postgres user and root to run as it", Bin())
		if os.Getenv("CI") != "" && binsPresent() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	root := t.TempDir()
	// t.TempDir's directories are 0700 root: the postgres user must reach
	// its data directory inside.
	for d := root; d != filepath.Dir(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		if d == os.TempDir() {
			break
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatalf("pgcluster: chmod %s: %v", d, err)
		}
	}
	c := &Cluster{t: t, bin: Bin(), dir: filepath.Join(root, "data"), log: filepath.Join(root, "postgres.log"), Port: freePort(t)}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range []string{c.dir} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(c.log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(c.log, uid, gid)
	c.run("initdb", "-D", c.dir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = ''\nfsync = off\nmax_connections = 200\nshared_buffers = 32MB\n", c.Port)
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(conf)
	_ = f.Close()
	c.StartServer()
	t.Cleanup(func() { c.pgctl("stop", "-m", "immediate") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.adminURL())
	if err != nil {
		t.Fatalf("pgcluster: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE test"); err != nil {
		t.Fatalf("pgcluster: create database: %v", err)
	}
	return c
}

func binsPresent() bool {
	_, err := os.Stat(filepath.Join(Bin(), "initdb"))
	return err == nil
}

// URL is the test database's URL.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/test?sslmode=disable", c.Port)
}

func (c *Cluster) adminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
}

// StartServer starts the server and returns once it accepts connections.
func (c *Cluster) StartServer() { c.pgctl("start", "-w", "-t", "30", "-l", c.log) }

// Stop stops the server in fast mode (sessions are ended with 57P01).
func (c *Cluster) Stop() { c.pgctl("stop", "-w", "-m", "fast") }

// Restart stops the server in fast mode and starts it again; it returns
// once it accepts connections.
func (c *Cluster) Restart() { c.pgctl("restart", "-w", "-m", "fast", "-t", "30", "-l", c.log) }

func (c *Cluster) pgctl(args ...string) {
	c.run("pg_ctl", append([]string{"-D", c.dir}, args...)...)
}

func (c *Cluster) run(name string, args ...string) {
	c.t.Helper()
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, name)}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		logTail, _ := os.ReadFile(c.log)
		c.t.Fatalf("pgcluster: %s %v: %v\n%s\nserver log:\n%s", name, args, err, out.String(), logTail)
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
