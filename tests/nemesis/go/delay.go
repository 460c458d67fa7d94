// `mqnemesis delay`: the delay and reorder faults, where the kernel has no sch_netem. An
// nftables rule in a node's network namespace (`queue num N bypass`, tests/nemesis/netns.py)
// hands that node's packets to the other nodes to NFQUEUE N; this program, bound to the queue
// in the same namespace, holds a seeded share of them for a random time in [min, max] ms and
// accepts them when it runs out, so held packets leave after later ones (reordering) and every
// held packet is late (delay). The rest are accepted at once.
//
// Invariants: every queued packet gets exactly one verdict, ACCEPT (nothing is dropped here:
// loss is its own fault); on SIGTERM every held packet is accepted at once before exit; the
// queue fails open (a full queue lets packets through), and the rule's `bypass` lets them
// through when no program is bound. Prints "ready" once bound, and one summary line on exit.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue"
	"github.com/mdlayher/netlink"
)

// holder decides, per packet, whether and how long to hold it (seeded: the same seed and
// packet sequence give the same decisions).
type holder struct {
	rng           *rand.Rand
	share         int // percent of packets held
	minMs, maxMs  int
	held, passed  int
	longestHeldMs int
}

func (h *holder) decide() (time.Duration, bool) {
	if h.rng.Intn(100) >= h.share {
		h.passed++
		return 0, false
	}
	ms := h.minMs + h.rng.Intn(h.maxMs-h.minMs+1)
	h.held++
	if ms > h.longestHeldMs {
		h.longestHeldMs = ms
	}
	return time.Duration(ms) * time.Millisecond, true
}

func delayPackets(args []string) int {
	fs := flag.NewFlagSet("delay", flag.ExitOnError)
	queue := fs.Uint("queue", 0, "NFQUEUE number the nftables rule queues to")
	minMs := fs.Int("min-ms", 50, "shortest hold (ms)")
	maxMs := fs.Int("max-ms", 150, "longest hold (ms)")
	share := fs.Int("share", 100, "percent of the queued packets held; the rest pass at once")
	seed := fs.Int64("seed", 1, "seed of the hold decisions")
	_ = fs.Parse(args)
	if *minMs < 0 || *maxMs < *minMs || *share < 0 || *share > 100 {
		fmt.Fprintln(os.Stderr, "delay: need 0 <= min-ms <= max-ms and 0 <= share <= 100")
		return 2
	}
	nf, err := nfqueue.Open(&nfqueue.Config{
		NfQueue:      uint16(*queue),
		MaxPacketLen: 64, // only the id is needed
		MaxQueueLen:  8192,
		Copymode:     nfqueue.NfQnlCopyPacket,
		Flags:        nfqueue.NfQaCfgFlagFailOpen,
		WriteTimeout: 100 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "delay: open nfqueue:", err)
		return 1
	}
	defer nf.Close()
	if err := nf.SetOption(netlink.NoENOBUFS, true); err != nil {
		fmt.Fprintln(os.Stderr, "delay: NoENOBUFS:", err)
		return 1
	}
	h := &holder{rng: rand.New(rand.NewSource(*seed)), share: *share, minMs: *minMs, maxMs: *maxMs}
	var mu sync.Mutex // one verdict at a time; guards pending and closing
	pending := map[uint32]*time.Timer{}
	closing := false
	accept := func(id uint32) {
		if err := nf.SetVerdict(id, nfqueue.NfAccept); err != nil {
			fmt.Fprintln(os.Stderr, "delay: verdict:", err)
		}
	}
	release := func(id uint32) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := pending[id]; ok {
			delete(pending, id)
			accept(id)
		}
	}
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		id := *a.PacketID
		mu.Lock()
		defer mu.Unlock()
		d, hold := h.decide()
		if !hold || closing {
			accept(id)
			return 0
		}
		pending[id] = time.AfterFunc(d, func() { release(id) })
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onErr := func(e error) int {
		if ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "delay: nfqueue:", e)
		}
		return 0 // keep reading
	}
	if err := nf.RegisterWithErrorFunc(ctx, hook, onErr); err != nil {
		fmt.Fprintln(os.Stderr, "delay: register:", err)
		return 1
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	mu.Lock()
	closing = true
	for id, t := range pending {
		t.Stop()
		accept(id)
	}
	pending = map[uint32]*time.Timer{}
	held, passed, longest := h.held, h.passed, h.longestHeldMs
	mu.Unlock()
	cancel()
	fmt.Fprintf(os.Stderr, "delay: %d packets held (longest %d ms), %d passed at once\n",
		held, longest, passed)
	return 0
}
