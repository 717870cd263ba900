package pack

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// goldenCase is a value packed against k (through an Index when indexed)
// whose packed bytes TestPackedBytesStayTheSame holds.
type goldenCase struct {
	name    string
	b       string
	k       Known
	indexed bool
}

func goldenCases() []goldenCase {
	status := entry[len(`{"contextId":"`+ctxID+`",`)+len(`"status":`) : len(entry)-len(`,"taskId":"`+taskID+`"}`)]
	odd := `{"note":"plain words, xyz; zz-task q-ctx {braces} [1,2] and 01a237dd-8632-7cfb-a5cb-48c5e2bd904c at 2026-12-02T17:46:34Z","n":[7,-3.5e9],"u":"\u00e9 ünïcode","TASK_STATE_FAILED":"INPUT_REQUIRED"}`
	return []goldenCase{
		{"entry", entry, Known{TaskID: taskID}, false},
		{"question", question, Known{TaskID: taskID, ContextID: ctxID, Ref: []byte(entry)}, false},
		{"question indexed", question, Known{TaskID: taskID, ContextID: ctxID, Ref: []byte(entry)}, true},
		{"status indexed", status, Known{TaskID: taskID, ContextID: ctxID, Ref: []byte(entry)}, true},
		{"odd", odd, Known{TaskID: "zz-task", ContextID: "q-ctx"}, false},
		{"odd against itself", odd, Known{TaskID: "zz-task", ContextID: "q-ctx", Ref: []byte(odd[20:])}, true},
		{"key", "01a237dd-8631-7a74-ae91-e5ad4417da08", Known{}, false},
		{"text key", "req-paused", Known{}, false},
	}
}

// The packed bytes are stored, by both SQL stores: what Pack makes of
// these values, as it made them when this test was written (main at
// 5f71c20), is what it must make now. A faster Pack that packs anything
// differently fails here, not only on files written before it.
var golden = map[string]string{
	"entry":              "01080401a237dd863271748e2b5c8650fd4ec0222c0c0401a237dd86327cfba5cb48c5e2bd904c0b0401a237dd863271748e2b5c8650fd4ec0221713576869636820636f73742063656e7472652073686f756c64207468697320657870656e7365206265206368617267656420746f3f2043432d34343130206f722043432d343432302e227d2c181c22636f737443656e747265223a7b06065e43432d5b302d395d7b347d24222c1d7d7d060322636f737443656e747265225d2c1e7d2c1f07f4ab8db10d03a303222c060143432d34343130060243432d34343230227d5d2c1b712d302d653061353363663837613964227d2c167d5d2c151a02227d0d0f1207f4e582b10d09f481bac701227d1a02227d",
	"question":           "017b05a7041f2c05ef01512c05ce0326616e73776572536368656d6105d802776f7074696f6e7305fb032d617474656d7074223a312c0608337d",
	"question indexed":   "017b05a7041f2c05ef01512c05ce0326616e73776572536368656d6105d802776f7074696f6e7305fb032d617474656d7074223a312c0608337d",
	"status indexed":     "01053dc205",
	"odd":                "017b226e6f7465223a22706c61696e20776f7264732c2078797a3b20022003207b6272616365737d205b312c325d20616e64200401a237dd86327cfba5cb48c5e2bd904c2061742007f4e582b10d0000222c226e223a5b372c2d332e3565395d2c2275223a225c753030653920c3bc6ec3af636f6465222c061a060d223a220f227d",
	"odd against itself": "017b226e6f7465223a22706c61696e20776f7264732c2078797a3b200220032005159c01",
	"key":                "010401a237dd86317a74ae91e5ad4417da08",
	"text key":           "017265712d706175736564",
}

func TestPackedBytesStayTheSame(t *testing.T) {
	cases := goldenCases()
	if len(cases) != len(golden) {
		t.Fatalf("%d cases, %d golden values", len(cases), len(golden))
	}
	for _, c := range cases {
		k := c.k
		if c.indexed {
			k = k.WithIndex()
		}
		got := hex.EncodeToString(Pack(nil, []byte(c.b), k))
		k.Release()
		if got != golden[c.name] {
			t.Errorf("%s: Pack = %s\nwant %s", c.name, got, golden[c.name])
		}
	}
}

// WithIndex indexes the places of its Ref eight bytes at a time: it must
// index the same places, in the same order (the slots taken first win), as
// a look at every byte would, for a start byte at every place of a word,
// among bytes one off from one ('#', 'z', '\\'), and up to the last
// place a run fits.
func TestIndexHasEveryRunStart(t *testing.T) {
	var refs [][]byte
	for n := minRef; n < 40; n++ {
		for at := range n {
			for _, c := range []byte{'"', '{', '['} {
				ref := bytes.Repeat([]byte{'#', 'z', '\\', '!'}, n)[:n]
				ref[at] = c
				refs = append(refs, ref)
			}
		}
	}
	refs = append(refs, []byte(entry), []byte(question))
	for _, ref := range refs {
		var want Index
		for i := 0; i+minRef <= len(ref); i++ {
			if c := ref[i]; c == '"' || c == '{' || c == '[' || i == 0 {
				want.add(ref, i)
			}
		}
		k := Known{Ref: ref}.WithIndex()
		if k.index.slots != want.slots {
			t.Errorf("WithIndex(%q) indexed other places than every byte's look", ref)
		}
		k.Release()
	}
}
