// The checker: porcupine (an outside linearizability checker) against a sequential model of
// the committed log, an append-only sequence of (offset, value) data records.
//
// Model: append(v) -> o is legal iff o is above every offset in the log (commit order is
// offset order); read(from) -> (records, upto, complete) is legal iff the log's records in
// [from, upto) are exactly `records` and, when the answer reached the high watermark
// (complete), the log holds nothing at or above it. Unknown (info) appends whose value no
// read ever saw are dropped (had one committed, a read covering its offset would show it);
// one a read saw is kept at that offset with an open end (it may linearize any time after
// its invocation). Failed appends (never sent) and reads that failed change nothing. A value
// read that no client appended, or a never-sent append that a read saw, is a violation
// without porcupine.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type logState struct {
	off  int64
	val  string
	prev *logState
	n    int
	h    uint64
}

type input struct {
	read  bool
	value string
	from  int64
	node  int // which node answered (for the report only)
}

type output struct {
	offset   int64
	upto     int64
	complete bool
	records  []Record
	open     bool // an info append kept because a read saw it
}

func push(s *logState, off int64, val string) *logState {
	f := fnv.New64a()
	fmt.Fprintf(f, "%d=%s", off, val)
	n, h := 1, f.Sum64()
	if s != nil {
		n, h = s.n+1, s.h*1099511628211^h
	}
	return &logState{off: off, val: val, prev: s, n: n, h: h}
}

func step(state, in, out interface{}) (bool, interface{}) {
	s, _ := state.(*logState)
	i, o := in.(input), out.(output)
	if !i.read {
		if s != nil && o.offset <= s.off {
			return false, state
		}
		return true, push(s, o.offset, i.value)
	}
	if o.complete && s != nil && s.off >= o.upto {
		return false, state // a committed record at or above the HW the read reported
	}
	var seen []Record
	for e := s; e != nil && e.off >= i.from; e = e.prev {
		if e.off < o.upto {
			seen = append(seen, Record{Offset: e.off, Value: e.val})
		}
	}
	var want []Record
	for _, r := range o.records {
		if r.Offset >= i.from && r.Offset < o.upto {
			want = append(want, r)
		}
	}
	if len(seen) != len(want) {
		return false, state
	}
	for k := range want {
		if seen[len(seen)-1-k] != want[k] {
			return false, state
		}
	}
	return true, state
}

func equal(a, b interface{}) bool {
	x, _ := a.(*logState)
	y, _ := b.(*logState)
	for x != y {
		if x == nil || y == nil || x.h != y.h || x.n != y.n || x.off != y.off || x.val != y.val {
			return false
		}
		x, y = x.prev, y.prev
	}
	return true
}

var logModel = porcupine.Model{
	Init:  func() interface{} { return (*logState)(nil) },
	Step:  step,
	Equal: equal,
	Hash: func(s interface{}) uint64 {
		if x, _ := s.(*logState); x != nil {
			return x.h
		}
		return 0
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		if !i.read {
			tag := ""
			if o.open {
				tag = " (unknown; seen by a read)"
			}
			return fmt.Sprintf("append(%s) on node %d -> %d%s", i.value, i.node+1, o.offset, tag)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "read[%d,%d) on node %d complete=%v ->", i.from, o.upto, i.node+1, o.complete)
		for k, r := range o.records {
			if k == 8 {
				fmt.Fprintf(&b, " ... %d more", len(o.records)-8)
				break
			}
			fmt.Fprintf(&b, " %d:%s", r.Offset, r.Value)
		}
		return b.String()
	},
	DescribeState: func(state interface{}) string {
		s, _ := state.(*logState)
		if s == nil {
			return "[]"
		}
		var parts []string
		for e := s; e != nil && len(parts) < 6; e = e.prev {
			parts = append([]string{fmt.Sprintf("%d:%s", e.off, e.val)}, parts...)
		}
		return fmt.Sprintf("%d records, last: %s", s.n, strings.Join(parts, " "))
	},
}

// Fault is one line of the nemesis log (an annotation on the visualisation).
type Fault struct {
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	What  string `json:"what"`
}

type report struct {
	Result        string   `json:"result"`
	Operations    int      `json:"operations"`
	AppendsOK     int      `json:"appends_ok"`
	AppendsOpen   int      `json:"appends_unknown_seen"`
	AppendsMaybe  int      `json:"appends_unknown_unseen"`
	AppendsFailed int      `json:"appends_failed"`
	ReadsOK       int      `json:"reads_ok"`
	ReadsFailed   int      `json:"reads_failed"`
	Violations    []string `json:"violations"`
	Stuck         []string `json:"not_linearizable_after,omitempty"`
	Visualization string   `json:"visualization,omitempty"`
	CheckSeconds  float64  `json:"check_seconds"`
}

