// Command goload is the closed-loop load generator of the side-by-side benchmark (bench/).
//
// Role: N clients, each with its own connection, each sending one 100-byte write at a time
// and waiting for the committed answer before the next (closed loop). One design for every
// system that takes client writes over the network:
//   - mode "produce": metaquorum through Kafka's Produce v9 (acks=-1, answered on commit);
//     the request frame is built by the Python harness with our codec (-template), the client
//     patches only the correlation id; a NOT_LEADER_OR_FOLLOWER or a lost connection moves
//     the client to the next endpoint.
//     With -tls-ca (tls.go) the connections are TLS, mutual with -tls-cert.
//   - mode "etcd": etcd's gRPC KV Put through the official clientv3 (one client per worker).
//
// Output: one JSON object on stdout with the ops counted in the measurement window (after
// -warmup), latency percentiles and a CDF, and the generator's own CPU seconds (so a reader can
// see that the client is not the bottleneck). With -events, every commit answered with a raft
// term higher than any seen before (etcd) is printed as "term T UNIX_NS" while it runs (the
// failover probe).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type result struct {
	Mode      string           `json:"mode"`
	Clients   int              `json:"clients"`
	Ops       int              `json:"ops"`
	Errors    int64            `json:"errors"`
	ErrorKind map[string]int64 `json:"error_kinds"`
	ElapsedS  float64          `json:"elapsed_s"`
	OpsPerS   float64          `json:"ops_per_s"`
	P50Ms     float64          `json:"p50_ms"`
	P99Ms     float64          `json:"p99_ms"`
	P999Ms    float64          `json:"p999_ms"`
	MaxMs     float64          `json:"max_ms"`
	CDF       [][]float64      `json:"cdf"`
	ClientCPU float64          `json:"client_cpu_s"`
	ServerCPU float64          `json:"server_cpu_s"`
}

type worker func(ctx context.Context, id int) (time.Duration, error)

var (
	maxTerm   atomic.Int64
	eventsOut = false
	eventsMu  sync.Mutex
)

