//go:build verifyfault

package main

import (
	"fmt"
	"io"

	"github.com/petrelmq/petrel/internal/faults"
)

// testFaultsLine is what `petrel version` prints in a binary built with the
// tag verifyfault; `petrel verify` looks for its prefix "test faults: built
// in" before it offers slow-disk.
const testFaultsLine = "test faults: built in (" + faults.EnvVar + "=" + faults.NameLoseAck + "=N," + faults.NameReorder + "," +
	faults.NameSlowDisk + "=D; SIGUSR1 switches slow-disk on, SIGUSR2 off)"

// printTestFaults tells that this binary has the test-only faults.
func printTestFaults(w io.Writer) { fmt.Fprintln(w, testFaultsLine) }