func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func check(args []string) int {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	historyPath := fs.String("history", "history.jsonl", "the clients' history")
	faultsPath := fs.String("faults", "", "the nemesis log (annotations), optional")
	html := fs.String("html", "porcupine.html", "where the visualisation goes on a violation")
	timeout := fs.Duration("timeout", 120*time.Second, "porcupine's time limit")
	_ = fs.Parse(args)
	history, err := readLines[Op](*historyPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "history:", err)
		return 2
	}
	rep := report{Violations: []string{}}
	seenAt := map[string]int64{}
	for _, op := range history {
		if op.F == "read" && op.Type == "ok" {
			for _, r := range op.Records {
				if _, ok := seenAt[r.Value]; !ok {
					seenAt[r.Value] = r.Offset
				}
			}
		}
	}
	appended := map[string]string{}
	var ops []porcupine.Operation
	var lastReturn int64
	for _, op := range history {
		lastReturn = max(lastReturn, op.Return)
	}
	for _, op := range history {
		switch {
		case op.F == "append":
			appended[op.Value] = op.Type
			at, seen := seenAt[op.Value]
			switch op.Type {
			case "ok":
				rep.AppendsOK++
				ops = append(ops, porcupine.Operation{ClientId: op.Process, Input: input{value: op.Value, node: op.Node},
					Call: op.Call, Output: output{offset: op.Offset}, Return: op.Return})
			case "info":
				if !seen {
					rep.AppendsMaybe++
					continue
				}
				rep.AppendsOpen++
				ops = append(ops, porcupine.Operation{ClientId: op.Process, Input: input{value: op.Value, node: op.Node},
					Call: op.Call, Output: output{offset: at, open: true}, Return: lastReturn + 1})
			default:
				rep.AppendsFailed++
				if seen {
					rep.Violations = append(rep.Violations,
						fmt.Sprintf("append %s was never sent (%s) but was read at offset %d", op.Value, op.Error, at))
				}
			}
		case op.Type == "ok":
			rep.ReadsOK++
			ops = append(ops, porcupine.Operation{ClientId: op.Process, Input: input{read: true, from: op.From, node: op.Node},
				Call: op.Call, Output: output{upto: op.Upto, complete: op.Complete, records: op.Records}, Return: op.Return})
		default:
			rep.ReadsFailed++
		}
	}
	for v, at := range seenAt {
		if _, ok := appended[v]; !ok {
			rep.Violations = append(rep.Violations, fmt.Sprintf("read %q at offset %d, which no client appended", v, at))
		}
	}
	rep.Operations = len(ops)
	t0 := time.Now()
	res, info := porcupine.CheckOperationsVerbose(logModel, ops, *timeout)
	rep.CheckSeconds = math.Round(time.Since(t0).Seconds()*100) / 100
	rep.Result = string(res)
	if res == porcupine.Illegal {
		rep.Violations = append(rep.Violations, "porcupine: the history is not linearizable (see the visualisation)")
		rep.Stuck = stuckAt(info, ops)
	}
	if res != porcupine.Ok || len(rep.Violations) > 0 {
		if *faultsPath != "" {
			if faults, err := readLines[Fault](*faultsPath); err == nil {
				var notes []porcupine.Annotation
				for _, f := range faults {
					notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: f.Start, End: f.End,
						Description: f.What, BackgroundColor: "#f6d7a7"})
				}
				info.AddAnnotations(notes)
			}
		}
		if err := porcupine.VisualizePath(logModel, info, *html); err == nil {
			rep.Visualization = *html
		} else {
			fmt.Fprintln(os.Stderr, "visualisation:", err)
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	switch {
	case len(rep.Violations) > 0:
		return 1
	case res != porcupine.Ok:
		return 3 // porcupine timed out: no verdict
	}
	return 0
}

// stuckAt names where porcupine's longest linearization stops: the last operations it could
// place, then the earliest-returning operations it could not (one of them is the culprit).
func stuckAt(info porcupine.LinearizationInfo, ops []porcupine.Operation) []string {
	parts := info.PartialLinearizations()
	if len(parts) == 0 {
		return nil
	}
	var best []int
	for _, p := range parts[0] {
		if len(p) > len(best) {
			best = p
		}
	}
	placed := make(map[int]bool, len(best))
	for _, i := range best {
		placed[i] = true
	}
	describe := func(tag string, i int) string {
		op := ops[i]
		return fmt.Sprintf("%s: client %d [%d..%d] %s", tag, op.ClientId, op.Call, op.Return,
			logModel.DescribeOperation(op.Input, op.Output))
	}
	var out []string
	for _, i := range best[max(0, len(best)-3):] {
		out = append(out, describe("placed", i))
	}
	var left []int
	for i := range ops {
		if !placed[i] {
			left = append(left, i)
		}
	}
	sort.Slice(left, func(a, b int) bool { return ops[left[a]].Return < ops[left[b]].Return })
	for _, i := range left[:min(3, len(left))] {
		out = append(out, describe("cannot place", i))
	}
	return out
}
