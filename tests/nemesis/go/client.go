// The workload: closed-loop clients appending unique values (Produce acks=-1) and reading
// the committed log back (Fetch up to the high watermark) against every node, recording each
// operation as Jepsen does: invoke and complete times, and the outcome ok, fail (certainly
// not applied: the request was never sent) or info (unknown: the answer was lost or was an
// error after which the append may still commit). Values are never retried, so each value is
// appended at most once by the client.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Op is one line of the history file.
type Op struct {
	Process  int      `json:"process"`
	F        string   `json:"f"` // append | read
	Type     string   `json:"type"`
	Value    string   `json:"value,omitempty"`
	Node     int      `json:"node"`
	Call     int64    `json:"call"`   // unix ns
	Return   int64    `json:"return"` // unix ns
	Offset   int64    `json:"offset"`
	From     int64    `json:"from"`
	Upto     int64    `json:"upto"`
	Complete bool     `json:"complete"`
	HW       int64    `json:"hw"`
	Records  []Record `json:"records,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// The Produce TimeoutMs: short, so a client stuck on a deposed leader moves on quickly.
const appendTimeoutMs = 1000

var (
	wallStart = time.Now()
	maxHW     atomic.Int64
)

// now is wall-clock ns that never goes backwards within this process (monotonic reading).
func now() int64 { return wallStart.UnixNano() + int64(time.Since(wallStart)) }

type conns struct {
	eps []string
	c   []net.Conn
	cid int32
}

func (cs *conns) get(i int) (net.Conn, error) {
	if cs.c[i] != nil {
		return cs.c[i], nil
	}
	c, err := net.DialTimeout("tcp", cs.eps[i], time.Second)
	if err != nil {
		return nil, err
	}
	cs.c[i] = c
	return c, nil
}

func (cs *conns) drop(i int) {
	if cs.c[i] != nil {
		cs.c[i].Close()
		cs.c[i] = nil
	}
}

func doAppend(cs *conns, node int, value string, op *Op) {
	conn, err := cs.get(node)
	if err != nil {
		op.Type, op.Error = "fail", "connect: "+short(err)
		return
	}
	cs.cid++
	d, err := roundTrip(conn, produceRequest(cs.cid, []byte(value), appendTimeoutMs), cs.cid, time.Now().Add(3*time.Second))
	if err != nil {
		cs.drop(node)
		op.Type, op.Error = "info", short(err)
		return
	}
	code, base, err := produceAnswer(d)
	switch {
	case err != nil:
		cs.drop(node)
		op.Type, op.Error = "info", short(err)
	case code != 0:
		// NOT_LEADER_OR_FOLLOWER can come after the append reached a leader's log
		// (leadership lost while in flight) and REQUEST_TIMED_OUT may commit later.
		op.Type, op.Error = "info", fmt.Sprintf("error code %d", code)
	default:
		op.Type, op.Offset = "ok", base
	}
}

func doRead(cs *conns, node int, window int64, op *Op) {
	conn, err := cs.get(node)
	if err != nil {
		op.Type, op.Error = "fail", "connect: "+short(err)
		return
	}
	from := maxHW.Load() - window
	if from < 0 {
		from = 0
	}
	op.From = from
	cs.cid++
	d, err := roundTrip(conn, fetchRequest(cs.cid, from), cs.cid, time.Now().Add(3*time.Second))
	if err != nil {
		cs.drop(node)
		op.Type, op.Error = "fail", short(err) // a read changes nothing: dropped by the checker
		return
	}
	code, hw, recs, end, err := fetchAnswer(d)
	if err != nil || code != 0 || hw < 0 {
		if err != nil {
			cs.drop(node)
			op.Error = short(err)
		} else {
			op.Error = fmt.Sprintf("error code %d hw %d", code, hw)
		}
		op.Type = "fail"
		return
	}
	op.Type, op.HW, op.Records = "ok", hw, recs
	// What the answer covers: [from, hw) when its whole batches reach the HW (or there is
	// nothing below the HW to read), else [from, end of the last batch) only.
	switch {
	case from >= hw: // nothing to read; still: nothing is committed at or above hw
		op.Upto, op.Complete = hw, true
	case end == hw:
		op.Upto, op.Complete = hw, true
	case end > from:
		op.Upto = end
	default:
		op.Upto = from
	}
	for {
		cur := maxHW.Load()
		if hw <= cur || maxHW.CompareAndSwap(cur, hw) {
			break
		}
	}
}

func short(err error) string {
	var ne net.Error
	msg := err.Error()
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(msg, "refused"):
		return "connection refused"
	case strings.Contains(msg, "reset"), strings.Contains(msg, "EOF"), strings.Contains(msg, "broken pipe"):
		return "connection lost"
	}
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return msg
}

func runClients(args []string) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	eps := fs.String("endpoints", "", "host:port of node 1, node 2, ...")
	clients := fs.Int("clients", 6, "concurrent closed-loop clients")
	duration := fs.Duration("duration", 30*time.Second, "how long to run")
	out := fs.String("out", "history.jsonl", "history file (one JSON operation a line)")
	readFrac := fs.Float64("reads", 0.4, "fraction of operations that are reads")
	window := fs.Int64("window", 40, "a read starts this many offsets below the highest HW seen")
	seed := fs.Int64("seed", 1, "the clients' random choices")
	_ = fs.Parse(args)
	endpoints := strings.Split(*eps, ",")
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(f)
	end := time.Now().Add(*duration)
	// SIGTERM or SIGINT ends the run early and cleanly: no new operation starts, the ones in
	// flight complete and are recorded, the history is closed (a caller whose schedule ended
	// before the duration stops the clients without losing their last operations)
	var stopping atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		stopping.Store(true)
	}()
	counts := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed*1000 + int64(w)))
			cs := &conns{eps: endpoints, c: make([]net.Conn, len(endpoints))}
			target := w % len(endpoints)
			for seq := 0; time.Now().Before(end) && !stopping.Load(); seq++ {
				op := Op{Process: w, Call: now()}
				if rng.Float64() < *readFrac {
					op.F, op.Node = "read", target // the node that last took an append, mostly
					if rng.Float64() < 0.3 {
						op.Node = rng.Intn(len(endpoints))
					}
					doRead(cs, op.Node, *window, &op)
				} else {
					op.F, op.Node, op.Value = "append", target, fmt.Sprintf("c%d-%d", w, seq)
					doAppend(cs, target, op.Value, &op)
					if op.Type != "ok" {
						target = rng.Intn(len(endpoints))
					}
				}
				op.Return = now()
				if op.Type != "ok" {
					time.Sleep(time.Duration(5+rng.Intn(20)) * time.Millisecond)
				}
				mu.Lock()
				_ = enc.Encode(op)
				counts[op.F+" "+op.Type]++
				mu.Unlock()
			}
			for i := range cs.c {
				cs.drop(i)
			}
		}(w)
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(counts)
}
