package main

import (
	"math/rand"
	"testing"
)

// The hold decisions: the share held, the bounds, and the same seed giving the same run.
func TestHolderHoldsItsShareWithinItsBounds(t *testing.T) {
	decide := func(seed int64) ([]int, *holder) {
		h := &holder{rng: rand.New(rand.NewSource(seed)), share: 30, minMs: 20, maxMs: 100}
		var out []int
		for i := 0; i < 10000; i++ {
			d, hold := h.decide()
			if !hold {
				if d != 0 {
					t.Fatalf("a packet passed at once with a hold of %v", d)
				}
				out = append(out, -1)
				continue
			}
			ms := int(d.Milliseconds())
			if ms < 20 || ms > 100 {
				t.Fatalf("hold %d ms outside [20, 100]", ms)
			}
			out = append(out, ms)
		}
		return out, h
	}
	a, h := decide(7)
	if h.held+h.passed != 10000 || h.held < 2700 || h.held > 3300 {
		t.Fatalf("held %d of %d, want about 30%%", h.held, h.held+h.passed)
	}
	if h.longestHeldMs < 95 {
		t.Fatalf("longest hold %d ms: the range is not used", h.longestHeldMs)
	}
	b, _ := decide(7)
	c, _ := decide(8)
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
	}
	if !same || !differ {
		t.Fatalf("same seed same decisions: %v; another seed differs: %v", same, differ)
	}
}
