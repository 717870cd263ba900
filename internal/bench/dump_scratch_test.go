package bench

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

func TestScratchDump(t *testing.T) {
	dir := t.TempDir()
	if _, err := MeasureDisk(t.Context(), dir, 3000); err != nil {
		t.Fatal(err)
	}
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "disk.db"))
	defer db.Close()
	var rows *sql.Rows
	rows, _ = db.Query(`SELECT t.state, l.seq, l.kind, avg(length(l.body)), avg(length(l.message_id)) FROM task_log l JOIN tasks t ON t.id = l.task_id GROUP BY 1,2,3`)
	for rows.Next() {
		var st, k string
		var seq int
		var a, m float64
		rows.Scan(&st, &seq, &k, &a, &m)
		fmt.Println("LOGSZ", st, seq, k, a, m)
	}
	rows.Close()
	rows, _ = db.Query(`SELECT state, avg(length(status)), avg(length(artifacts)), avg(length(checkpoint)), avg(length(question)), avg(length(pause)), avg(length(request_key)) FROM tasks GROUP BY 1`)
	for rows.Next() {
		var st string
		var a, b, c, d, e, f float64
		rows.Scan(&st, &a, &b, &c, &d, &e, &f)
		fmt.Println("TASKSZ", st, a, b, c, d, e, f)
	}
	rows.Close()
	rows, _ = db.Query(`SELECT name, sum(pgsize), sum(payload), count(*) FROM dbstat GROUP BY name`)
	if rows != nil {
		for rows.Next() {
			var n string
			var a, b, c int
			rows.Scan(&n, &a, &b, &c)
			fmt.Println("DBSTAT", n, a, b, c)
		}
	}
}
