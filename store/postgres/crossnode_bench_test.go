package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// BenchmarkCrossNodeNotify splits, on two handles of one schema (node B
// writes, node A listens and reads), the time from a write's commit on B
// to A holding the new log entry, at p50 and p99 of b.N writes:
//
//	queue:   B's write returned -> B's notifier took its ID
//	acquire: the notifier getting a connection (decision 0270: its own,
//	         connected once; before, one from the pool)
//	notify:  the pg_notify statement, its commit included
//	deliver: the statement returned -> A's listener called
//	read:    A's ReadLog of the entries after the one it had
//	total:   B's write returned -> A's ReadLog returned
//
// Under "writers=N", N goroutines (half on each handle) update tasks of
// their own meanwhile, so the WAL and the notifier are busy as on a loaded
// node; at 32, 16 a handle are more than its pool's connections (12 at
// GOMAXPROCS 2). Each stops at the benchmark's end or after 100,000 writes.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench CrossNodeNotify -benchtime 300x ./store/postgres/
func BenchmarkCrossNodeNotify(b *testing.B) {
	for _, writers := range []int{0, 4, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchCrossNode(b, writers) })
	}
}

type sentAt struct{ began, conn, ended time.Time }

func benchCrossNode(b *testing.B, writers int) {
	url := dbtest.Schema(b)
	ctx := b.Context()
	nodeA, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer nodeA.Close()
	nodeB, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer nodeB.Close()

	const probe = "probe"
	sent := make(chan sentAt, 16)
	hook := func(batch []string, began, conn, ended time.Time) {
		if slices.Contains(batch, probe) {
			select {
			case sent <- sentAt{began, conn, ended}:
			default:
			}
		}
	}
	nodeB.notes.sent.Store(&hook)

	heard := make(chan time.Time, 16)
	lctx, stopListen := context.WithCancel(context.Background())
	listening := make(chan struct{})
	var once sync.Once
	lwg := sync.WaitGroup{}
	lwg.Go(func() {
		_ = nodeA.Listen(lctx, func(id string) {
			switch id {
			case "ready":
				once.Do(func() { close(listening) })
			case probe:
				select {
				case heard <- time.Now():
				default:
				}
			}
		})
	})
	defer func() { stopListen(); lwg.Wait() }()
	ready := sampleTask("ready")
	ready.Runnable = false
	cur, err := nodeB.CreateTask(ctx, ready, nil)
	if err != nil {
		b.Fatal(err)
	}
	for wait := true; wait; {
		select {
		case <-listening:
			wait = false
		case <-time.After(100 * time.Millisecond):
			if cur, err = nodeB.UpdateTask(ctx, cur, nil); err != nil {
				b.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			b.Fatal("node A's listener heard nothing in 10s")
		}
	}

	task, err := nodeB.CreateTask(ctx, sampleTask(probe), []store.LogEntry{{Kind: store.KindStatus}})
	if err != nil {
		b.Fatal(err)
	}
	<-heard
	<-sent

	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range writers {
		s := nodeB
		if i%2 == 1 {
			s = nodeA
		}
		wg.Go(func() {
			cur, err := s.CreateTask(wctx, sampleTask(fmt.Sprintf("load-%d", i)), nil)
			for n := 0; err == nil && n < 100_000 && wctx.Err() == nil; n++ {
				cur, err = s.UpdateTask(wctx, cur, []store.LogEntry{{Kind: store.KindStatus}})
			}
		})
	}
	defer func() { stopWriters(); wg.Wait() }()

	stages := []string{"queue", "acquire", "notify", "deliver", "read", "total"}
	d := make([][]time.Duration, len(stages))
	seq := task.LastSeq
	b.ResetTimer()
	for range b.N {
		task, err = nodeB.UpdateTask(ctx, task, []store.LogEntry{{Kind: store.KindStatus}})
		if err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		var at time.Time
		select {
		case at = <-heard:
		case <-time.After(10 * time.Second):
			b.Fatal("node A heard nothing of the write in 10s")
		}
		entries, err := nodeA.ReadLog(ctx, probe, seq, 256)
		if err != nil || len(entries) == 0 {
			b.Fatalf("ReadLog after %d = %d entries, %v; want the new one", seq, len(entries), err)
		}
		read := time.Now()
		seq = entries[len(entries)-1].Seq
		var s sentAt
		select {
		case s = <-sent:
		case <-time.After(10 * time.Second):
			b.Fatal("node B's notifier sent nothing in 10s")
		}
		for i, v := range []time.Duration{
			s.began.Sub(committed), s.conn.Sub(s.began), s.ended.Sub(s.conn),
			at.Sub(s.ended), read.Sub(at), read.Sub(committed),
		} {
			d[i] = append(d[i], max(v, 0))
		}
	}
	b.StopTimer()
	for i, name := range stages {
		slices.Sort(d[i])
		b.ReportMetric(float64(d[i][len(d[i])/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(d[i][len(d[i])*99/100].Microseconds())/1000, name+"-p99-ms")
	}
}