func noteTerm(term int64) {
	for {
		cur := maxTerm.Load()
		if term <= cur {
			return
		}
		if maxTerm.CompareAndSwap(cur, term) {
			if eventsOut && cur > 0 {
				eventsMu.Lock()
				fmt.Fprintf(os.Stderr, "term %d %d\n", term, time.Now().UnixNano())
				eventsMu.Unlock()
			}
			return
		}
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

var (
	kindsMu sync.Mutex
	kinds   = map[string]int64{}
)

// noteError counts an error by a short kind (so a report can say what failed).
func noteError(err error) {
	msg := err.Error()
	kind := msg
	switch {
	case strings.Contains(msg, "error code"):
		kind = msg
	case strings.Contains(msg, "timeout"), strings.Contains(msg, "deadline"):
		kind = "timeout"
	case strings.Contains(msg, "refused"):
		kind = "connection refused"
	case strings.Contains(msg, "reset"), strings.Contains(msg, "EOF"), strings.Contains(msg, "broken pipe"):
		kind = "connection lost"
	}
	if len(kind) > 60 {
		kind = kind[:60]
	}
	kindsMu.Lock()
	kinds[kind]++
	kindsMu.Unlock()
}

// procCPU sums user+system seconds of the given processes (all threads) from /proc.
func procCPU(pids []int) float64 {
	total := 0.0
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
		var ut, st float64
		fmt.Sscan(f[11], &ut)
		fmt.Sscan(f[12], &st)
		total += (ut + st) / 100 // USER_HZ is 100 on Linux
	}
	return total
}

// ---- Produce v9 (metaquorum) ------------------------------------------------------------

type produceConn struct {
	endpoints []string
	idx       int
	conn      net.Conn
	frame     []byte
	buf       []byte
	cid       uint32
}

func (p *produceConn) reconnect() {
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
	p.idx = (p.idx + 1) % len(p.endpoints)
}

func uvarint(b []byte, pos int) (uint64, int, error) {
	v, n := binary.Uvarint(b[pos:])
	if n <= 0 {
		return 0, pos, errors.New("bad varint")
	}
	return v, pos + n, nil
}

// errorCode reads the first partition's ErrorCode of a Produce v9 response body
// (after the size and correlation id; response header v1 has a tag buffer).
func errorCode(b []byte) (int16, error) {
	pos := 4 // correlation id
	ntags, pos, err := uvarint(b, pos)
	if err != nil || ntags != 0 {
		return 0, errors.New("unexpected header tags")
	}
	if _, pos, err = uvarint(b, pos); err != nil { // topics array
		return 0, err
	}
	nameLen, pos, err := uvarint(b, pos)
	if err != nil || nameLen == 0 {
		return 0, errors.New("bad topic name")
	}
	pos += int(nameLen - 1)
	if _, pos, err = uvarint(b, pos); err != nil { // partitions array
		return 0, err
	}
	pos += 4 // index
	if pos+2 > len(b) {
		return 0, errors.New("short response")
	}
	return int16(binary.BigEndian.Uint16(b[pos:])), nil
}

func (p *produceConn) once(timeout time.Duration) error {
	if p.conn == nil {
		c, err := dial(p.endpoints[p.idx])
		if err != nil {
			p.reconnect()
			time.Sleep(5 * time.Millisecond)
			return err
		}
		p.conn = c
	}
	p.cid++
	binary.BigEndian.PutUint32(p.frame[8:12], p.cid)
	_ = p.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := p.conn.Write(p.frame); err != nil {
		p.reconnect()
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(p.conn, size[:]); err != nil {
		p.reconnect()
		return err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n > 1<<20 {
		p.reconnect()
		return errors.New("oversized response")
	}
	if cap(p.buf) < n {
		p.buf = make([]byte, n)
	}
	body := p.buf[:n]
	if _, err := io.ReadFull(p.conn, body); err != nil {
		p.reconnect()
		return err
	}
	if binary.BigEndian.Uint32(body[:4]) != p.cid {
		p.reconnect()
		return errors.New("correlation id mismatch")
	}
	code, err := errorCode(body)
	if err != nil {
		p.reconnect()
		return err
	}
	if code != 0 {
		if code == 6 || code == 7 { // NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT
			p.reconnect()
			time.Sleep(2 * time.Millisecond)
		}
		return fmt.Errorf("error code %d", code)
	}
	return nil
}

func produceWorkers(endpoints []string, template []byte, clients int) []worker {
	ws := make([]worker, clients)
	for i := range ws {
		frame := make([]byte, len(template))
		copy(frame, template)
		pc := &produceConn{endpoints: endpoints, idx: 0, frame: frame}
		// Connect now, one at a time, so a burst of 1,024 connects cannot overflow the
		// server's listen backlog and count as write errors.
		if c, err := dial(endpoints[0]); err == nil {
			pc.conn = c
		}
		ws[i] = func(ctx context.Context, id int) (time.Duration, error) {
			t0 := time.Now()
			err := pc.once(15 * time.Second)
			return time.Since(t0), err
		}
	}
	return ws
}

// ---- etcd -------------------------------------------------------------------------------

func etcdWorkers(endpoints []string, clients, conns, size int) ([]worker, func()) {
	value := strings.Repeat("x", size)
	ws := make([]worker, clients)
	if conns > clients {
		conns = clients
	}
	// As etcd's own benchmark (--conns, --clients): workers share `conns` gRPC clients,
	// spread over the members (followers forward proposals to the leader).
	var cs []*clientv3.Client
	for j := 0; j < conns; j++ {
		eps := append([]string{endpoints[j%len(endpoints)]}, endpoints...)
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcd client:", err)
			os.Exit(1)
		}
		cs = append(cs, cli)
	}
	for i := range ws {
		cli := cs[i%conns]
		key := fmt.Sprintf("bench/%d", i)
		ws[i] = func(ctx context.Context, id int) (time.Duration, error) {
			t0 := time.Now()
			c, cancel := context.WithTimeout(ctx, 15*time.Second)
			r, err := cli.Put(c, key, value)
			cancel()
			d := time.Since(t0)
			if err == nil {
				noteTerm(int64(r.Header.RaftTerm))
			}
			return d, err
		}
	}
	return ws, func() {
		for _, c := range cs {
			c.Close()
		}
	}
}

// ---- driver -----------------------------------------------------------------------------

func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}

func main() {
	mode := flag.String("mode", "produce", "produce | etcd")
	eps := flag.String("endpoints", "", "host:port,... (the leader first for produce)")
	clients := flag.Int("clients", 1, "concurrent closed-loop clients")
	duration := flag.Duration("duration", 10*time.Second, "measurement window")
	warmup := flag.Duration("warmup", 2*time.Second, "load before the window (not counted)")
	size := flag.Int("size", 100, "value bytes (etcd)")
	conns := flag.Int("conns", 100, "gRPC connections shared by the clients (etcd)")
	templatePath := flag.String("template", "", "Produce request frame (produce)")
	pidList := flag.String("pids", "", "server process ids whose CPU to measure over the window")
	events := flag.Bool("events", false, "print new raft terms seen on stderr (etcd)")
	tlsCA := flag.String("tls-ca", "", "produce over TLS: PEM CA certificates to trust")
	tlsCert := flag.String("tls-cert", "", "client certificate chain PEM (mutual TLS)")
	tlsKey := flag.String("tls-key", "", "its private key PEM (default: -tls-cert)")
	flag.Parse()
	if *tlsCA != "" {
		cfg, err := loadTLS(*tlsCA, *tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goload: TLS:", err)
			os.Exit(1)
		}
		tlsConfig = cfg
	}
	eventsOut = *events
	endpoints := strings.Split(*eps, ",")
	var pids []int
	for _, f := range strings.Split(*pidList, ",") {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	var ws []worker
	closeAll := func() {}
	switch *mode {
	case "produce":
		template, err := os.ReadFile(*templatePath)
		if err != nil || len(template) < 12 {
			fmt.Fprintln(os.Stderr, "goload: -template must name a Produce request frame")
			os.Exit(1)
		}
		ws = produceWorkers(endpoints, template, *clients)
	case "etcd":
		ws, closeAll = etcdWorkers(endpoints, *clients, *conns, *size)
	default:
		fmt.Fprintln(os.Stderr, "goload: -mode is produce or etcd")
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	measureFrom := start.Add(*warmup)
	end := measureFrom.Add(*duration)
	var errCount atomic.Int64
	lat := make([][]time.Duration, len(ws))
	var wg sync.WaitGroup
	// CPU (ours and the servers') over exactly the measurement window.
	var cpu0, srv0, cpu1, srv1 float64
	cpuDone := make(chan struct{})
	go func() {
		time.Sleep(time.Until(measureFrom))
		cpu0, srv0 = cpuSeconds(), procCPU(pids)
		time.Sleep(time.Until(end))
		cpu1, srv1 = cpuSeconds(), procCPU(pids)
		close(cpuDone)
	}()
	for i, w := range ws {
		wg.Add(1)
		go func(i int, w worker) {
			defer wg.Done()
			for {
				now := time.Now()
				if now.After(end) {
					return
				}
				d, err := w(ctx, i)
				done := time.Now()
				if err != nil {
					if !now.Before(measureFrom) {
						errCount.Add(1)
						noteError(err)
					}
					continue
				}
				if !now.Before(measureFrom) && !done.After(end) {
					lat[i] = append(lat[i], d)
				}
			}
		}(i, w)
	}
	wg.Wait()
	cancel()
	<-cpuDone
	closeAll()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	elapsed := duration.Seconds()
	r := result{
		Mode: *mode, Clients: *clients, Ops: len(all), Errors: errCount.Load(), ErrorKind: kinds,
		ElapsedS: elapsed,
		OpsPerS:  float64(len(all)) / elapsed,
		P50Ms:    percentile(all, 0.50), P99Ms: percentile(all, 0.99), P999Ms: percentile(all, 0.999),
		ClientCPU: cpu1 - cpu0, ServerCPU: srv1 - srv0,
	}
	if len(all) > 0 {
		r.MaxMs = float64(all[len(all)-1].Microseconds()) / 1000
	}
	for i := 0; i <= 100; i++ {
		q := float64(i) / 100
		r.CDF = append(r.CDF, []float64{percentile(all, q), q})
	}
	for _, q := range []float64{0.995, 0.999, 0.9995, 0.9999} {
		r.CDF = append(r.CDF, []float64{percentile(all, q), q})
	}
	sort.Slice(r.CDF, func(a, b int) bool { return r.CDF[a][1] < r.CDF[b][1] })
	_ = json.NewEncoder(os.Stdout).Encode(r)
}
