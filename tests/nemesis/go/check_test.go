package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// history writes ops as a history file and returns its path.
func history(t *testing.T, ops []Op) string {
	t.Helper()
	var b strings.Builder
	for _, op := range ops {
		line, _ := json.Marshal(op)
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func app(p int, v string, call, ret, off int64, typ string) Op {
	return Op{Process: p, F: "append", Type: typ, Value: v, Call: call, Return: ret, Offset: off}
}

func rd(p int, call, ret, from, upto int64, complete bool, recs ...Record) Op {
	return Op{Process: p, F: "read", Type: "ok", Call: call, Return: ret, From: from, Upto: upto,
		Complete: complete, Records: recs}
}

func verdict(t *testing.T, ops []Op) int {
	t.Helper()
	html := filepath.Join(t.TempDir(), "p.html")
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	stdout := os.Stdout
	os.Stdout = devnull
	defer func() { os.Stdout = stdout }()
	return check([]string{"-history", history(t, ops), "-html", html})
}

func TestLinearizableHistoryPasses(t *testing.T) {
	ops := []Op{
		app(0, "a", 1, 5, 1, "ok"), // offset 0 is a control record
		app(1, "b", 2, 6, 2, "ok"),
		rd(2, 7, 8, 0, 3, true, Record{1, "a"}, Record{2, "b"}),
		rd(2, 3, 4, 0, 1, true), // concurrent with both appends: may see neither
	}
	if got := verdict(t, ops); got != 0 {
		t.Fatalf("verdict %d, want 0", got)
	}
}

func TestStaleReadIsCaught(t *testing.T) {
	ops := []Op{
		app(0, "a", 1, 2, 1, "ok"),
		rd(1, 3, 4, 0, 1, true), // after a's ack, a complete read below its offset
	}
	if got := verdict(t, ops); got != 1 {
		t.Fatalf("verdict %d, want 1", got)
	}
}

func TestLostAndReplacedAppendIsCaught(t *testing.T) {
	ops := []Op{
		app(0, "a", 1, 2, 1, "ok"),
		app(1, "b", 3, 4, 1, "ok"), // the same offset acknowledged twice
	}
	if got := verdict(t, ops); got != 1 {
		t.Fatalf("verdict %d, want 1", got)
	}
}

func TestUnknownAppendSeenByAReadIsPlaced(t *testing.T) {
	ops := []Op{
		app(0, "a", 1, 2, 0, "info"),
		app(1, "b", 3, 4, 2, "ok"),
		rd(2, 5, 6, 0, 3, true, Record{1, "a"}, Record{2, "b"}),
		app(0, "c", 7, 8, 0, "info"), // never seen: dropped
	}
	if got := verdict(t, ops); got != 0 {
		t.Fatalf("verdict %d, want 0", got)
	}
}

func TestNeverSentAppendInTheLogIsCaught(t *testing.T) {
	ops := []Op{
		app(0, "a", 1, 2, 0, "fail"),
		rd(1, 3, 4, 0, 2, true, Record{1, "a"}),
	}
	if got := verdict(t, ops); got != 1 {
		t.Fatalf("verdict %d, want 1", got)
	}
}

func TestReadOfAValueNobodyWroteIsCaught(t *testing.T) {
	ops := []Op{rd(1, 3, 4, 0, 2, true, Record{1, "ghost"})}
	if got := verdict(t, ops); got != 1 {
		t.Fatalf("verdict %d, want 1", got)
	}
}

func TestRecordBatchRoundTrips(t *testing.T) {
	b := recordBatch([]byte("hello"), 42)
	recs, end, err := parseBatches(b)
	if err != nil || end != 1 || len(recs) != 1 || recs[0] != (Record{0, "hello"}) {
		t.Fatalf("got %v %d %v", recs, end, err)
	}
	b[len(b)-3] ^= 1
	if _, _, err := parseBatches(b); err == nil {
		t.Fatal("a flipped bit passed the CRC")
	}
}
