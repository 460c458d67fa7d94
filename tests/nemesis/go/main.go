// Command mqnemesis is the Go side of the nemesis tier (tests/nemesis): `run` drives the
// clients and writes the operation history; `check` checks a history for linearizability with
// porcupine against a model of the append-only log, and writes porcupine's HTML
// visualisation when it is not linearizable; `delay` holds a node's queued packets (the delay
// and reorder faults, delay.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mqnemesis run|check|delay [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		runClients(os.Args[2:])
	case "check":
		os.Exit(check(os.Args[2:]))
	case "delay":
		os.Exit(delayPackets(os.Args[2:]))
	default:
		fmt.Fprintln(os.Stderr, "usage: mqnemesis run|check|delay [flags]")
		os.Exit(2)
	}
}
